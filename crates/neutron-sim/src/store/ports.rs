//! Ports: MACs, fixed IPs (through [`super::ipam`]), binding, policy and the secondary
//! indexes, and the Nova events their changes cause.

use std::net::IpAddr;

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input::{Attr, AttrType, Attributes, HostId, JsonList, List, StdBody, Uuid, pyrepr};
use super::ipam::{FixedIps, parse_fixed_ip};
use super::security_groups::GroupIds;
use super::{Caller, Kind, Obj, PortIndex, StdAttrs, Store, found, index_insert, index_remove, update_field};
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Port {
    pub id: String,
    pub name: String,
    pub network_id: String,
    pub project_id: String,
    pub mac: String,
    pub admin_state_up: bool,
    pub status: String,
    pub device_id: String,
    pub device_owner: String,
    pub fixed_ips: FixedIps,
    pub allowed_address_pairs: Value,
    pub extra_dhcp_opts: Value,
    pub security_groups: Vec<String>,
    pub vnic_type: String,
    pub profile: Value,
    pub host_id: String,
    pub port_security: bool,
    pub std: StdAttrs,
}

impl Port {
    /// A port of a Nova instance: Nova gets events about it.
    pub fn is_compute(&self) -> bool {
        self.device_owner.starts_with("compute:") && uuid::Uuid::parse_str(&self.device_id).is_ok()
    }
}

const PORT_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &[
        "name",
        "admin_state_up",
        "mac_address",
        "fixed_ips",
        "device_id",
        "device_owner",
        "security_groups",
        "binding:host_id",
        "binding:profile",
        "binding:vnic_type",
        "port_security_enabled",
        "allowed_address_pairs",
        "extra_dhcp_opts",
    ],
    create_only: &["network_id"],
    create_only_unknown_to_update: &[],
    update_only: &[],
    read_only: &["status", "binding:vif_type", "binding:vif_details"],
};

const VNIC_TYPES: &[&str] = &[
    "normal",
    "direct",
    "macvtap",
    "baremetal",
    "direct-physical",
    "virtio-forwarder",
    "smart-nic",
    "vdpa",
    "remote-managed",
];

/// Device owners of the ports the service itself manages: not deletable through the API.
const SERVICE_OWNERS: &[&str] = &[
    "network:router_interface",
    "network:router_gateway",
    "network:floatingip",
];

/// A port create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PortBody {
    #[serde(flatten)]
    std: StdBody,
    network_id: Attr<Uuid>,
    name: Attr<String>,
    admin_state_up: Attr<bool>,
    mac_address: Attr<String>,
    fixed_ips: Attr<List>,
    device_id: Attr<String>,
    device_owner: Attr<String>,
    security_groups: Attr<GroupIds>,
    #[serde(rename = "binding:host_id")]
    host_id: Attr<HostId>,
    #[serde(rename = "binding:profile")]
    profile: Attr<Profile>,
    #[serde(rename = "binding:vnic_type")]
    vnic_type: Attr<VnicType>,
    port_security_enabled: Attr<bool>,
    allowed_address_pairs: Attr<JsonList>,
    extra_dhcp_opts: Attr<JsonList>,
}

/// `binding:profile`: a dictionary; `null` clears it.
#[derive(Debug, Clone)]
struct Profile(Value);

impl AttrType for Profile {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(Profile(json!({}))),
            Value::Object(_) => Some(Profile(v.clone())),
            _ => None,
        }
    }
    fn error(key: &str, v: &Value) -> Error {
        Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not a dictionary.",
            pyrepr(v)
        ))
    }
}

/// `binding:vnic_type`: one of [`VNIC_TYPES`].
#[derive(Debug, Clone)]
struct VnicType(String);

impl AttrType for VnicType {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str()
            .filter(|s| VNIC_TYPES.contains(s))
            .map(|s| VnicType(s.into()))
    }
    fn error(key: &str, v: &Value) -> Error {
        match v.as_str() {
            Some(s) => Error::bad(format!(
                "Invalid input for {key}. Reason: '{s}' is not in {}.",
                serde_json::to_string(VNIC_TYPES)
                    .unwrap_or_default()
                    .replace('"', "'")
                    .replace(',', ", ")
            )),
            None => String::error(key, v),
        }
    }
}

