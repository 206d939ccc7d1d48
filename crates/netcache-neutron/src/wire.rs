//! Neutron v2.0 JSON, as sent and received on the wire.
//!
//! Response types tolerate unknown keys, missing optional keys and `null` where
//! Neutron may send it; they convert into the domain's types with `TryFrom`, which
//! fails with [`InvalidField`] on an unparsable address or CIDR. Request bodies
//! carry only the fields that are set.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;
use netcache_domain::neutron::{HostRoute, Network, Port, PortFixedIp, SecurityGroup, SecurityGroupRule, Subnet};
use netcache_domain::security_group_rule::{NewIngressRule, RuleSource};
use netcache_domain::{NetworkId, PortId, ProjectId, SubnetId};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::{FixedIpRequest, PortCreate, PortUpdate};

mod floating_ips;

pub use floating_ips::{FloatingIpAssociationEnvelope, FloatingIpBody, FloatingIpCreateEnvelope, FloatingIpEnvelope};

/// A response field that does not hold what Neutron documents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{resource} {id}: invalid {field} {value:?}: {reason}")]
pub struct InvalidField {
    pub resource: &'static str,
    pub id: String,
    pub field: &'static str,
    pub value: String,
    pub reason: String,
}

/// `null` or missing → `T::default()`.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn default_true() -> bool {
    true
}

/// An empty string means "not set" for several Neutron attributes.
fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

fn owner(
    resource: &'static str,
    id: &str,
    project_id: Option<String>,
    tenant_id: Option<String>,
) -> Result<ProjectId, InvalidField> {
    non_empty(project_id)
        .or_else(|| non_empty(tenant_id))
        .map(ProjectId::from)
        .ok_or_else(|| InvalidField {
            resource,
            id: id.to_owned(),
            field: "project_id",
            value: String::new(),
            reason: "neither project_id nor tenant_id is set".to_owned(),
        })
}

fn parse_ip(resource: &'static str, id: &str, field: &'static str, value: &str) -> Result<IpAddr, InvalidField> {
    value.parse().map_err(|e: std::net::AddrParseError| InvalidField {
        resource,
        id: id.to_owned(),
        field,
        value: value.to_owned(),
        reason: e.to_string(),
    })
}

fn parse_net(resource: &'static str, id: &str, field: &'static str, value: &str) -> Result<IpNet, InvalidField> {
    value.parse().map_err(|e: ipnet::AddrParseError| InvalidField {
        resource,
        id: id.to_owned(),
        field,
        value: value.to_owned(),
        reason: e.to_string(),
    })
}

// ---------------------------------------------------------------------------
// Errors and pagination
// ---------------------------------------------------------------------------

/// Neutron's error body: `{"NeutronError": {"type", "message", "detail"}}`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct NeutronErrorBody {
    #[serde(rename = "NeutronError")]
    pub error: NeutronError,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct NeutronError {
    #[serde(rename = "type", default, deserialize_with = "nullable")]
    pub kind: String,
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    #[serde(default, deserialize_with = "nullable")]
    pub detail: String,
}

/// An entry of a `*_links` list, e.g. `{"href": "...?marker=X", "rel": "next"}`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Link {
    pub href: String,
    #[serde(default, deserialize_with = "nullable")]
    pub rel: String,
}

/// A list response: the items and the pagination links.
pub trait ListPage: for<'de> Deserialize<'de> {
    type Item;
    /// The collection's name in bodies, e.g. `security_groups` (in URLs with dashes).
    const COLLECTION: &'static str;
    fn into_parts(self) -> (Vec<Self::Item>, Vec<Link>);
}

