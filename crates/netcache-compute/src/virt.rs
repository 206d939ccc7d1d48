//! The virt driver seam. netcache has no hypervisor: [`FakeVirt`] "spawns" servers
//! and changes their power state, and fails when told to, so reschedules can be forced.

use std::collections::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;
use netcache_domain::HostName;
use netcache_domain::power::PowerAction;
use netcache_domain::server::Server;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::VirtConfig;

#[async_trait]
pub trait VirtDriver: Send + Sync + 'static {
    /// Starts the server on the host; `Err` carries the fault message.
    async fn spawn(&self, host: &HostName, server: &Server) -> Result<(), String>;

    /// Stops, starts, reboots, pauses or suspends the server (or undoes the last
    /// two); `Err` carries the fault message. Asked again after a crash, so doing
    /// it twice must be harmless.
    async fn power(&self, host: &HostName, server: &Server, action: PowerAction) -> Result<(), String>;
}

pub struct FakeVirt {
    failing_hosts: HashSet<HostName>,
    failure_rate: f64,
    rng: Mutex<ChaCha8Rng>,
}

impl FakeVirt {
    #[must_use]
    pub fn new(config: &VirtConfig) -> Self {
        Self {
            failing_hosts: config.failing_hosts.iter().cloned().collect(),
            failure_rate: config.failure_rate,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
        }
    }
}

#[async_trait]
impl VirtDriver for FakeVirt {
    async fn spawn(&self, host: &HostName, _server: &Server) -> Result<(), String> {
        if self.failing_hosts.contains(host) {
            return Err(format!("spawn failed on {host} (injected host failure)"));
        }
        let draw: f64 = self.rng.lock().expect("rng lock").random();
        if draw < self.failure_rate {
            return Err(format!(
                "spawn failed on {host} (injected failure rate {})",
                self.failure_rate
            ));
        }
        Ok(())
    }

    /// A fake guest changes state at once; a failing host refuses.
    async fn power(&self, host: &HostName, _server: &Server, action: PowerAction) -> Result<(), String> {
        if self.failing_hosts.contains(host) {
            return Err(format!("{} failed on {host} (injected host failure)", action.name()));
        }
        Ok(())
    }
}
