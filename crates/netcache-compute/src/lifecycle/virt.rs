//! The virt driver seam. netcache has no hypervisor: [`FakeVirt`] "spawns" servers,
//! changes their power state and re-images them, keeps what each guest printed
//! on its console, and fails when told to, so reschedules can be forced.
//! A console log lives in the process that ran its guest: after a restart, or
//! read through another process, it is empty until the guest boots there again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use netcache_domain::power::PowerAction;
use netcache_domain::server::Server;
use netcache_domain::{HostName, ServerId};
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

    /// Re-images the server's disk with `server.image_ref` and boots it; `Err`
    /// carries the fault message. Asked again after a crash, like `power`.
    async fn rebuild(&self, host: &HostName, server: &Server) -> Result<(), String>;

    /// Destroys the guest of a deleted server, with its console log.
    async fn destroy(&self, host: &HostName, server: &Server);

    /// The guest's console log as the hypervisor holds it (empty when it holds
    /// none, as libvirt answers for a console file not there yet).
    async fn console_log(&self, host: &HostName, server: &Server) -> String;
}

/// What libvirt keeps of a console log (Nova's `MAX_CONSOLE_BYTES`): older
/// lines are dropped.
const MAX_CONSOLE_BYTES: usize = 100 * 1024;

pub struct FakeVirt {
    failing_hosts: HashSet<HostName>,
    failure_rate: f64,
    rng: Mutex<ChaCha8Rng>,
    consoles: Mutex<HashMap<ServerId, Console>>,
}

/// One guest's console: the lines it printed, oldest first, within
/// [`MAX_CONSOLE_BYTES`], and how often it booted.
#[derive(Default)]
struct Console {
    lines: VecDeque<String>,
    bytes: usize,
    boots: u32,
}

impl Console {
    fn print(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > MAX_CONSOLE_BYTES {
            let Some(old) = self.lines.pop_front() else { break };
            self.bytes -= old.len() + 1;
        }
    }

    /// What a guest prints as it boots `server`'s image on `host`.
    fn boot(&mut self, host: &HostName, server: &Server) {
        self.boots += 1;
        let instance = format!("instance-{}", &server.id.to_string()[..8]);
        for line in [
            format!(
                "[boot {}] {instance} on {host}: booting image {}",
                self.boots, server.image_ref
            ),
            format!(
                "Linux version 6.6.0-netcache (fake guest), flavor {}",
                server.flavor_ref
            ),
            format!("cloud-init: hostname is {}", server.name),
            format!("{} login:", server.name),
        ] {
            self.print(line);
        }
    }
}

impl FakeVirt {
    #[must_use]
    pub fn new(config: &VirtConfig) -> Self {
        Self {
            failing_hosts: config.failing_hosts.iter().cloned().collect(),
            failure_rate: config.failure_rate,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            consoles: Mutex::new(HashMap::new()),
        }
    }

    fn refuse_on_failing_host(&self, host: &HostName, what: &str) -> Result<(), String> {
        if self.failing_hosts.contains(host) {
            return Err(format!("{what} failed on {host} (injected host failure)"));
        }
        Ok(())
    }

    fn console(&self, server: &Server, write: impl FnOnce(&mut Console)) {
        write(self.consoles.lock().expect("consoles").entry(server.id).or_default());
    }
}

#[async_trait]
impl VirtDriver for FakeVirt {
    async fn spawn(&self, host: &HostName, server: &Server) -> Result<(), String> {
        self.refuse_on_failing_host(host, "spawn")?;
        let draw: f64 = self.rng.lock().expect("rng lock").random();
        if draw < self.failure_rate {
            return Err(format!(
                "spawn failed on {host} (injected failure rate {})",
                self.failure_rate
            ));
        }
        self.console(server, |c| c.boot(host, server));
        Ok(())
    }

