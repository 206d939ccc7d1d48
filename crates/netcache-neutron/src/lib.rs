//! Neutron v2.0 client: the [`NeutronApi`] trait, its HTTP implementation
//! [`HttpNeutron`] (reqwest, Keystone v3 or no auth), and the Neutron wire types.
//!
//! Wire types stay in [`wire`]; the trait speaks the domain's types.

use std::collections::BTreeSet;
use std::net::IpAddr;

use async_trait::async_trait;
use netcache_domain::neutron::{FloatingIp, Network, Port, SecurityGroup, SecurityGroupRule, Subnet};
use netcache_domain::security_group_rule::NewIngressRule;
use netcache_domain::{NetworkId, PortId, ProjectId, SubnetId};

mod auth;
mod client;
mod error;
#[cfg(feature = "testing")]
mod tap;
pub mod wire;

pub use auth::{Auth, Interface, Token, TokenSource};
pub use client::{BuildError, ClientConfig, HttpNeutron, http_client, keystone_tokens};
pub use error::{Error, Result};
#[cfg(feature = "testing")]
pub use tap::{Tap, TapCall};

/// The Neutron calls netcache makes.
///
/// Idempotent calls may be retried by an implementation; `create_port` never is:
/// its ambiguous outcomes are resolved by the caller with a marker lookup.
#[async_trait]
pub trait NeutronApi: Send + Sync + 'static {
    /// Extension aliases (`GET /v2.0/extensions`).
    async fn list_extensions(&self) -> Result<BTreeSet<String>>;
    async fn list_networks(&self, filter: &NetworkFilter) -> Result<Vec<Network>>;
    async fn list_subnets(&self, filter: &SubnetFilter) -> Result<Vec<Subnet>>;
    /// `POST /v2.0/ports`. Sent exactly once.
    async fn create_port(&self, port: &PortCreate) -> Result<Port>;
    async fn show_port(&self, id: &PortId) -> Result<Port>;
    /// `GET /v2.0/ports` with server-side filters; long value lists are split into
    /// several requests and pages are followed.
    async fn list_ports(&self, filter: &PortFilter) -> Result<Vec<Port>>;
    /// `PUT /v2.0/ports/{id}`, with `If-Match: revision_number=N` when given.
    async fn update_port(&self, id: &PortId, update: &PortUpdate, if_revision: Option<u64>) -> Result<Port>;
    /// `DELETE /v2.0/ports/{id}`, with `If-Match: revision_number=N` when given.
    async fn delete_port(&self, id: &PortId, if_revision: Option<u64>) -> Result<()>;
    /// Sets a port's tags, replacing any (`PUT /v2.0/ports/{id}/tags`, one call).
    async fn replace_port_tags(&self, id: &PortId, tags: &[String]) -> Result<()>;
    async fn list_floating_ips(&self, filter: &FloatingIpFilter) -> Result<Vec<FloatingIp>>;
    async fn show_floating_ip(&self, id: &str) -> Result<FloatingIp>;
    /// `POST /v2.0/floatingips`. Sent exactly once.
    async fn create_floating_ip(&self, create: &FloatingIpCreate) -> Result<FloatingIp>;
    /// `PUT /v2.0/floatingips/{id}`: associated with `target`, or (`None`) with no port.
    async fn update_floating_ip(&self, id: &str, target: Option<&FloatingIpTarget>) -> Result<FloatingIp>;
    async fn delete_floating_ip(&self, id: &str) -> Result<()>;
    /// `GET /v2.0/security-groups` for ids, names and owners only (no rules).
    async fn list_security_groups(&self, filter: &SecurityGroupFilter) -> Result<Vec<SecurityGroup>>;
    /// `GET /v2.0/security-groups/{id}`: the group in full.
    async fn show_security_group(&self, id: &str) -> Result<SecurityGroup>;
    /// `POST /v2.0/security-groups`, owned by `project`.
    async fn create_security_group(&self, project: &ProjectId, name: &str, description: &str) -> Result<SecurityGroup>;
    /// `PUT /v2.0/security-groups/{id}` with a new name and description.
    async fn update_security_group(&self, id: &str, name: &str, description: &str) -> Result<SecurityGroup>;
    /// `DELETE /v2.0/security-groups/{id}` (Neutron's 409 while a port is in it).
    async fn delete_security_group(&self, id: &str) -> Result<()>;
    async fn show_security_group_rule(&self, id: &str) -> Result<SecurityGroupRule>;
    /// `POST /v2.0/security-group-rules`.
    async fn create_security_group_rule(&self, rule: &NewIngressRule) -> Result<SecurityGroupRule>;
    async fn delete_security_group_rule(&self, id: &str) -> Result<()>;
    /// `GET /v2.0/auto-allocated-topology/{project_id}`: the project's network,
    /// made by Neutron on the first call (its `auto_allocate` plugin, with a
    /// default external network); idempotent.
    async fn auto_allocated_topology(&self, project: &ProjectId) -> Result<NetworkId>;
}

