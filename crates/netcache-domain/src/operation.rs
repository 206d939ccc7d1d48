//! Durable operations: every mutation of a server (build, delete, interface attach
//! and detach, power actions, rebuilds, removing a fixed IP, security group changes,
//! the retry of a release) is a row committed before any side effect,
//! with exactly one owner at a time. The owner holds a lease it renews while it
//! works; when the lease runs out (the owner died), any process may take the
//! operation over and continue it from what the records say was done.
//!
//! One operation per server at a time is a key of the store, not an in-process
//! lock, so API requests, GC, events and heal in any process never interleave on
//! one server.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::power::PowerAction;
use crate::server::string_enum;
use crate::{HostName, NetworkId, PortId, ServerId};

/// The identity of a running process: its node (stable across restarts, named by
/// the hosts it serves) and this incarnation of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    pub node: String,
    pub incarnation: String,
}

impl Owner {
    /// The owner label stored in operation rows: `node/incarnation`.
    #[must_use]
    pub fn label(&self) -> String {
        format!("{}/{}", self.node, self.incarnation)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub server_id: ServerId,
    /// The operation's own id: changes of its owner never change it.
    pub id: uuid::Uuid,
    pub params: OperationParams,
    /// Request id and caller of the API request that started it, kept for the
    /// instance action when another process resumes it.
    pub request_id: String,
    pub project_id: String,
    pub user_id: String,
    pub owner: Owner,
    /// Until when the owner's lease runs, on the database's clock (leases are
    /// taken and judged by the database, never by a process's own clock).
    pub lease_until: DateTime<Utc>,
    /// The last step recorded (for operators; the records say what is done).
    pub step: String,
    /// Attempts that failed so far; past the runner's cap the operation ends
    /// with a fault.
    pub attempts: u32,
    /// Why the last attempt failed (for operators: audit and logs).
    pub last_error: Option<String>,
    /// A delete asked for while this operation ran: it runs next.
    pub then_delete: Option<QueuedDelete>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Operation {
    #[must_use]
    pub fn kind(&self) -> OperationKind {
        self.params.kind()
    }

    /// The delete that replaces this operation once it is finished, as `id`.
    #[must_use]
    pub fn successor(&self, queued: &QueuedDelete, id: uuid::Uuid, now: DateTime<Utc>) -> Operation {
        Operation {
            id,
            params: OperationParams::Delete,
            request_id: queued.request_id.clone(),
            project_id: queued.project_id.clone(),
            user_id: queued.user_id.clone(),
            step: "queued".to_owned(),
            attempts: 0,
            last_error: None,
            then_delete: None,
            created_at: now,
            updated_at: now,
            ..self.clone()
        }
    }
}

/// What the operation does, with what it needs to resume anywhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OperationParams {
    Build,
    Delete,
    Attach {
        /// The VIF slot the new interface takes, fixed when the request came in.
        position: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        network_id: Option<NetworkId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fixed_ip: Option<IpAddr>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port_id: Option<PortId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
    },
    Detach {
        port_id: PortId,
    },
    /// Retries the releases and resolves the intents a failure or a dead process
    /// left behind on a server no other operation is working on (started by GC).
    Release,
    /// Stop, start, reboot, pause, suspend and their inverses.
    Power {
        action: PowerAction,
    },
    /// Takes one address off an interface's port (`removeFixedIp`); the port stays.
    RemoveFixedIp {
        port_id: PortId,
        address: IpAddr,
    },
    /// Re-images the server with the image its row names (set with the row's
    /// `rebuilding` task, in the commit that started the operation); its ports stay.
    Rebuild,
    /// Puts every interface's port in a security group, or takes it out
    /// (`addSecurityGroup` / `removeSecurityGroup`).
    SecurityGroup {
        group_id: String,
        add: bool,
    },
}

impl OperationParams {
    #[must_use]
    pub fn kind(&self) -> OperationKind {
        match self {
            Self::Build => OperationKind::Build,
            Self::Delete => OperationKind::Delete,
            Self::Attach { .. } => OperationKind::Attach,
            Self::Detach { .. } => OperationKind::Detach,
            Self::Release => OperationKind::Release,
            Self::Power { .. } => OperationKind::Power,
            Self::RemoveFixedIp { .. } => OperationKind::RemoveFixedIp,
            Self::Rebuild => OperationKind::Rebuild,
            Self::SecurityGroup { .. } => OperationKind::SecurityGroup,
        }
    }

    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("operation parameters are always serialisable")
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

string_enum!(
    /// Kinds of operations, as labelled in metrics and the audit.
    OperationKind {
        Build => "build",
        Delete => "delete",
        Attach => "attach",
        Detach => "detach",
        Release => "release",
        Power => "power",
        RemoveFixedIp => "remove_fixed_ip",
        Rebuild => "rebuild",
        SecurityGroup => "security_group",
    }
);

/// A delete requested while another operation was in flight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueuedDelete {
    pub request_id: String,
    pub project_id: String,
    pub user_id: String,
}

impl QueuedDelete {
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a queued delete is always serialisable")
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// Whether a build claimed by `me` can continue its current attempt where it is:
/// only on a host `me` serves. An attempt on a host of a dead process is given up
/// and the build rescheduled, as Nova does when a compute host goes away.
#[must_use]
pub fn resumes_in_place(attempt_host: Option<&HostName>, my_hosts: &[HostName]) -> bool {
    attempt_host.is_none_or(|h| my_hosts.contains(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_through_json() {
        let params = [
            OperationParams::Build,
            OperationParams::Delete,
            OperationParams::Release,
            OperationParams::Rebuild,
            OperationParams::Detach { port_id: "p1".into() },
            OperationParams::Attach {
                position: 2,
                network_id: Some("n1".into()),
                fixed_ip: Some("10.0.0.5".parse().unwrap()),
                port_id: None,
                tag: Some("nic".into()),
            },
            OperationParams::SecurityGroup {
                group_id: "g1".into(),
                add: false,
            },
        ];
        for p in params {
            assert_eq!(OperationParams::from_json(&p.to_json()).unwrap(), p);
        }
    }

    #[test]
    fn builds_resume_in_place_only_on_my_hosts() {
        let mine = [HostName::from("h1")];
        assert!(resumes_in_place(None, &mine));
        assert!(resumes_in_place(Some(&HostName::from("h1")), &mine));
        assert!(!resumes_in_place(Some(&HostName::from("h9")), &mine));
    }
}
