//! Neutron's resources as netcache sees them: plain data, converted from the wire
//! format at the client boundary.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::{NetworkId, PortId, ProjectId, SubnetId};

/// A Neutron port.
#[derive(Clone, Debug, PartialEq)]
pub struct Port {
    pub id: PortId,
    pub name: String,
    pub network_id: NetworkId,
    pub project_id: ProjectId,
    pub mac_address: String,
    pub fixed_ips: Vec<PortFixedIp>,
    pub status: String,
    pub admin_state_up: bool,
    pub device_id: String,
    pub device_owner: String,
    pub binding_host_id: Option<String>,
    pub vif_type: Option<String>,
    pub vnic_type: Option<String>,
    /// `binding:vif_details`, kept as JSON because it is driver-specific.
    pub vif_details: serde_json::Value,
    /// `binding:profile`, kept as JSON because it is driver-specific.
    pub profile: serde_json::Value,
    pub tags: BTreeSet<String>,
    pub revision_number: u64,
    /// Ids of the security groups the port is in.
    pub security_groups: Vec<String>,
    /// Neutron applies security groups only to a port with port security.
    pub port_security_enabled: bool,
    /// When Neutron made it, where it says so.
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Port {
    /// Whether Neutron holds this port for the given server (`device_id` match).
    #[must_use]
    pub fn carries_device_id(&self, device_id: &str) -> bool {
        self.device_id == device_id
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PortFixedIp {
    pub subnet_id: SubnetId,
    pub ip_address: IpAddr,
}

/// A Neutron network.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Network {
    pub id: NetworkId,
    pub name: String,
    pub project_id: ProjectId,
    pub shared: bool,
    pub external: bool,
    pub mtu: Option<u32>,
    pub subnet_ids: Vec<SubnetId>,
}

/// A Neutron subnet.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Subnet {
    pub id: SubnetId,
    pub network_id: NetworkId,
    pub cidr: IpNet,
    pub gateway_ip: Option<IpAddr>,
    pub enable_dhcp: bool,
    pub dns_nameservers: Vec<IpAddr>,
    pub host_routes: Vec<HostRoute>,
    pub ipv6_address_mode: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostRoute {
    pub destination: IpNet,
    pub nexthop: IpAddr,
}

/// A Neutron security group, as netcache needs it: which one, and whose; its
/// description and rules only when read in full (a server's groups as Nova's
/// `os-security-groups` lists them), else empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityGroup {
    pub id: String,
    pub name: String,
    pub project_id: ProjectId,
    pub description: String,
    pub rules: Vec<SecurityGroupRule>,
}

/// A rule of a security group, the fields Nova reads of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityGroupRule {
    pub id: String,
    /// The group the rule is of.
    pub security_group_id: String,
    /// Traffic into the port (the rules Nova shows), not out of it.
    pub ingress: bool,
    /// A protocol's name or number; `None`: any.
    pub protocol: Option<String>,
    pub port_range_min: Option<u16>,
    pub port_range_max: Option<u16>,
    /// Where the traffic may come from: an address range, or a group's members.
    pub remote_ip_prefix: Option<String>,
    pub remote_group_id: Option<String>,
}

/// A Neutron floating IP.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct FloatingIp {
    pub id: String,
    pub project_id: ProjectId,
    /// The external network it is from (Nova's pool).
    pub floating_network_id: NetworkId,
    pub floating_ip_address: IpAddr,
    pub fixed_ip_address: Option<IpAddr>,
    pub port_id: Option<PortId>,
    /// The `device_id` of the port it is associated with (Neutron's
    /// `port_details`), `None` when it is not.
    pub device_id: Option<String>,
}

/// Neutron extension aliases netcache's behaviour depends on.
pub mod extension {
    /// `tags` in a port POST body are applied (else silently dropped).
    pub const TAG_PORTS_DURING_BULK_CREATION: &str = "tag-ports-during-bulk-creation";
    /// `If-Match: revision_number=N` on PUT and DELETE.
    pub const REVISION_IF_MATCH: &str = "revision-if-match";
}