    /// A fake guest changes state at once; a failing host refuses. A paused or
    /// suspended guest prints nothing: only the hypervisor knows.
    async fn power(&self, host: &HostName, server: &Server, action: PowerAction) -> Result<(), String> {
        self.refuse_on_failing_host(host, action.name())?;
        self.console(server, |c| match action {
            PowerAction::Stop => c.print("reboot: Power down".to_owned()),
            PowerAction::Start | PowerAction::Reboot { hard: true } => c.boot(host, server),
            PowerAction::Reboot { hard: false } => {
                c.print("reboot: Restarting system".to_owned());
                c.boot(host, server);
            }
            // The rescue image boots in a guest of its own; unrescue boots the disk again.
            PowerAction::Rescue => {
                c.print("reboot: Power down (rescue)".to_owned());
                c.print(format!(
                    "[rescue] instance-{} on {host}: booting the rescue image",
                    &server.id.to_string()[..8]
                ));
            }
            PowerAction::Unrescue => {
                c.print("reboot: Power down (unrescue)".to_owned());
                c.boot(host, server);
            }
            PowerAction::Pause
            | PowerAction::Unpause
            | PowerAction::Suspend
            | PowerAction::Resume
            | PowerAction::ChangePassword => {}
        });
        Ok(())
    }

    async fn rebuild(&self, host: &HostName, server: &Server) -> Result<(), String> {
        self.refuse_on_failing_host(host, "rebuild")?;
        self.console(server, |c| {
            c.print(format!(
                "reboot: Power down (rebuilding with image {})",
                server.image_ref
            ));
            c.boot(host, server);
        });
        Ok(())
    }

    async fn destroy(&self, _host: &HostName, server: &Server) {
        self.consoles.lock().expect("consoles").remove(&server.id);
    }

    async fn console_log(&self, _host: &HostName, server: &Server) -> String {
        self.consoles
            .lock()
            .expect("consoles")
            .get(&server.id)
            .map(|c| {
                c.lines.iter().fold(String::with_capacity(c.bytes), |mut log, line| {
                    log.push_str(line);
                    log.push('\n');
                    log
                })
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use netcache_domain::fixtures;
    use netcache_domain::server::VmState;

    use super::*;

    fn server() -> Server {
        Server {
            id: "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01".parse().unwrap(),
            name: "web".into(),
            vm_state: VmState::Active,
            task_state: None,
            image_ref: "img-1".into(),
            generation: 0,
            ..fixtures::server()
        }
    }

    #[tokio::test]
    async fn the_console_records_each_boot_and_power_change_of_its_guest() {
        let virt = FakeVirt::new(&VirtConfig::default());
        let (host, server) = (HostName::from("h1"), server());
        assert_eq!(virt.console_log(&host, &server).await, "", "no guest yet");
        virt.spawn(&host, &server).await.unwrap();
        virt.power(&host, &server, PowerAction::Pause).await.unwrap();
        virt.power(&host, &server, PowerAction::Stop).await.unwrap();
        let rebuilt = Server {
            image_ref: "img-2".into(),
            ..server.clone()
        };
        virt.rebuild(&host, &rebuilt).await.unwrap();
        let log = virt.console_log(&host, &server).await;
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 10, "{log}");
        assert_eq!(lines[0], "[boot 1] instance-3f4e6a0c on h1: booting image img-1");
        assert_eq!(lines[3], "web login:");
        assert_eq!(lines[4], "reboot: Power down");
        assert_eq!(lines[6], "[boot 2] instance-3f4e6a0c on h1: booting image img-2");
        virt.destroy(&host, &server).await;
        assert_eq!(virt.console_log(&host, &server).await, "");
    }

    #[tokio::test]
    async fn a_console_keeps_only_its_last_100_kib() {
        let virt = FakeVirt::new(&VirtConfig::default());
        let (host, server) = (HostName::from("h1"), server());
        for _ in 0..2000 {
            virt.power(&host, &server, PowerAction::Reboot { hard: false })
                .await
                .unwrap();
        }
        let log = virt.console_log(&host, &server).await;
        assert!(log.len() <= MAX_CONSOLE_BYTES, "{}", log.len());
        assert!(log.ends_with("web login:\n"));
        assert!(log.contains("[boot 2000]") && !log.contains("[boot 1]"));
    }

    #[tokio::test]
    async fn a_failing_host_refuses_and_the_guest_prints_nothing() {
        let virt = FakeVirt::new(&VirtConfig {
            failing_hosts: vec![HostName::from("bad")],
            ..VirtConfig::default()
        });
        let (host, server) = (HostName::from("bad"), server());
        assert!(virt.spawn(&host, &server).await.is_err());
        assert!(virt.rebuild(&host, &server).await.is_err());
        assert_eq!(virt.console_log(&host, &server).await, "");
    }
}