macro_rules! list_page {
    ($(#[$doc:meta])* $name:ident, $item:ty, $collection:literal, $links:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
        pub struct $name {
            #[serde(rename = $collection)]
            pub items: Vec<$item>,
            #[serde(rename = $links, default, deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
            pub links: Vec<Link>,
        }

        impl ListPage for $name {
            type Item = $item;
            const COLLECTION: &'static str = $collection;
            fn into_parts(self) -> (Vec<$item>, Vec<Link>) {
                (self.items, self.links)
            }
        }
    };
}

list_page!(
    /// `GET /v2.0/ports`
    PortList, PortBody, "ports", "ports_links"
);
list_page!(
    /// `GET /v2.0/networks`
    NetworkList, NetworkBody, "networks", "networks_links"
);
list_page!(
    /// `GET /v2.0/subnets`
    SubnetList, SubnetBody, "subnets", "subnets_links"
);
list_page!(
    /// `GET /v2.0/floatingips`
    FloatingIpList, FloatingIpBody, "floatingips", "floatingips_links"
);
list_page!(
    /// `GET /v2.0/security-groups`
    SecurityGroupList, SecurityGroupBody, "security_groups", "security_groups_links"
);
list_page!(
    /// `GET /v2.0/extensions`
    ExtensionList, ExtensionBody, "extensions", "extensions_links"
);

// ---------------------------------------------------------------------------
// Extensions
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct ExtensionBody {
    pub alias: String,
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
}

// ---------------------------------------------------------------------------
// Auto-allocated topology
// ---------------------------------------------------------------------------

/// `{"auto_allocated_topology": {"id": …, "project_id": …}}`: the network
/// Neutron made (or had made) for a project that asked for none.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct AutoAllocatedTopologyEnvelope {
    pub auto_allocated_topology: AutoAllocatedTopologyBody,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct AutoAllocatedTopologyBody {
    pub id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub project_id: String,
}

// ---------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------

/// `{"port": {...}}`
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PortEnvelope {
    pub port: PortBody,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PortBody {
    pub id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    pub network_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub mac_address: String,
    #[serde(default, deserialize_with = "nullable")]
    pub fixed_ips: Vec<FixedIpBody>,
    #[serde(default, deserialize_with = "nullable")]
    pub status: String,
    #[serde(default = "default_true")]
    pub admin_state_up: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub device_id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub device_owner: String,
    #[serde(rename = "binding:host_id", default, skip_serializing_if = "Option::is_none")]
    pub binding_host_id: Option<String>,
    #[serde(rename = "binding:vif_type", default, skip_serializing_if = "Option::is_none")]
    pub binding_vif_type: Option<String>,
    #[serde(rename = "binding:vnic_type", default, skip_serializing_if = "Option::is_none")]
    pub binding_vnic_type: Option<String>,
    #[serde(rename = "binding:vif_details", default, skip_serializing_if = "Value::is_null")]
    pub binding_vif_details: Value,
    #[serde(rename = "binding:profile", default, skip_serializing_if = "Value::is_null")]
    pub binding_profile: Value,
    #[serde(default, deserialize_with = "nullable")]
    pub security_groups: Vec<String>,
    /// Absent without the `port-security` extension: then every port has it.
    #[serde(default = "default_true")]
    pub port_security_enabled: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub revision_number: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct FixedIpBody {
    pub subnet_id: String,
    pub ip_address: String,
}

/// A JSON object, or `{}` for `null`: how the domain keeps driver-specific dicts.
fn object_or_empty(v: Value) -> Value {
    if v.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        v
    }
}

impl TryFrom<PortBody> for Port {
    type Error = InvalidField;

    fn try_from(p: PortBody) -> Result<Self, Self::Error> {
        let fixed_ips = p
            .fixed_ips
            .iter()
            .map(|ip| {
                Ok(PortFixedIp {
                    subnet_id: SubnetId::from(ip.subnet_id.as_str()),
                    ip_address: parse_ip("port", &p.id, "fixed_ips.ip_address", &ip.ip_address)?,
                })
            })
            .collect::<Result<Vec<_>, InvalidField>>()?;
        let project_id = owner("port", &p.id, p.project_id, p.tenant_id)?;
        Ok(Port {
            id: PortId::from(p.id),
            name: p.name,
            network_id: NetworkId::from(p.network_id),
            project_id,
            mac_address: p.mac_address,
            fixed_ips,
            status: p.status,
            admin_state_up: p.admin_state_up,
            device_id: p.device_id,
            device_owner: p.device_owner,
            binding_host_id: non_empty(p.binding_host_id),
            vif_type: non_empty(p.binding_vif_type),
            vnic_type: non_empty(p.binding_vnic_type),
            vif_details: object_or_empty(p.binding_vif_details),
            profile: object_or_empty(p.binding_profile),
            tags: p.tags.into_iter().collect::<BTreeSet<_>>(),
            revision_number: p.revision_number,
            security_groups: p.security_groups,
            port_security_enabled: p.port_security_enabled,
            // Neutron writes `2026-11-29T20:22:48Z`; a form not understood is left out.
            created_at: p
                .created_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&chrono::Utc)),
        })
    }
}