/// Neutron's new-default port policies: `binding:profile` is service-only (even admin is
/// refused), `binding:host_id` needs admin or service. The message lists the rules checked
/// for the attributes explicitly set, as oslo.policy renders them.
fn port_policy(caller: &Caller, obj: &Obj, action: &str) -> Result<()> {
    let set = |k: &str| {
        obj.get(k)
            .is_some_and(|v| !(v == "" || (k == "binding:vnic_type" && v == "normal")))
    };
    let profile_denied = obj.contains_key("binding:profile") && !caller.is_service;
    let host_denied = set("binding:host_id") && !caller.is_admin && !caller.is_service;
    if !(profile_denied || host_denied) {
        return Ok(());
    }
    let mut rule = format!("rule:{action}");
    for k in [
        "device_id",
        "device_owner",
        "mac_address",
        "port_security_enabled",
        "binding:vnic_type",
        "binding:host_id",
        "binding:profile",
    ] {
        if set(k) || (k == "binding:profile" && obj.contains_key(k)) {
            rule = format!("({rule} and rule:{action}:{k})");
        }
    }
    Err(Error::PolicyNotAuthorized(format!("{rule} is disallowed by policy")))
}

/// A requested `mac_address`, lower-cased, if valid.
fn parse_mac(requested: &str) -> Result<String> {
    let m = requested.to_ascii_lowercase();
    let parts: Vec<&str> = m.split(':').collect();
    let valid = parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()));
    if !valid {
        return Err(Error::bad(format!(
            "Invalid input for mac_address. Reason: '{m}' is not a valid MAC address."
        )));
    }
    Ok(m)
}

impl Store {
    pub(super) fn index_port(&mut self, p: &Port, add: bool) {
        let update = |index: &mut PortIndex, key: &str| {
            if add {
                index_insert(index, key, &p.id);
            } else {
                index_remove(index, key, &p.id);
            }
        };
        update(&mut self.by_device, &p.device_id);
        update(&mut self.by_network, &p.network_id);
        for t in &p.std.tags {
            update(&mut self.by_tag, t);
        }
    }

