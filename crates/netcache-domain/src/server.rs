//! Servers (instances) and what a boot request asks for.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use chrono::{DateTime, Utc};

use crate::flavor::FlavorSnapshot;
use crate::server_attributes::ServerAttributes;
use crate::{HostName, NetworkId, PortId, ProjectId, ServerId};

#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    pub id: ServerId,
    pub name: String,
    pub project_id: ProjectId,
    pub user_id: String,
    pub host: Option<HostName>,
    pub availability_zone: String,
    pub vm_state: VmState,
    pub task_state: Option<TaskState>,
    pub fault: Option<Fault>,
    pub flavor_ref: String,
    /// The flavor as it was at boot (Nova's `instance.flavor`); `None` only for
    /// a server recorded without one whose flavor is not a built-in one.
    pub flavor: Option<FlavorSnapshot>,
    pub image_ref: String,
    pub metadata: BTreeMap<String, String>,
    /// Nova's `accessIPv4` / `accessIPv6`: addresses the user names for reaching
    /// the server (netcache only keeps and shows them).
    pub access_ip_v4: Option<Ipv4Addr>,
    pub access_ip_v6: Option<Ipv6Addr>,
    pub requested_networks: NetworkRequests,
    /// The caller's key pair named at boot (Nova keeps the name, not the key).
    pub key_name: Option<String>,
    /// The security groups the boot asked for, resolved to ids when it was
    /// accepted: every port netcache creates for the server is put in them.
    /// Empty: Neutron's default (the project's `default` group).
    pub security_groups: Vec<String>,
    /// Nova's lock: who locked the server, if it is locked.
    pub locked_by: Option<LockedBy>,
    /// What only the API shows back (description, tags, hostname, …).
    pub attributes: ServerAttributes,
    /// Hosts already tried by this build, in order (the reschedule history).
    pub tried_hosts: Vec<HostName>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub launched_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency counter of the server row.
    pub generation: i64,
}

impl Server {
    /// The server in ERROR with no task, its fault (Nova's code 500) naming `message`.
    #[must_use]
    pub fn in_error(self, message: String, at: DateTime<Utc>) -> Self {
        Self {
            vm_state: VmState::Error,
            task_state: None,
            fault: Some(Fault {
                code: 500,
                message,
                created: at,
            }),
            ..self
        }
    }

    /// Nova's `device_owner` for ports of this server.
    #[must_use]
    pub fn device_owner(&self) -> String {
        format!("compute:{}", self.availability_zone)
    }

    #[must_use]
    pub fn is_deleted(&self) -> bool {
        self.vm_state == VmState::Deleted
    }

    /// Nova's API `status` for a vm_state/task_state pair.
    #[must_use]
    pub fn api_status(&self) -> &'static str {
        match (self.vm_state, self.task_state) {
            (VmState::Building, _) => "BUILD",
            (_, Some(TaskState::Rebooting)) => "REBOOT",
            (_, Some(TaskState::RebootingHard)) => "HARD_REBOOT",
            (_, Some(TaskState::Rebuilding)) => "REBUILD",
            (VmState::Active, Some(TaskState::UpdatingPassword)) => "PASSWORD",
            (VmState::Active, _) => "ACTIVE",
            (VmState::Stopped, _) => "SHUTOFF",
            (VmState::Paused, _) => "PAUSED",
            (VmState::Suspended, _) => "SUSPENDED",
            (VmState::Rescued, _) => "RESCUE",
            (VmState::Error, _) => "ERROR",
            (VmState::Deleted, _) => "DELETED",
        }
    }

    /// Nova's `power_state` number: what the hypervisor reports.
    #[must_use]
    pub fn power_state(&self) -> u8 {
        self.vm_state.power_state()
    }

    /// This server (an operation's next state of it) with the user's fields of
    /// `current` — name, access addresses, metadata, lock — and its generation: while an
    /// operation holds a server, it alone writes the other fields, and a user's
    /// edit (a compare-and-swap outside operations) writes only these, so an
    /// operation whose write lost to such an edit keeps the edit.
    #[must_use]
    pub fn keeping_user_edits_of(self, current: &Self) -> Self {
        Self {
            name: current.name.clone(),
            access_ip_v4: current.access_ip_v4,
            access_ip_v6: current.access_ip_v6,
            metadata: current.metadata.clone(),
            locked_by: current.locked_by,
            attributes: current.attributes.clone(),
            generation: current.generation,
            ..self
        }
    }
}

/// A server as heal and the audit read it, a page at a time: the few columns
/// they use, not the whole row (metadata, networks, fault, hosts tried).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedServer {
    pub id: ServerId,
    pub name: String,
    pub project_id: ProjectId,
    pub created_at: DateTime<Utc>,
    pub deleted: bool,
}

impl WatchedServer {
    #[must_use]
    pub fn is_deleted(&self) -> bool {
        self.deleted
    }
}