/// `{"port": {...}}` of `POST /v2.0/ports`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PortCreateEnvelope {
    pub port: PortCreateBody,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PortCreateBody {
    pub network_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed_ips: Vec<FixedIpRequestBody>,
    pub device_id: String,
    pub device_owner: String,
    #[serde(rename = "binding:host_id", skip_serializing_if = "Option::is_none")]
    pub binding_host_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_groups: Option<Vec<String>>,
    pub admin_state_up: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct FixedIpRequestBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
}

impl From<&FixedIpRequest> for FixedIpRequestBody {
    fn from(r: &FixedIpRequest) -> Self {
        Self {
            subnet_id: r.subnet_id.as_ref().map(|s| s.0.clone()),
            ip_address: r.ip_address.map(|ip| ip.to_string()),
        }
    }
}

impl From<&PortCreate> for PortCreateEnvelope {
    fn from(c: &PortCreate) -> Self {
        Self {
            port: PortCreateBody {
                network_id: c.network_id.0.clone(),
                project_id: c.project_id.as_ref().map(|p| p.0.clone()),
                fixed_ips: c.fixed_ips.iter().map(FixedIpRequestBody::from).collect(),
                device_id: c.device_id.clone(),
                device_owner: c.device_owner.clone(),
                binding_host_id: c.binding_host_id.clone(),
                name: c.name.clone(),
                tags: c.tags.clone(),
                security_groups: c.security_groups.clone(),
                admin_state_up: true,
            },
        }
    }
}

/// `{"port": {...}}` of `PUT /v2.0/ports/{id}`: only the set fields.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PortUpdateEnvelope {
    pub port: PortUpdateBody,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PortUpdateBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_owner: Option<String>,
    /// `Some(None)` is sent as `null` (clears the binding).
    #[serde(rename = "binding:host_id", skip_serializing_if = "Option::is_none")]
    pub binding_host_id: Option<Option<String>>,
    #[serde(rename = "binding:profile", skip_serializing_if = "Option::is_none")]
    pub binding_profile: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_ips: Option<Vec<FixedIpRequestBody>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_groups: Option<Vec<String>>,
}