    /// Candidate port ids of a list from the secondary indexes (sorted, deduplicated).
    pub(super) fn port_candidates(&self, q: &super::query::ListQuery) -> Vec<String> {
        let from = |idx: &PortIndex, keys: &[String]| -> Vec<String> {
            let mut v: Vec<String> = keys.iter().filter_map(|k| idx.get(k)).flatten().cloned().collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        if let Some(ids) = q.filter("id") {
            let mut v: Vec<String> = ids.iter().filter(|i| self.ports.contains_key(*i)).cloned().collect();
            v.sort_unstable();
            v.dedup();
            v
        } else if let Some(d) = q.filter("device_id") {
            from(&self.by_device, d)
        } else if let Some(n) = q.filter("network_id") {
            from(&self.by_network, n)
        } else if let Some(first) = q.tags_all.first() {
            from(&self.by_tag, std::slice::from_ref(first))
        } else if !q.tags_any.is_empty() {
            from(&self.by_tag, &q.tags_any)
        } else {
            self.ports.keys().cloned().collect()
        }
    }

    fn new_mac(&mut self, network_id: &str) -> String {
        loop {
            let b: [u8; 3] = self.rng.random();
            let mac = format!("fa:16:3e:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2]);
            if !self.macs.contains(&(network_id.to_string(), mac.clone())) {
                return mac;
            }
        }
    }

    /// 409 if another port on the network uses `mac` (`current` is the port's own MAC).
    fn check_mac_free(&self, network_id: &str, m: &str, current: Option<&str>) -> Result<()> {
        if current != Some(m) && self.macs.contains(&(network_id.to_string(), m.to_string())) {
            return Err(Error::Conflict(
                "MacAddressInUse",
                format!("Unable to complete operation for network {network_id}. The mac address {m} is in use."),
            ));
        }
        Ok(())
    }

    /// Creates a port the service owns (router gateway or interface, floating IP), as admin.
    pub(super) fn create_service_port(&mut self, caller: &Caller, body: Value) -> Result<String> {
        let admin = Caller {
            is_admin: true,
            ..caller.clone()
        };
        self.create_port(&admin, body.as_object().unwrap_or(&Obj::new()))
    }

    /// A port's groups as asked: none on the service's own ports (Neutron trusts
    /// them), none without port security (and none may be asked for then), the
    /// project's default group when none is named.
    fn port_groups(
        &mut self,
        caller: &Caller,
        project: &str,
        device_owner: &str,
        port_security: bool,
        asked: Option<Vec<String>>,
    ) -> Result<Vec<String>> {
        if device_owner.starts_with("network:") {
            return Ok(Vec::new());
        }
        match asked {
            Some(ids) if !port_security && !ids.is_empty() => Err(Error::BadRequest(
                "PortSecurityAndIPRequiredForSecurityGroups",
                "Port security must be enabled and port must have an IP address in order to use security groups."
                    .into(),
            )),
            Some(ids) => {
                self.check_port_groups(caller, project, &ids)?;
                Ok(ids)
            }
            None if port_security => Ok(vec![self.ensure_default_sg(project)]),
            None => Ok(Vec::new()),
        }
    }

    pub fn create_port(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: PortBody = PORT_ATTRIBUTES.parse(obj, true)?;
        let network_id = b.network_id.required("network_id")?.0;
        self.check_visible(caller, Kind::Network, &network_id)?;
        port_policy(caller, obj, "create_port")?;
        let project_id = Self::project_for(caller, b.std.project()?);
        let tags = if self.tags_on_post {
            b.std.tags.tags()?
        } else {
            Default::default()
        };
        let vnic_type = b
            .vnic_type
            .get("binding:vnic_type")?
            .map_or_else(|| "normal".into(), |v| v.0);
        let profile = b.profile.get("binding:profile")?.map_or_else(|| json!({}), |p| p.0);
        let requested_mac = b.mac_address.get("mac_address")?.map(|m| parse_mac(&m)).transpose()?;
        let device_owner = b.device_owner.get("device_owner")?.unwrap_or_default();
        let security_groups = b.security_groups.get("security_groups")?.map(|g| g.0);
        let requested = b.fixed_ips.get("fixed_ips")?.and_then(|l| l.0);
        if let Some(reqs) = &requested {
            reqs.iter().try_for_each(|r| parse_fixed_ip(r).map(drop))?;
        }
        let description = b.std.description.get("description")?.unwrap_or_default();
        let name = b.name.get("name")?.unwrap_or_default();
        let admin_state_up = b.admin_state_up.get("admin_state_up")?.unwrap_or(true);
        let device_id = b.device_id.get("device_id")?.unwrap_or_default();
        let host_id = b.host_id.get("binding:host_id")?.map(|h| h.0).unwrap_or_default();
        let port_security = b.port_security_enabled.get("port_security_enabled")?.unwrap_or(true);
        // The whole body is valid (as Neutron's API layer checks it before the plugin runs):
        // only now anything is reserved, so a failure below leaves nothing behind.
        let mac = match requested_mac {
            Some(m) => {
                self.check_mac_free(&network_id, &m, None)?;
                m
            }
            None => self.new_mac(&network_id),
        };
        let security_groups = self.port_groups(caller, &project_id, &device_owner, port_security, security_groups)?;
        let fixed_ips = self.allocate(&network_id, &mac, requested.as_deref(), &[], &device_owner)?;
        // Setting the tags is a revision of its own.
        let revision = 1 + u64::from(!tags.is_empty());
        let std = StdAttrs::new(description, tags, revision);
        let id = self.new_id();
        let mut p = Port {
            id: id.clone(),
            name,
            network_id: network_id.clone(),
            project_id,
            mac: mac.clone(),
            admin_state_up,
            status: "DOWN".into(),
            device_id,
            device_owner,
            fixed_ips,
            allowed_address_pairs: b.allowed_address_pairs.valid().map_or_else(|| json!([]), |l| l.0),
            extra_dhcp_opts: b.extra_dhcp_opts.valid().map_or_else(|| json!([]), |l| l.0),
            security_groups,
            vnic_type,
            profile,
            host_id,
            port_security,
            std,
        };
        // Binding on create is a revision of its own, and activating the port another.
        if !p.host_id.is_empty() {
            p.std.revision += 1;
            if self.bind_activates {
                p.status = "ACTIVE".into();
                p.std.revision += 1;
                if p.is_compute() {
                    self.emit("network-vif-plugged", &p.device_id.clone(), &id);
                }
            }
        }
        self.macs.insert((network_id, mac));
        self.index_port(&p, true);
        self.ports.insert(id.clone(), p);
        Ok(id)
    }

    pub fn update_port(&mut self, caller: &Caller, obj: &Obj, id: &str) -> Result<()> {
        let b: PortBody = PORT_ATTRIBUTES.parse(obj, false)?;
        port_policy(caller, obj, "update_port")?;
        let old = found(self.ports.get(id), Kind::Port, id)?.clone();
        // Changes go to a copy, stored only once every value is valid.
        let mut p = old.clone();
        update_field(&mut p.name, b.name.get("name")?);
        update_field(&mut p.std.description, b.std.description.get("description")?);
        update_field(&mut p.admin_state_up, b.admin_state_up.get("admin_state_up")?);
        update_field(&mut p.device_id, b.device_id.get("device_id")?);
        update_field(&mut p.device_owner, b.device_owner.get("device_owner")?);
        update_field(
            &mut p.port_security,
            b.port_security_enabled.get("port_security_enabled")?,
        );
        update_field(&mut p.vnic_type, b.vnic_type.get("binding:vnic_type")?.map(|v| v.0));
        update_field(&mut p.profile, b.profile.get("binding:profile")?.map(|v| v.0));
        update_field(&mut p.host_id, b.host_id.get("binding:host_id")?.map(|h| h.0));
        if let Some(ids) = b.security_groups.get("security_groups")?.map(|g| g.0) {
            p.security_groups = self.port_groups(caller, &p.project_id, &p.device_owner, p.port_security, Some(ids))?;
        }
        update_field(
            &mut p.allowed_address_pairs,
            b.allowed_address_pairs.valid().map(|l| l.0),
        );
        update_field(&mut p.extra_dhcp_opts, b.extra_dhcp_opts.valid().map(|l| l.0));
        if let Some(m) = b.mac_address.get("mac_address")? {
            p.mac = parse_mac(&m)?;
            self.check_mac_free(&old.network_id, &p.mac, Some(&old.mac))?;
        }
        if let Some(reqs) = b.fixed_ips.get("fixed_ips")?.and_then(|l| l.0) {
            let new_ips = self.allocate(&old.network_id, &p.mac, Some(&reqs), &old.fixed_ips, &p.device_owner)?;
            self.release_except(&old.fixed_ips, &new_ips);
            p.fixed_ips = new_ips;
        }
        // Compared before the binding sets the status, which only follows `binding:host_id`.
        let changed = p != old;
        // Binding: a host binds (vif ovs, ACTIVE when configured); no host unbinds (DOWN).
        let mut extra_rev = 0;
        if p.host_id != old.host_id {
            extra_rev += 1;
            p.status = if !p.host_id.is_empty() && self.bind_activates {
                "ACTIVE".into()
            } else {
                "DOWN".into()
            };
        }
        if changed {
            p.std.bump();
            p.std.revision += extra_rev;
        }
        // Nova notifications, as real Neutron sends them: status transitions of a compute
        // port, then network-changed for any change to it (detaching sends nothing).
        if p.is_compute() {
            if old.status != "ACTIVE" && p.status == "ACTIVE" {
                self.emit("network-vif-plugged", &p.device_id, id);
            } else if old.status == "ACTIVE" && p.status != "ACTIVE" {
                self.emit("network-vif-unplugged", &p.device_id, id);
            }
            if changed {
                self.emit("network-changed", &p.device_id, id);
            }
        }
        self.index_port(&old, false);
        self.index_port(&p, true);
        if p.mac != old.mac {
            self.macs.remove(&(old.network_id.clone(), old.mac.clone()));
            self.macs.insert((p.network_id.clone(), p.mac.clone()));
        }
        self.ports.insert(id.to_string(), p);
        Ok(())
    }

    /// Deletes a port; `via_api` refuses the ports the service manages (router, floating IP).
    pub fn delete_port(&mut self, id: &str, via_api: bool) -> Result<()> {
        let p = found(self.ports.get(id), Kind::Port, id)?;
        if via_api && SERVICE_OWNERS.contains(&p.device_owner.as_str()) {
            return Err(Error::Conflict(
                "PortInUse",
                format!(
                    "Port {id} cannot be deleted directly via the port API: has device owner {}.",
                    p.device_owner
                ),
            ));
        }
        let Some(p) = self.ports.remove(id) else {
            return Err(Error::not_found(Kind::Port.not_found(), id));
        };
        self.index_port(&p, false);
        self.release_except(&p.fixed_ips, &[]);
        self.macs.remove(&(p.network_id.clone(), p.mac.clone()));
        for f in self.fips.values_mut().filter(|f| f.port_id.as_deref() == Some(id)) {
            f.disassociate();
            f.std.bump();
        }
        if p.is_compute() {
            self.emit("network-vif-deleted", &p.device_id, id);
        }
        Ok(())
    }
}

/// A fixed IP as ports and router gateways show it.
#[derive(Serialize)]
pub(super) struct FixedIpView<'a> {
    subnet_id: &'a str,
    ip_address: IpAddr,
}

pub(super) fn fixed_ips_view(ips: &[(String, IpAddr)]) -> Vec<FixedIpView<'_>> {
    ips.iter()
        .map(|(subnet_id, ip)| FixedIpView {
            subnet_id,
            ip_address: *ip,
        })
        .collect()
}

