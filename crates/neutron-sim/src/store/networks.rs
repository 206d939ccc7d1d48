//! Networks.

use rand::Rng;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::{Attr, Attributes, StdBody};
use super::{Caller, Kind, Obj, StdAttrs, Store, found, update_field};
use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct Network {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub admin_state_up: bool,
    pub shared: bool,
    pub external: bool,
    pub mtu: u64,
    pub subnets: Vec<String>,
    pub net_type: String,
    pub physnet: Option<String>,
    pub seg_id: Option<u64>,
    pub port_security: bool,
    pub std: StdAttrs,
}

const NETWORK_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &[
        "name",
        "admin_state_up",
        "shared",
        "router:external",
        "mtu",
        "port_security_enabled",
    ],
    create_only: &[
        "provider:network_type",
        "provider:physical_network",
        "provider:segmentation_id",
    ],
    create_only_unknown_to_update: &["availability_zone_hints", "is_default", "vlan_transparent"],
    update_only: &[],
    read_only: &["status", "subnets"],
};

/// A network create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NetworkBody {
    #[serde(flatten)]
    std: StdBody,
    name: Attr<String>,
    admin_state_up: Attr<bool>,
    shared: Attr<bool>,
    #[serde(rename = "router:external")]
    external: Attr<bool>,
    /// Not validated: a value that is no integer is ignored.
    mtu: Attr<u64>,
    port_security_enabled: Attr<bool>,
    #[serde(rename = "provider:network_type")]
    network_type: Attr<String>,
    #[serde(rename = "provider:physical_network")]
    physical_network: Attr<String>,
    #[serde(rename = "provider:segmentation_id")]
    segmentation_id: Attr<u64>,
}

impl Store {
    pub fn create_network(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: NetworkBody = NETWORK_ATTRIBUTES.parse(obj, true)?;
        let net_type = b
            .network_type
            .get("provider:network_type")?
            .unwrap_or_else(|| "vxlan".into());
        let physnet = b.physical_network.get("provider:physical_network")?;
        let tunnel = net_type == "vxlan" || net_type == "geneve";
        let seg_id = match b.segmentation_id.valid() {
            Some(s) => Some(s),
            None if tunnel => Some(self.rng.random_range(1..=10000)),
            None => None,
        };
        // The encapsulation overhead of each tunnel type off a 1500 bytes physical MTU.
        let default_mtu = match net_type.as_str() {
            "vxlan" => 1450,
            "geneve" => 1442,
            _ => 1500,
        };
        let tags = b.std.tags.tags()?;
        let std = StdAttrs::new(b.std.description.get("description")?.unwrap_or_default(), tags, 1);
        let name = b.name.get("name")?.unwrap_or_default();
        let project_id = Self::project_for(caller, b.std.project()?);
        let id = self.new_id();
        let n = Network {
            id: id.clone(),
            name,
            project_id,
            admin_state_up: b.admin_state_up.get("admin_state_up")?.unwrap_or(true),
            shared: b.shared.get("shared")?.unwrap_or(false),
            external: b.external.get("router:external")?.unwrap_or(false),
            mtu: b.mtu.valid().unwrap_or(default_mtu),
            subnets: Vec::new(),
            net_type,
            physnet,
            seg_id,
            port_security: b.port_security_enabled.get("port_security_enabled")?.unwrap_or(true),
            std,
        };
        // Neutron makes the project's default security group with its first network.
        self.ensure_default_sg(&n.project_id);
        self.networks.insert(id.clone(), n);
        Ok(id)
    }

    pub fn update_network(&mut self, obj: &Obj, id: &str) -> Result<()> {
        let b: NetworkBody = NETWORK_ATTRIBUTES.parse(obj, false)?;
        // Everything is parsed before anything changes: a bad value leaves the network as it was.
        let name = b.name.get("name")?;
        let description = b.std.description.get("description")?;
        let admin = b.admin_state_up.get("admin_state_up")?;
        let shared = b.shared.get("shared")?;
        let external = b.external.get("router:external")?;
        let port_security = b.port_security_enabled.get("port_security_enabled")?;
        let n = found(self.networks.get_mut(id), Kind::Network, id)?;
        update_field(&mut n.name, name);
        update_field(&mut n.admin_state_up, admin);
        update_field(&mut n.shared, shared);
        update_field(&mut n.external, external);
        update_field(&mut n.port_security, port_security);
        update_field(&mut n.mtu, b.mtu.valid());
        n.std.update(description);
        Ok(())
    }