/// Body of a create-port request.
#[derive(Clone, Debug, PartialEq)]
pub struct PortCreate {
    pub network_id: NetworkId,
    /// Project owning the port (sent as `project_id`; needs an admin/service caller).
    pub project_id: Option<ProjectId>,
    pub fixed_ips: Vec<FixedIpRequest>,
    pub device_id: String,
    pub device_owner: String,
    pub binding_host_id: Option<String>,
    pub name: Option<String>,
    /// Sent in the body; applied only if Neutron has `tag-ports-during-bulk-creation`.
    pub tags: Vec<String>,
    pub security_groups: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FixedIpRequest {
    pub subnet_id: Option<SubnetId>,
    pub ip_address: Option<IpAddr>,
}

/// A partial port update: `None` fields are not sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PortUpdate {
    pub device_id: Option<String>,
    pub device_owner: Option<String>,
    /// `Some(None)` clears the binding host (`null`).
    pub binding_host_id: Option<Option<String>>,
    pub binding_profile: Option<serde_json::Value>,
    /// The port's addresses, replacing the ones it has.
    pub fixed_ips: Option<Vec<FixedIpRequest>>,
    /// The port's security groups, replacing the ones it is in.
    pub security_groups: Option<Vec<String>>,
}

impl PortUpdate {
    /// Binds a port to a server on a host.
    #[must_use]
    pub fn bind(device_id: &str, device_owner: &str, host: &str) -> Self {
        Self {
            device_id: Some(device_id.to_owned()),
            device_owner: Some(device_owner.to_owned()),
            binding_host_id: Some(Some(host.to_owned())),
            ..Self::default()
        }
    }

    /// Sets only `device_id`: a guarded write that moves the port's revision on
    /// without binding it to a host.
    #[must_use]
    pub fn claim(device_id: &str) -> Self {
        Self {
            device_id: Some(device_id.to_owned()),
            ..Self::default()
        }
    }

    /// Clears `device_id`, `device_owner` and `binding:host_id` (Nova's unbind).
    #[must_use]
    pub fn unbind() -> Self {
        Self {
            device_id: Some(String::new()),
            device_owner: Some(String::new()),
            binding_host_id: Some(None),
            ..Self::default()
        }
    }

    /// Puts the port in exactly these security groups.
    #[must_use]
    pub fn security_groups(groups: Vec<String>) -> Self {
        Self {
            security_groups: Some(groups),
            ..Self::default()
        }
    }

    /// Keeps exactly these addresses on the port.
    #[must_use]
    pub fn fixed_ips(keep: Vec<FixedIpRequest>) -> Self {
        Self {
            fixed_ips: Some(keep),
            ..Self::default()
        }
    }
}

/// Server-side filters for `GET /v2.0/ports`. Empty lists do not filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PortFilter {
    pub ids: Vec<PortId>,
    /// OR of device ids.
    pub device_ids: Vec<String>,
    pub network_ids: Vec<NetworkId>,
    pub project_id: Option<ProjectId>,
    pub device_owner: Option<String>,
    pub name: Option<String>,
    /// All of these tags.
    pub tags: Vec<String>,
    /// Any of these tags.
    pub tags_any: Vec<String>,
    /// Ports holding this address (`fixed_ips=ip_address=…`).
    pub fixed_ip: Option<IpAddr>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetworkFilter {
    pub ids: Vec<NetworkId>,
    pub name: Option<String>,
    pub project_id: Option<ProjectId>,
    pub shared: Option<bool>,
    pub external: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubnetFilter {
    pub ids: Vec<SubnetId>,
    pub network_ids: Vec<NetworkId>,
}

/// Server-side filters for `GET /v2.0/security-groups`. Empty lists do not filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecurityGroupFilter {
    /// OR of ids.
    pub ids: Vec<String>,
    /// The groups of this project. Neutron makes the project's `default` group
    /// first if it has none.
    pub project_id: Option<ProjectId>,
    /// Each group whole, its description and rules too (else its id, name and
    /// owner alone, as Nova asks for those).
    pub in_full: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FloatingIpFilter {
    /// OR of port ids.
    pub port_ids: Vec<PortId>,
    /// OR of owning projects.
    pub project_ids: Vec<ProjectId>,
    pub floating_ip_address: Option<IpAddr>,
}

/// Body of a create-floating-IP request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloatingIpCreate {
    /// The external network the address is taken from.
    pub floating_network_id: NetworkId,
    /// Project owning it (needs an admin/service caller).
    pub project_id: ProjectId,
}

/// The fixed IP of a port a floating IP is associated with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloatingIpTarget {
    pub port_id: PortId,
    pub fixed_ip_address: IpAddr,
}