pub(super) fn port_json(p: &Port) -> Value {
    serde_json::to_value(PortView::new(p)).expect("serializable")
}

/// A port as the API shows it (the caller's policy then hides some `binding:*` keys).
#[derive(Serialize)]
struct PortView<'a> {
    id: &'a str,
    name: &'a str,
    network_id: &'a str,
    project_id: &'a str,
    mac_address: &'a str,
    admin_state_up: bool,
    status: &'a str,
    device_id: &'a str,
    device_owner: &'a str,
    fixed_ips: Vec<FixedIpView<'a>>,
    /// Free-form lists, kept as the request gave them.
    allowed_address_pairs: &'a Value,
    extra_dhcp_opts: &'a Value,
    security_groups: &'a [String],
    #[serde(rename = "binding:vnic_type")]
    vnic_type: &'a str,
    /// A free-form dictionary, kept as the request gave it.
    #[serde(rename = "binding:profile")]
    profile: &'a Value,
    #[serde(rename = "binding:host_id")]
    host_id: &'a str,
    #[serde(rename = "binding:vif_type")]
    vif_type: &'static str,
    #[serde(rename = "binding:vif_details")]
    vif_details: VifDetails,
    port_security_enabled: bool,
    #[serde(flatten)]
    std: &'a StdAttrs,
    tenant_id: &'a str,
}

