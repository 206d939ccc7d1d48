//! Test hooks: a simulated process death at a point of the protocol
//! (`crash_at`) and deliberate defects (`sabotage`). They exist only in builds
//! with the `testing` feature, which the test suites turn on; elsewhere each
//! hook is a function that does nothing.

#[cfg(feature = "testing")]
use std::sync::atomic::Ordering;

use netcache_domain::vif::VifRecord;
#[cfg(feature = "testing")]
use tracing::warn;

#[cfg(feature = "testing")]
use crate::Error;
use crate::config::CrashPoint as Crash;
use crate::{Compute, Result};

impl Compute {
    /// Stops dead at the configured crash point: this process is dead from here
    /// on, and its node is free for a restart.
    #[cfg(feature = "testing")]
    pub(crate) fn crash_point(&self, point: Crash) -> Result<()> {
        if self.config.crash_at == Some(point) && !self.crashed.swap(true, Ordering::SeqCst) {
            tracing::error!(?point, "Simulated crash");
            self.node_lock.lock().expect("node lock").take();
            return Err(Error::Crashed(point));
        }
        if self.has_crashed() {
            return Err(Error::Crashed(point));
        }
        Ok(())
    }

    /// Without the `testing` feature there is no crash to simulate.
    #[cfg(not(feature = "testing"))]
    #[allow(
        clippy::unused_self,
        clippy::unnecessary_wraps,
        reason = "the testing build's signature"
    )]
    pub(crate) fn crash_point(&self, _point: Crash) -> Result<()> {
        Ok(())
    }

    /// A pass's crash point: only the configured one stops it (a pass still
    /// runs in a process that an operation's simulated death left, as tests
    /// drive it).
    #[cfg(feature = "testing")]
    pub(crate) fn pass_crash_point(&self, point: Crash) -> Result<()> {
        if self.config.crash_at == Some(point) {
            return self.crash_point(point);
        }
        Ok(())
    }

    #[cfg(not(feature = "testing"))]
    #[allow(
        clippy::unused_self,
        clippy::unnecessary_wraps,
        reason = "the testing build's signature"
    )]
    pub(crate) fn pass_crash_point(&self, _point: Crash) -> Result<()> {
        Ok(())
    }

    /// Test hook `sabotage = "skip-release"`: a deliberately broken build whose
    /// releases leak the port.
    #[cfg(feature = "testing")]
    pub(crate) fn sabotages_release(&self, vif: &VifRecord) -> bool {
        let sabotaged = self.config.sabotage == Some(crate::config::Sabotage::SkipRelease);
        if sabotaged {
            warn!(
                server.id = %vif.server_id, port.id = %vif.port_id,
                "Sabotage skip-release: not releasing port {} in Neutron", vif.port_id
            );
        }
        sabotaged
    }

    #[cfg(not(feature = "testing"))]
    #[allow(clippy::unused_self, reason = "the testing build's signature")]
    pub(crate) fn sabotages_release(&self, _vif: &VifRecord) -> bool {
        false
    }
}
