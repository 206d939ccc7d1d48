//! Test hooks: a simulated process death at a point of the protocol
//! (`crash_at`), deliberate defects (`sabotage`), and holds: a task that
//! reaches a point a test armed waits there until the test lets it go, so the
//! test runs something else exactly inside that window. They exist only in
//! builds with the `testing` feature, which the test suites turn on; elsewhere
//! each hook is a function that does nothing.

#[cfg(feature = "testing")]
use std::collections::HashMap;
#[cfg(feature = "testing")]
use std::sync::{Arc, Mutex};

#[cfg(feature = "testing")]
use std::sync::atomic::Ordering;

use netcache_domain::operation::Operation;
use netcache_domain::vif::VifRecord;
#[cfg(feature = "testing")]
use tracing::warn;

#[cfg(feature = "testing")]
use crate::Error;
use crate::config::CrashPoint as Crash;
use crate::{Compute, Result};

/// Points where a test can hold a task of this process ([`Compute::hold_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HoldPoint {
    /// An event found a port of its server lost and has not committed that yet.
    EventLostMark,
    /// A placement in a server group was decided from a read of its members
    /// and is not recorded yet (a boot being accepted, or a build's next host).
    GroupMembersRead,
}

/// The holds a test armed, by point; each holds the first task that reaches it.
#[cfg(feature = "testing")]
#[derive(Default)]
pub(crate) struct Holds(Mutex<HashMap<HoldPoint, Arc<Held>>>);

/// A hold armed at a point: the first task that reaches it waits there until
/// the test releases it.
#[cfg(feature = "testing")]
pub struct Held {
    reached: tokio::sync::Semaphore,
    released: tokio::sync::Semaphore,
}

#[cfg(feature = "testing")]
impl Held {
    /// Waits until a task is held at the point.
    pub async fn reached(&self) {
        self.reached.acquire().await.expect("never closed").forget();
    }

    /// Lets the held task (or the one still to come) go on.
    pub fn release(&self) {
        self.released.add_permits(1);
    }
}

impl Compute {
    /// Stops dead at the configured crash point: this process is dead from here
    /// on, and its node is free for a restart.
    #[cfg(feature = "testing")]
    pub(crate) fn crash_point(&self, point: Crash) -> Result<()> {
        if self.config.crash_at == Some(point) && !self.crashed.swap(true, Ordering::SeqCst) {
            tracing::error!(?point, "Simulated crash");
            self.runner.release_node_lock();
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

    /// Test hooks `sabotage = "poison-delete"` (every attempt of a delete
    /// fails) and `"panic-on-delete"` (its first attempt panics).
    #[cfg(feature = "testing")]
    pub(crate) fn sabotaged_step(&self, op: &Operation) -> Result<()> {
        use crate::config::Sabotage;
        if op.kind() != netcache_domain::operation::OperationKind::Delete {
            return Ok(());
        }
        match self.config.sabotage {
            Some(Sabotage::PoisonDelete) => Err(Error::Store(netcache_store::Error::Writer(
                "sabotage poison-delete: this step always fails".to_owned(),
            ))),
            Some(Sabotage::PanicOnDelete) if op.attempts == 0 => panic!("sabotage panic-on-delete"),
            _ => Ok(()),
        }
    }

    #[cfg(not(feature = "testing"))]
    #[allow(
        clippy::unused_self,
        clippy::unnecessary_wraps,
        reason = "the testing build's signature"
    )]
    pub(crate) fn sabotaged_step(&self, _op: &Operation) -> Result<()> {
        Ok(())
    }

    /// Arms a hold at `point`: the next task of this process that reaches it
    /// waits there until the test releases it.
    #[cfg(feature = "testing")]
    pub fn hold_at(&self, point: HoldPoint) -> Arc<Held> {
        let held = Arc::new(Held {
            reached: tokio::sync::Semaphore::new(0),
            released: tokio::sync::Semaphore::new(0),
        });
        self.holds.0.lock().expect("holds").insert(point, Arc::clone(&held));
        held
    }

    /// Waits here if a test armed a hold at `point` (once per arming).
    #[cfg(feature = "testing")]
    pub(crate) async fn hold_point(&self, point: HoldPoint) {
        let held = self.holds.0.lock().expect("holds").remove(&point);
        if let Some(held) = held {
            warn!(?point, "Held at a test's hold point");
            held.reached.add_permits(1);
            held.released.acquire().await.expect("never closed").forget();
        }
    }

    /// Without the `testing` feature no test holds anything.
    #[cfg(not(feature = "testing"))]
    #[allow(clippy::unused_self, clippy::unused_async, reason = "the testing build's signature")]
    pub(crate) async fn hold_point(&self, _point: HoldPoint) {}
}