/// `binding:vif_details`: what ML2's OVS driver reports for a bound port, `{}` for an unbound one.
#[derive(Serialize)]
#[serde(untagged)]
enum VifDetails {
    Bound {
        port_filter: bool,
        ovs_hybrid_plug: bool,
        bound_drivers: BoundDrivers,
    },
    Unbound {},
}

/// The mechanism driver that bound each level of the port: one level, the fake one.
#[derive(Serialize)]
struct BoundDrivers {
    #[serde(rename = "0")]
    level0: &'static str,
}

impl<'a> PortView<'a> {
    fn new(p: &'a Port) -> Self {
        let bound = !p.host_id.is_empty();
        PortView {
            id: &p.id,
            name: &p.name,
            network_id: &p.network_id,
            project_id: &p.project_id,
            mac_address: &p.mac,
            admin_state_up: p.admin_state_up,
            status: &p.status,
            device_id: &p.device_id,
            device_owner: &p.device_owner,
            fixed_ips: fixed_ips_view(&p.fixed_ips),
            allowed_address_pairs: &p.allowed_address_pairs,
            extra_dhcp_opts: &p.extra_dhcp_opts,
            security_groups: &p.security_groups,
            vnic_type: &p.vnic_type,
            profile: &p.profile,
            host_id: &p.host_id,
            vif_type: if bound { "ovs" } else { "unbound" },
            vif_details: if bound {
                VifDetails::Bound {
                    port_filter: true,
                    ovs_hybrid_plug: false,
                    bound_drivers: BoundDrivers { level0: "fakebind" },
                }
            } else {
                VifDetails::Unbound {}
            },
            port_security_enabled: p.port_security,
            std: &p.std,
            tenant_id: &p.project_id,
        }
    }
}