impl From<&PortUpdate> for PortUpdateEnvelope {
    fn from(u: &PortUpdate) -> Self {
        Self {
            port: PortUpdateBody {
                device_id: u.device_id.clone(),
                device_owner: u.device_owner.clone(),
                binding_host_id: u.binding_host_id.clone(),
                binding_profile: u.binding_profile.clone(),
                fixed_ips: u
                    .fixed_ips
                    .as_ref()
                    .map(|ips| ips.iter().map(FixedIpRequestBody::from).collect()),
                security_groups: u.security_groups.clone(),
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Security groups
// ---------------------------------------------------------------------------

/// A security group: of a list asked for with `fields=id,name,project_id`, its
/// description and rules are missing.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct SecurityGroupBody {
    pub id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(default, deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub security_group_rules: Vec<SecurityGroupRuleBody>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct SecurityGroupRuleBody {
    pub id: String,
    #[serde(default)]
    pub security_group_id: String,
    pub direction: String,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub port_range_min: Option<u16>,
    #[serde(default)]
    pub port_range_max: Option<u16>,
    #[serde(default)]
    pub remote_ip_prefix: Option<String>,
    #[serde(default)]
    pub remote_group_id: Option<String>,
}

impl TryFrom<SecurityGroupBody> for SecurityGroup {
    type Error = InvalidField;

    fn try_from(g: SecurityGroupBody) -> Result<Self, Self::Error> {
        let project_id = owner("security_group", &g.id, g.project_id, g.tenant_id)?;
        let rules = g
            .security_group_rules
            .into_iter()
            .map(SecurityGroupRule::from)
            .collect();
        Ok(SecurityGroup {
            id: g.id,
            name: g.name,
            project_id,
            description: g.description,
            rules,
        })
    }
}

impl From<SecurityGroupRuleBody> for SecurityGroupRule {
    fn from(r: SecurityGroupRuleBody) -> Self {
        SecurityGroupRule {
            id: r.id,
            security_group_id: r.security_group_id,
            ingress: r.direction == "ingress",
            protocol: non_empty(r.protocol),
            port_range_min: r.port_range_min,
            port_range_max: r.port_range_max,
            remote_ip_prefix: non_empty(r.remote_ip_prefix),
            remote_group_id: non_empty(r.remote_group_id),
        }
    }
}

/// `GET`, `POST` or `PUT /v2.0/security-groups[/{id}]`'s answer.
#[derive(Debug, Deserialize)]
pub struct SecurityGroupEnvelope {
    pub security_group: SecurityGroupBody,
}

/// A security group's create (with its owner) or update body.
#[derive(Debug, Serialize)]
pub struct SecurityGroupWriteEnvelope<'a> {
    pub security_group: SecurityGroupWrite<'a>,
}

#[derive(Debug, Serialize)]
pub struct SecurityGroupWrite<'a> {
    pub name: &'a str,
    pub description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<&'a str>,
}

/// `GET` or `POST /v2.0/security-group-rules[/{id}]`'s answer.
#[derive(Debug, Deserialize)]
pub struct SecurityGroupRuleEnvelope {
    pub security_group_rule: SecurityGroupRuleBody,
}

/// An ingress rule's create body, as Nova sends it (no port for Nova's `-1`).
#[derive(Debug, Serialize)]
pub struct SecurityGroupRuleCreateEnvelope<'a> {
    pub security_group_rule: SecurityGroupRuleCreate<'a>,
}

#[derive(Debug, Serialize)]
pub struct SecurityGroupRuleCreate<'a> {
    pub direction: &'static str,
    pub ethertype: &'static str,
    pub security_group_id: &'a str,
    pub project_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_ip_prefix: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_group_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_range_min: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_range_max: Option<u16>,
}

impl<'a> From<&'a NewIngressRule> for SecurityGroupRuleCreateEnvelope<'a> {
    fn from(rule: &'a NewIngressRule) -> Self {
        let (remote_ip_prefix, remote_group_id) = match &rule.source {
            RuleSource::Cidr(cidr) => (Some(cidr.as_str()), None),
            RuleSource::Group(group) => (None, Some(group.as_str())),
        };
        Self {
            security_group_rule: SecurityGroupRuleCreate {
                direction: "ingress",
                ethertype: rule.ethertype(),
                security_group_id: &rule.security_group_id,
                project_id: rule.project_id.as_str(),
                protocol: rule.protocol.as_deref(),
                remote_ip_prefix,
                remote_group_id,
                port_range_min: rule.port_range_min,
                port_range_max: rule.port_range_max,
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Networks and subnets
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct NetworkBody {
    pub id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub shared: bool,
    #[serde(rename = "router:external", default, deserialize_with = "nullable")]
    pub router_external: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, deserialize_with = "nullable")]
    pub subnets: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub status: String,
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
}

impl TryFrom<NetworkBody> for Network {
    type Error = InvalidField;

    fn try_from(n: NetworkBody) -> Result<Self, Self::Error> {
        let project_id = owner("network", &n.id, n.project_id, n.tenant_id)?;
        Ok(Network {
            id: NetworkId::from(n.id),
            name: n.name,
            project_id,
            shared: n.shared,
            external: n.router_external,
            mtu: n.mtu,
            subnet_ids: n.subnets.into_iter().map(SubnetId::from).collect(),
        })
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct SubnetBody {
    pub id: String,
    pub network_id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<u8>,
    #[serde(default)]
    pub gateway_ip: Option<String>,
    #[serde(default = "default_true")]
    pub enable_dhcp: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub dns_nameservers: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub host_routes: Vec<HostRouteBody>,
    #[serde(default)]
    pub ipv6_address_mode: Option<String>,
    #[serde(default)]
    pub ipv6_ra_mode: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct HostRouteBody {
    pub destination: String,
    pub nexthop: String,
}

impl TryFrom<SubnetBody> for Subnet {
    type Error = InvalidField;

    fn try_from(s: SubnetBody) -> Result<Self, Self::Error> {
        let cidr = parse_net("subnet", &s.id, "cidr", &s.cidr)?;
        let gateway_ip = non_empty(s.gateway_ip)
            .map(|g| parse_ip("subnet", &s.id, "gateway_ip", &g))
            .transpose()?;
        let dns_nameservers = s
            .dns_nameservers
            .iter()
            .map(|d| parse_ip("subnet", &s.id, "dns_nameservers", d))
            .collect::<Result<Vec<_>, _>>()?;
        let host_routes = s
            .host_routes
            .iter()
            .map(|r| {
                Ok(HostRoute {
                    destination: parse_net("subnet", &s.id, "host_routes.destination", &r.destination)?,
                    nexthop: parse_ip("subnet", &s.id, "host_routes.nexthop", &r.nexthop)?,
                })
            })
            .collect::<Result<Vec<_>, InvalidField>>()?;
        Ok(Subnet {
            id: SubnetId::from(s.id),
            network_id: NetworkId::from(s.network_id),
            cidr,
            gateway_ip,
            enable_dhcp: s.enable_dhcp,
            dns_nameservers,
            host_routes,
            ipv6_address_mode: non_empty(s.ipv6_address_mode),
        })
    }
}

impl fmt::Display for NeutronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PORT_EXAMPLE: &str = r#"{
 "port": {
  "id": "0036f079-1c76-4790-9f29-fa87f2aa3116",
  "name": "p1",
  "network_id": "999abf32-dbbf-4685-9f32-673e4a6fb077",
  "project_id": "fake_project_id",
  "mac_address": "fa:16:3e:c3:2e:0a",
  "admin_state_up": true,
  "status": "ACTIVE",
  "device_id": "11111111-1111-1111-1111-111111111111",
  "device_owner": "compute:nova",
  "fixed_ips": [{"subnet_id": "447705e3-1583-48bd-b4ea-980c6f2162ec", "ip_address": "10.0.0.11"}],
  "allowed_address_pairs": [],
  "extra_dhcp_opts": [],
  "security_groups": ["16e9986f-d5e8-4334-b7a1-9e2eb68a8c3a"],
  "description": "",
  "binding:vnic_type": "normal",
  "binding:profile": {},
  "binding:host_id": "host1",
  "binding:vif_type": "ovs",
  "binding:vif_details": {"port_filter": true, "ovs_hybrid_plug": false, "bound_drivers": {"0": "fakebind"}},
  "port_security_enabled": true,
  "tags": [],
  "created_at": "2026-11-29T20:22:48Z",
  "updated_at": "2026-11-29T20:22:48Z",
  "revision_number": 3,
  "tenant_id": "fake_project_id"
 }
}"#;

    #[test]
    fn real_neutron_port_converts() {
        let env: PortEnvelope = serde_json::from_str(PORT_EXAMPLE).unwrap();
        let port = Port::try_from(env.port).unwrap();
        assert_eq!(port.id.as_str(), "0036f079-1c76-4790-9f29-fa87f2aa3116");
        assert_eq!(port.project_id.as_str(), "fake_project_id");
        assert_eq!(port.binding_host_id.as_deref(), Some("host1"));
        assert_eq!(port.vif_type.as_deref(), Some("ovs"));
        assert_eq!(port.vnic_type.as_deref(), Some("normal"));
        assert_eq!(port.vif_details["bound_drivers"]["0"], "fakebind");
        assert_eq!(port.profile, json!({}));
        assert_eq!(port.revision_number, 3);
        assert_eq!(port.fixed_ips[0].ip_address, "10.0.0.11".parse::<IpAddr>().unwrap());
        assert_eq!(
            port.fixed_ips[0].subnet_id.as_str(),
            "447705e3-1583-48bd-b4ea-980c6f2162ec"
        );
        assert!(port.tags.is_empty());
    }

    #[test]
    fn minimal_port_with_nulls_converts() {
        let body: PortBody = serde_json::from_value(json!({
            "id": "p", "network_id": "n", "tenant_id": "t", "name": null,
            "binding:host_id": "", "binding:vif_type": "unbound", "binding:profile": null,
            "tags": null, "something_new": {"x": 1}
        }))
        .unwrap();
        let port = Port::try_from(body).unwrap();
        assert_eq!(port.project_id.as_str(), "t");
        assert_eq!(port.name, "");
        assert_eq!(port.binding_host_id, None);
        assert_eq!(port.vif_type.as_deref(), Some("unbound"));
        assert_eq!(port.profile, json!({}));
        assert!(port.admin_state_up);
        assert_eq!(port.revision_number, 0);
    }

    #[test]
    fn bad_fixed_ip_is_invalid() {
        let body: PortBody = serde_json::from_value(json!({
            "id": "p", "network_id": "n", "project_id": "t",
            "fixed_ips": [{"subnet_id": "s", "ip_address": "10.0.0.300"}]
        }))
        .unwrap();
        let err = Port::try_from(body).unwrap_err();
        assert_eq!(err.field, "fixed_ips.ip_address");
        assert_eq!(err.value, "10.0.0.300");
    }

    #[test]
    fn port_without_owner_is_invalid() {
        let body: PortBody = serde_json::from_value(json!({"id": "p", "network_id": "n"})).unwrap();
        assert_eq!(Port::try_from(body).unwrap_err().field, "project_id");
    }

    #[test]
    fn network_converts() {
        let list: NetworkList = serde_json::from_value(json!({"networks": [{
            "id": "n", "name": "public", "project_id": "admin", "shared": false,
            "router:external": true, "mtu": 1450, "subnets": ["s1", "s2"], "status": "ACTIVE",
            "ipv4_address_scope": null, "is_default": false
        }]}))
        .unwrap();
        let (items, links) = list.into_parts();
        assert!(links.is_empty());
        let net = Network::try_from(items.into_iter().next().unwrap()).unwrap();
        assert!(net.external);
        assert!(!net.shared);
        assert_eq!(net.mtu, Some(1450));
        assert_eq!(net.subnet_ids, vec![SubnetId::from("s1"), SubnetId::from("s2")]);
    }

    #[test]
    fn subnets_convert() {
        let v4: SubnetBody = serde_json::from_value(json!({
            "id": "s4", "network_id": "n", "cidr": "10.0.0.0/24", "ip_version": 4,
            "gateway_ip": "10.0.0.1", "enable_dhcp": true, "dns_nameservers": ["8.8.8.8"],
            "host_routes": [{"destination": "192.168.0.0/16", "nexthop": "10.0.0.254"}],
            "ipv6_address_mode": null, "ipv6_ra_mode": null, "allocation_pools": []
        }))
        .unwrap();
        let s = Subnet::try_from(v4).unwrap();
        assert_eq!(s.cidr, "10.0.0.0/24".parse::<IpNet>().unwrap());
        assert_eq!(s.gateway_ip, Some("10.0.0.1".parse().unwrap()));
        assert_eq!(s.host_routes[0].nexthop, "10.0.0.254".parse::<IpAddr>().unwrap());
        assert_eq!(s.ipv6_address_mode, None);

        let v6: SubnetBody = serde_json::from_value(json!({
            "id": "s6", "network_id": "n", "cidr": "fd00::/64", "gateway_ip": null,
            "enable_dhcp": false, "ipv6_address_mode": "slaac"
        }))
        .unwrap();
        let s = Subnet::try_from(v6).unwrap();
        assert_eq!(s.gateway_ip, None);
        assert!(!s.enable_dhcp);
        assert_eq!(s.ipv6_address_mode.as_deref(), Some("slaac"));

        let bad: SubnetBody =
            serde_json::from_value(json!({"id": "s", "network_id": "n", "cidr": "10.0.0.0/33"})).unwrap();
        assert_eq!(Subnet::try_from(bad).unwrap_err().field, "cidr");
    }

    #[test]
    fn create_body_has_only_set_fields() {
        let create = PortCreate {
            network_id: NetworkId::from("net"),
            project_id: None,
            fixed_ips: vec![
                FixedIpRequest {
                    subnet_id: Some(SubnetId::from("s")),
                    ip_address: None,
                },
                FixedIpRequest {
                    subnet_id: None,
                    ip_address: Some("10.0.0.5".parse().unwrap()),
                },
                FixedIpRequest {
                    subnet_id: Some(SubnetId::from("s")),
                    ip_address: Some("10.0.0.6".parse().unwrap()),
                },
            ],
            device_id: "dev".into(),
            device_owner: "compute:nova".into(),
            binding_host_id: None,
            name: None,
            tags: vec![],
            security_groups: None,
        };
        let body = serde_json::to_value(PortCreateEnvelope::from(&create)).unwrap();
        assert_eq!(
            body,
            json!({"port": {
                "network_id": "net",
                "fixed_ips": [{"subnet_id": "s"}, {"ip_address": "10.0.0.5"}, {"subnet_id": "s", "ip_address": "10.0.0.6"}],
                "device_id": "dev", "device_owner": "compute:nova", "admin_state_up": true
            }})
        );

        let full = PortCreate {
            project_id: Some(ProjectId::from("proj")),
            fixed_ips: vec![],
            binding_host_id: Some("host1".into()),
            name: Some("netcache-intent-x".into()),
            tags: vec!["a".into()],
            security_groups: Some(vec![]),
            ..create
        };
        let body = serde_json::to_value(PortCreateEnvelope::from(&full)).unwrap();
        assert_eq!(
            body,
            json!({"port": {
                "network_id": "net", "project_id": "proj", "device_id": "dev", "device_owner": "compute:nova",
                "binding:host_id": "host1", "name": "netcache-intent-x", "tags": ["a"],
                "security_groups": [], "admin_state_up": true
            }})
        );
    }

    #[test]
    fn update_body_has_only_set_fields() {
        let body = serde_json::to_value(PortUpdateEnvelope::from(&PortUpdate::unbind())).unwrap();
        assert_eq!(
            body,
            json!({"port": {"device_id": "", "device_owner": "", "binding:host_id": null}})
        );
        let body = serde_json::to_value(PortUpdateEnvelope::from(&PortUpdate::bind("d", "compute:nova", "h"))).unwrap();
        assert_eq!(
            body,
            json!({"port": {"device_id": "d", "device_owner": "compute:nova", "binding:host_id": "h"}})
        );
        let body = serde_json::to_value(PortUpdateEnvelope::from(&PortUpdate::default())).unwrap();
        assert_eq!(body, json!({"port": {}}));
    }

    #[test]
    fn neutron_error_parses() {
        let e: NeutronErrorBody = serde_json::from_value(json!({
            "NeutronError": {"type": "PortNotFound", "message": "Port p could not be found.", "detail": ""}
        }))
        .unwrap();
        assert_eq!(e.error.kind, "PortNotFound");
        assert_eq!(e.error.to_string(), "Port p could not be found.");
    }

    #[test]
    fn pagination_links_parse() {
        let page: PortList = serde_json::from_value(json!({
            "ports": [],
            "ports_links": [{"href": "http://x/v2.0/ports?limit=1&marker=a", "rel": "next"},
                            {"href": "http://x/v2.0/ports?limit=1&marker=a&page_reverse=True", "rel": "previous"}]
        }))
        .unwrap();
        assert_eq!(page.links.len(), 2);
        assert_eq!(page.links[0].rel, "next");
    }
}