impl From<&Server> for WatchedServer {
    fn from(server: &Server) -> Self {
        Self {
            id: server.id,
            name: server.name.clone(),
            project_id: server.project_id.clone(),
            created_at: server.created_at,
            deleted: server.is_deleted(),
        }
    }
}

macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vdoc])* $variant),+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &[Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!("unknown {} {other:?}", stringify!($name))),
                }
            }
        }
    };
}
pub(crate) use string_enum;

string_enum!(
    /// Nova's vm_state, the subset netcache uses.
    VmState {
        Building => "building",
        Active => "active",
        Stopped => "stopped",
        Paused => "paused",
        Suspended => "suspended",
        /// Booted from a rescue image (`rescue`), until `unrescue`.
        Rescued => "rescued",
        Error => "error",
        Deleted => "deleted",
    }
);

impl VmState {
    /// Nova's `power_state` number of a server in this state (the fake
    /// hypervisor's report follows the state).
    #[must_use]
    pub fn power_state(self) -> u8 {
        match self {
            Self::Active | Self::Rescued => 1,
            Self::Paused => 3,
            Self::Stopped => 4,
            Self::Suspended => 7,
            Self::Building | Self::Error | Self::Deleted => 0,
        }
    }
}

string_enum!(
    /// Who locked a server: its project (`owner`) or an admin of another one.
    LockedBy {
        Owner => "owner",
        Admin => "admin",
    }
);

impl LockedBy {
    /// The side a caller of `caller_project` locks `server` from (Nova's
    /// `locked_by`): its own project's, or an admin's of another one.
    #[must_use]
    pub fn side_of(caller_project: &str, server: &Server) -> Self {
        if server.project_id.as_str() == caller_project {
            Self::Owner
        } else {
            Self::Admin
        }
    }
}

string_enum!(
    /// Nova's task_state, the subset netcache uses.
    TaskState {
        Scheduling => "scheduling",
        Networking => "networking",
        Spawning => "spawning",
        Deleting => "deleting",
        PoweringOff => "powering-off",
        PoweringOn => "powering-on",
        Rebooting => "rebooting",
        RebootingHard => "rebooting_hard",
        Pausing => "pausing",
        Unpausing => "unpausing",
        Suspending => "suspending",
        Resuming => "resuming",
        Rebuilding => "rebuilding",
        Rescuing => "rescuing",
        Unrescuing => "unrescuing",
        UpdatingPassword => "updating_password",
    }
);

/// Why a server went to ERROR, as Nova shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub code: u16,
    pub message: String,
    pub created: DateTime<Utc>,
}

/// The `networks` of a boot request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetworkRequests {
    /// `"auto"`: the one network available to the project.
    Auto,
    /// `"none"`: no ports at all.
    None,
    /// One port per entry, in this order.
    Explicit(Vec<NetworkRequest>),
}

impl NetworkRequests {
    /// The slots a build must fill, one per port, in order.
    #[must_use]
    pub fn slots(&self) -> Vec<NetworkRequest> {
        match self {
            Self::Auto => vec![NetworkRequest::Network {
                network_id: None,
                fixed_ip: None,
                tag: None,
            }],
            Self::None => vec![],
            Self::Explicit(requests) => requests.clone(),
        }
    }
}

/// One entry of a boot or attach request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetworkRequest {
    /// A new port on a network (`None`: the only network available).
    Network {
        network_id: Option<NetworkId>,
        fixed_ip: Option<IpAddr>,
        tag: Option<String>,
    },
    /// A port the user created.
    Port { port_id: PortId, tag: Option<String> },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::server;

    /// Invariant 22.
    #[test]
    fn an_operation_keeps_a_users_edit_and_its_own_state() {
        let read = server();
        let next = Server {
            host: Some(HostName::from("h1")),
            task_state: Some(TaskState::Networking),
            ..read.clone()
        };
        let edited = Server {
            name: "new".into(),
            access_ip_v4: Some(Ipv4Addr::new(192, 0, 2, 1)),
            access_ip_v6: Some(Ipv6Addr::LOCALHOST),
            metadata: BTreeMap::from([("k".to_owned(), "v".to_owned())]),
            generation: 4,
            ..read
        };
        let rebased = next.clone().keeping_user_edits_of(&edited);
        assert_eq!(
            (rebased.host.as_ref(), rebased.task_state),
            (next.host.as_ref(), next.task_state),
            "the operation's state"
        );
        assert_eq!(
            (
                &rebased.name,
                rebased.access_ip_v4,
                rebased.access_ip_v6,
                &rebased.metadata
            ),
            (&edited.name, edited.access_ip_v4, edited.access_ip_v6, &edited.metadata),
            "the user's edit"
        );
        assert_eq!(rebased.generation, 4, "the generation the edit left");
    }
}