    pub fn delete_network(&mut self, id: &str) -> Result<()> {
        let ports: Vec<String> = self
            .by_network
            .get(id)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        if !ports.is_empty() {
            return Err(Error::Conflict(
                "NetworkInUse",
                format!(
                    "Unable to complete operation on network {id}. There are one or more ports still in use on the network, id for these ports is: {}.",
                    ports.join(",")
                ),
            ));
        }
        let n = found(self.networks.remove(id), Kind::Network, id)?;
        for s in n.subnets {
            self.subnets.remove(&s);
        }
        Ok(())
    }

    /// Id of a network by name (for the default topology).
    /// Neutron's auto-allocated topology of `project` (its `auto_allocate`
    /// plugin): the project's `auto_allocated_network` with an IPv4 subnet,
    /// made on the first call and the same one after.
    pub fn auto_allocated_network(&mut self, project: &str) -> Result<String> {
        const NAME: &str = "auto_allocated_network";
        if let Some(n) = self
            .networks
            .values()
            .find(|n| n.name == NAME && n.project_id == project)
        {
            return Ok(n.id.clone());
        }
        let admin = Caller::admin();
        let as_obj = |v: Value| v.as_object().cloned().unwrap_or_default();
        let network = self.create_network(
            &admin,
            &as_obj(serde_json::json!({"name": NAME, "project_id": project})),
        )?;
        let subnet = serde_json::json!({
            "name": "auto_allocated_subnet_v4", "network_id": network, "project_id": project,
            "ip_version": 4, "cidr": "10.128.0.0/24",
        });
        self.create_subnet(&admin, &as_obj(subnet))?;
        Ok(network)
    }

    pub fn network_by_name(&self, name: &str) -> Option<String> {
        self.networks.values().find(|n| n.name == name).map(|n| n.id.clone())
    }

    pub(super) fn network_json(&self, n: &Network) -> Value {
        serde_json::to_value(NetworkView::new(n)).expect("serializable")
    }
}

/// A network as the API shows it. The constant fields are the extensions the sim does not
/// model, with the values Neutron shows when they are off.
#[derive(Serialize)]
struct NetworkView<'a> {
    id: &'a str,
    name: &'a str,
    tenant_id: &'a str,
    project_id: &'a str,
    admin_state_up: bool,
    mtu: u64,
    status: &'static str,
    subnets: &'a [String],
    shared: bool,
    port_security_enabled: bool,
    #[serde(rename = "router:external")]
    external: bool,
    #[serde(rename = "provider:network_type")]
    network_type: &'a str,
    #[serde(rename = "provider:physical_network")]
    physical_network: Option<&'a str>,
    #[serde(rename = "provider:segmentation_id")]
    segmentation_id: Option<u64>,
    vlan_transparent: bool,
    qinq: bool,
    is_default: bool,
    availability_zone_hints: [&'static str; 0],
    availability_zones: [&'static str; 0],
    ipv4_address_scope: Option<&'static str>,
    ipv6_address_scope: Option<&'static str>,
    #[serde(flatten)]
    std: &'a StdAttrs,
}

impl<'a> NetworkView<'a> {
    fn new(n: &'a Network) -> Self {
        NetworkView {
            id: &n.id,
            name: &n.name,
            tenant_id: &n.project_id,
            project_id: &n.project_id,
            admin_state_up: n.admin_state_up,
            mtu: n.mtu,
            status: "ACTIVE",
            subnets: &n.subnets,
            shared: n.shared,
            port_security_enabled: n.port_security,
            external: n.external,
            network_type: &n.net_type,
            physical_network: n.physnet.as_deref(),
            segmentation_id: n.seg_id,
            vlan_transparent: false,
            qinq: false,
            is_default: false,
            availability_zone_hints: [],
            availability_zones: [],
            ipv4_address_scope: None,
            ipv6_address_scope: None,
            std: &n.std,
        }
    }
}
