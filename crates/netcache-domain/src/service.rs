//! Compute services as Nova shows them (`os-services`, `os-hypervisors`): one
//! `nova-compute` service per host a process runs, enabled or disabled by an
//! admin, forced down or not, up while its process renews its heartbeat (on
//! the database's clock, so the store says whether it is alive). The scheduler
//! places no server on a disabled or forced-down host.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::HostName;

/// The one binary netcache registers: its scheduler and conductor run inside
/// each process and are no service an admin could act on.
pub const COMPUTE_BINARY: &str = "nova-compute";

/// A service row as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    /// Nova's integer id (before 2.53).
    pub id: i64,
    /// Nova's id from 2.53.
    pub uuid: Uuid,
    pub host: HostName,
    pub binary: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub forced_down: bool,
    /// The last heartbeat or change, on the database's clock.
    pub updated_at: Option<DateTime<Utc>>,
    /// For compare-and-swap writes; a heartbeat does not change it.
    pub generation: i64,
}

impl Service {
    /// Nova's `state`: up while the heartbeat is live, unless forced down.
    #[must_use]
    pub fn is_up(&self, heartbeat_live: bool) -> bool {
        heartbeat_live && !self.forced_down
    }

    /// Whether the scheduler may place a server on its host.
    #[must_use]
    pub fn is_schedulable(&self) -> bool {
        !self.disabled && !self.forced_down
    }

    /// The service with an admin's update applied (Nova's `PUT /os-services`
    /// rules, in its words); `Err` when the update is refused.
    pub fn updated(&self, update: &ServiceUpdate) -> Result<Self, &'static str> {
        let mut next = self.clone();
        match update.status {
            Some(Status::Enabled) => {
                if update.disabled_reason.is_some() {
                    return Err("Specifying 'disabled_reason' with status 'enabled' is invalid.");
                }
                next.disabled = false;
                next.disabled_reason = None;
            }
            Some(Status::Disabled) => {
                next.disabled = true;
                next.disabled_reason.clone_from(&update.disabled_reason);
            }
            None => {}
        }
        if let Some(forced_down) = update.forced_down {
            next.forced_down = forced_down;
        }
        if update.status.is_none() && update.forced_down.is_none() {
            return Err("No updates were requested. Fields 'status' or 'forced_down' should be specified.");
        }
        Ok(next)
    }
}

/// A fake host's fixed capacity, the same on every host (netcache's hosts
/// run no guests: os-hypervisors shows plausible figures, nothing schedules
/// by them).
pub const HOST_VCPUS: u64 = 64;
pub const HOST_MEMORY_MB: u64 = 262_144;
pub const HOST_LOCAL_GB: u64 = 2_048;

/// What a host's live servers use, from their flavors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostUsage {
    pub running_vms: u64,
    pub vcpus: u64,
    pub memory_mb: u64,
    pub local_gb: u64,
}

impl HostUsage {
    /// Adds `count` servers of `flavor` (`None`, a flavor no longer known,
    /// counts as servers using nothing).
    pub fn add(&mut self, flavor: Option<&crate::flavor::FlavorSnapshot>, count: u64) {
        self.running_vms += count;
        if let Some(flavor) = flavor {
            let size = |n: i64| u64::try_from(n).unwrap_or_default() * count;
            self.vcpus += size(flavor.vcpus);
            self.memory_mb += size(flavor.ram_mb);
            self.local_gb += size(flavor.disk_gb);
        }
    }
}

/// `enabled` or `disabled`, as Nova's `status` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Enabled,
    Disabled,
}

/// An admin's change of a service: what it sets, the rest unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceUpdate {
    pub status: Option<Status>,
    pub disabled_reason: Option<String>,
    pub forced_down: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Service {
        Service {
            id: 1,
            uuid: Uuid::nil(),
            host: HostName::from("host1"),
            binary: COMPUTE_BINARY.into(),
            disabled: false,
            disabled_reason: None,
            forced_down: false,
            updated_at: None,
            generation: 0,
        }
    }

    #[test]
    fn updates_follow_novas_rules() {
        let disable = ServiceUpdate {
            status: Some(Status::Disabled),
            disabled_reason: Some("maintenance".into()),
            forced_down: None,
        };
        let disabled = service().updated(&disable).unwrap();
        assert!(disabled.disabled && !disabled.is_schedulable());
        assert_eq!(disabled.disabled_reason.as_deref(), Some("maintenance"));
        let enabled = disabled
            .updated(&ServiceUpdate {
                status: Some(Status::Enabled),
                ..ServiceUpdate::default()
            })
            .unwrap();
        assert!(!enabled.disabled && enabled.disabled_reason.is_none());
        let refused = ServiceUpdate {
            status: Some(Status::Enabled),
            disabled_reason: Some("why".into()),
            forced_down: None,
        };
        assert!(service().updated(&refused).unwrap_err().contains("'disabled_reason'"));
        assert!(service().updated(&ServiceUpdate::default()).is_err());
    }

    #[test]
    fn usage_adds_each_servers_flavor() {
        let mut usage = HostUsage::default();
        let flavor = crate::flavor::built_in_snapshot("1").unwrap();
        usage.add(Some(&flavor), 2);
        usage.add(None, 1);
        assert_eq!(usage.running_vms, 3);
        assert_eq!(usage.vcpus, 2 * u64::try_from(flavor.vcpus).unwrap());
        assert_eq!(usage.memory_mb, 2 * u64::try_from(flavor.ram_mb).unwrap());
    }

    #[test]
    fn a_forced_down_service_is_down_and_unschedulable() {
        let down = service()
            .updated(&ServiceUpdate {
                forced_down: Some(true),
                ..ServiceUpdate::default()
            })
            .unwrap();
        assert!(!down.is_up(true) && !down.is_schedulable());
        assert!(service().is_up(true) && !service().is_up(false));
    }
}
