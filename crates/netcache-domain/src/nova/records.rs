//! What Nova's cell databases record about an instance and its ports, as the
//! audit reads them: plain data, converted from Nova's rows at the reader.

use std::net::IpAddr;

use chrono::{DateTime, TimeDelta, Utc};

use crate::{InstanceUuid, NetworkId, PortId};

/// A row of `instances` (or `shadow_instances`, once archived).
#[derive(Clone, Debug, PartialEq)]
pub struct NovaInstance {
    pub uuid: InstanceUuid,
    pub project_id: String,
    pub host: Option<String>,
    pub vm_state: Option<String>,
    /// Set while Nova works on the instance (building, attaching, deleting…).
    pub task_state: Option<String>,
    /// Soft-deleted (`deleted != 0`) or archived to a shadow table.
    pub deleted: bool,
    pub deleted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The cell whose database holds it.
    pub cell: String,
}

/// A row of `virtual_interfaces`: Nova writes one for each port it allocates or
/// is given, in the build or the interface attach that does it.
#[derive(Clone, Debug, PartialEq)]
pub struct NovaVif {
    pub port_id: PortId,
    pub created_at: DateTime<Utc>,
    pub deleted: bool,
}

/// One VIF of `instance_info_caches.network_info`: what `GET /servers/{id}` shows.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedVif {
    pub port_id: PortId,
    pub network_id: Option<NetworkId>,
    pub addresses: Vec<IpAddr>,
    /// Nova was given the port (it unbinds it on delete instead of deleting it).
    pub preserve_on_delete: bool,
}

/// A row of `instance_actions` with the times of its events.
#[derive(Clone, Debug, PartialEq)]
pub struct NovaAction {
    /// `create`, `attach_interface`, `delete`…
    pub action: String,
    pub request_id: String,
    pub start_time: DateTime<Utc>,
    /// The latest finish of its events; `None` while one still runs.
    pub finish_time: Option<DateTime<Utc>>,
}

/// The actions in which Nova allocates ports or is given them, and so writes
/// `virtual_interfaces` rows.
pub const ALLOCATING_ACTIONS: [&str; 2] = ["create", "attach_interface"];

/// Nova's timestamps have whole seconds: a row written in the same second as
/// its action's bounds is inside it.
const TIMESTAMP_SLACK: TimeDelta = TimeDelta::seconds(1);

/// How long an action whose finish Nova did not record may have run. Nova 34
/// leaves an event of a rescheduled build unfinished for good (it finishes the
/// first of the build's events it finds, not the one that ran).
pub const ACTION_RUNS_AT_MOST: TimeDelta = TimeDelta::hours(1);

impl NovaAction {
    /// When the action ended: its last event's finish, or, unrecorded, at
    /// most [`ACTION_RUNS_AT_MOST`] after its start (and not after `now`).
    #[must_use]
    pub fn end(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.finish_time
            .unwrap_or_else(|| now.min(self.start_time + ACTION_RUNS_AT_MOST))
    }

    /// Whether a row written at `at` was written while this action ran.
    #[must_use]
    pub fn spans(&self, at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        self.start_time - TIMESTAMP_SLACK <= at && at <= self.end(now) + TIMESTAMP_SLACK
    }

    /// Whether the action may still be running.
    #[must_use]
    pub fn may_run(&self, now: DateTime<Utc>) -> bool {
        self.finish_time.is_none() && now < self.start_time + ACTION_RUNS_AT_MOST
    }
}

/// Everything the audit needs about one instance, read in one snapshot of its cell.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceRecords {
    pub instance: NovaInstance,
    /// Its `virtual_interfaces` rows, deleted ones included.
    pub vifs: Vec<NovaVif>,
    /// Its info cache (a deleted instance's last one, if Nova kept it).
    pub cache: Vec<CachedVif>,
    pub actions: Vec<NovaAction>,
}
