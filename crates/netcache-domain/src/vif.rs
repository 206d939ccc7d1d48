//! VIF records: netcache's authoritative membership of ports in servers.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::neutron::{Port, PortFixedIp};
use crate::server::string_enum;
use crate::{IntentId, NetworkId, PortId, ServerId};

#[derive(Clone, Debug, PartialEq)]
pub struct VifRecord {
    pub port_id: PortId,
    pub server_id: ServerId,
    /// Order of the interface in the server (boot order, then attach order).
    pub position: i64,
    pub origin: VifOrigin,
    pub state: VifState,
    /// The intent that created the port (`None` for a user's port).
    pub intent_id: Option<IntentId>,
    pub network_id: NetworkId,
    pub requested_fixed_ip: Option<IpAddr>,
    /// Nova's device-role tag.
    pub tag: Option<String>,
    /// The port's details as last seen, so os-interface answers without Neutron.
    pub details: Option<PortDetails>,
}

/// What os-interface shows of a port, kept with its VIF record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortDetails {
    pub mac_address: String,
    pub fixed_ips: Vec<PortFixedIp>,
    pub status: String,
    /// Ids of the port's security groups (a server shows their names).
    #[serde(default)]
    pub security_groups: Vec<String>,
}

impl PortDetails {
    #[must_use]
    pub fn of(port: &Port) -> Self {
        Self {
            mac_address: port.mac_address.clone(),
            fixed_ips: port.fixed_ips.clone(),
            status: port.status.clone(),
            security_groups: port.security_groups.clone(),
        }
    }

    /// Whether these are `port`'s details: what `of(port)` would equal,
    /// without copying them (heal asks for every VIF on every pass).
    #[must_use]
    pub fn describe(&self, port: &Port) -> bool {
        self.mac_address == port.mac_address
            && self.fixed_ips == port.fixed_ips
            && self.status == port.status
            && self.security_groups == port.security_groups
    }

    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("port details are always serialisable")
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

impl VifRecord {
    /// Whether this VIF counts as attached (shown in the cache).
    #[must_use]
    pub fn is_attached(&self) -> bool {
        self.state == VifState::Attached
    }

    /// A user's port recorded before its bind: not an interface yet (Nova lists
    /// only ports bound to the server, and os-interface shows their MAC and state).
    #[must_use]
    pub fn is_mid_attach(&self) -> bool {
        self.origin == VifOrigin::Preexisting && self.details.is_none()
    }
}

string_enum!(
    /// Who brought the port: netcache created it (and deletes it), or the user
    /// did (netcache only unbinds it). Durable, unlike Nova's cache-only flag.
    VifOrigin {
        Created => "created",
        Preexisting => "preexisting",
    }
);

string_enum!(
    /// Lifecycle of a VIF record.
    VifState {
        /// Attached to the server; shown in its cache.
        Attached => "attached",
        /// Being released (deleted or unbound). A record stays in this state while
        /// the release has not succeeded, so the port is never forgotten.
        Releasing => "releasing",
        /// Gone from Neutron, or Neutron now gives it to another device.
        Lost => "lost",
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::port;

    #[test]
    fn details_describe_the_port_they_were_taken_from_and_no_other() {
        let server = ServerId(crate::fixtures::uuid(1));
        let taken = port("p", &server, "10.0.0.5");
        let details = PortDetails::of(&taken);
        assert!(details.describe(&taken));
        // Fields os-interface does not show are not details.
        assert!(details.describe(&Port {
            revision_number: 4,
            ..taken.clone()
        }));
        let changed = [
            Port {
                mac_address: "fa:16:3e:00:00:01".into(),
                ..taken.clone()
            },
            port("p", &server, "10.0.0.6"),
            Port {
                status: "DOWN".into(),
                ..taken.clone()
            },
            Port {
                security_groups: vec!["web".into()],
                ..taken.clone()
            },
        ];
        for other in changed {
            assert!(!details.describe(&other), "{other:?}");
            assert_ne!(details, PortDetails::of(&other));
        }
    }
}
