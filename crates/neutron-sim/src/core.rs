//! In-memory Neutron data model: networks, subnets (IPAM), ports (with secondary indexes),
//! routers and floating IPs. Synchronous; the HTTP layer holds the lock only around calls.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

use ipnet::IpNet;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::query;

pub(crate) type Obj = Map<String, Value>;

/// Who is calling (noauth headers).
#[derive(Debug, Clone)]
pub struct Caller {
    pub project_id: String,
    pub is_admin: bool,
    pub is_service: bool,
}

impl Caller {
    pub fn admin() -> Self {
        Caller {
            project_id: "fake_project_id".into(),
            is_admin: true,
            is_service: false,
        }
    }
    fn sees(&self, project_id: &str) -> bool {
        self.is_admin || self.is_service || self.project_id == project_id
    }
}

/// An event for Nova's `os-server-external-events`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NovaEvent {
    pub name: String,
    pub server_uuid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub tag: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Network,
    Subnet,
    Port,
    Router,
    FloatingIp,
}

impl Kind {
    pub fn not_found(self) -> &'static str {
        match self {
            Kind::Network => "NetworkNotFound",
            Kind::Subnet => "SubnetNotFound",
            Kind::Port => "PortNotFound",
            Kind::Router => "RouterNotFound",
            Kind::FloatingIp => "FloatingIPNotFound",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct StdAttrs {
    created_at: String,
    updated_at: String,
    revision: u64,
    tags: BTreeSet<String>,
    description: String,
}

impl StdAttrs {
    fn new(description: String, tags: BTreeSet<String>, revision: u64) -> Self {
        let now = now();
        StdAttrs {
            created_at: now.clone(),
            updated_at: now,
            revision,
            tags,
            description,
        }
    }
    fn bump(&mut self) {
        self.revision += 1;
        self.updated_at = now();
    }
    /// The standard part of an update: the new description, if any, and a new revision
    /// (Neutron bumps it even when nothing changed).
    fn update(&mut self, description: Option<String>) {
        update_field(&mut self.description, description);
        self.bump();
    }
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[derive(Debug)]
struct Network {
    id: String,
    name: String,
    project_id: String,
    admin_state_up: bool,
    shared: bool,
    external: bool,
    mtu: u64,
    subnets: Vec<String>,
    net_type: String,
    physnet: Option<String>,
    seg_id: Option<u64>,
    port_security: bool,
    std: StdAttrs,
}

#[derive(Debug)]
struct Subnet {
    id: String,
    name: String,
    project_id: String,
    network_id: String,
    cidr: IpNet,
    gateway: Option<IpAddr>,
    pools: Vec<(u128, u128)>,
    enable_dhcp: bool,
    dns: Value,
    host_routes: Value,
    ra_mode: Option<String>,
    addr_mode: Option<String>,
    std: StdAttrs,
    allocated: HashSet<u128>,
    cursor: u128,
}

impl Subnet {
    fn v6(&self) -> bool {
        matches!(self.cidr, IpNet::V6(_))
    }
    fn slaac(&self) -> bool {
        matches!(self.addr_mode.as_deref(), Some("slaac" | "dhcpv6-stateless"))
    }
    /// Next free address from the pools, or `None` when exhausted.
    fn alloc_next(&mut self) -> Option<IpAddr> {
        let v6 = self.v6();
        self.alloc_any().map(|ip| u128_ip(ip, v6))
    }
    /// Records and returns the SLAAC address of `mac` on this (IPv6) subnet.
    fn alloc_slaac(&mut self, mac: &str) -> IpAddr {
        let ip = eui64(self.cidr, mac);
        self.allocated.insert(ip_u128(ip));
        ip
    }
    /// Next free address from the pools (next-fit, wrapping), or `None` when exhausted.
    fn alloc_any(&mut self) -> Option<u128> {
        let first = self.pools.first()?.0;
        let total: u128 = self.pools.iter().map(|(s, e)| e - s + 1).fold(0, u128::saturating_add);
        let mut cand = if self.in_pools(self.cursor) { self.cursor } else { first };
        for _ in 0..total.min(1 << 20) {
            let next = self.next_in_pools(cand);
            if !self.allocated.contains(&cand) {
                self.allocated.insert(cand);
                self.cursor = next;
                return Some(cand);
            }
            cand = next;
        }
        None
    }
    fn in_pools(&self, x: u128) -> bool {
        self.pools.iter().any(|(s, e)| (*s..=*e).contains(&x))
    }
    fn next_in_pools(&self, x: u128) -> u128 {
        for (i, (s, e)) in self.pools.iter().enumerate() {
            if (*s..=*e).contains(&x) {
                return if x < *e {
                    x + 1
                } else {
                    self.pools[(i + 1) % self.pools.len()].0
                };
            }
        }
        self.pools[0].0
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Port {
    id: String,
    name: String,
    network_id: String,
    project_id: String,
    mac: String,
    admin_state_up: bool,
    status: String,
    device_id: String,
    device_owner: String,
    fixed_ips: Vec<(String, IpAddr)>,
    allowed_address_pairs: Value,
    extra_dhcp_opts: Value,
    security_groups: Vec<String>,
    vnic_type: String,
    profile: Value,
    host_id: String,
    port_security: bool,
    std: StdAttrs,
}

impl Port {
    fn is_compute(&self) -> bool {
        self.device_owner.starts_with("compute:") && uuid::Uuid::parse_str(&self.device_id).is_ok()
    }
}

#[derive(Debug)]
struct Router {
    id: String,
    name: String,
    project_id: String,
    admin_state_up: bool,
    gw_network: Option<String>,
    gw_port: Option<String>,
    enable_snat: bool,
    std: StdAttrs,
}

#[derive(Debug)]
struct FloatingIp {
    id: String,
    project_id: String,
    network_id: String,
    address: IpAddr,
    own_port: String,
    port_id: Option<String>,
    fixed_ip: Option<IpAddr>,
    router_id: Option<String>,
    std: StdAttrs,
}

impl FloatingIp {
    fn disassociate(&mut self) {
        self.port_id = None;
        self.fixed_ip = None;
        self.router_id = None;
    }
}

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

/// Port ids by a key (device, network or tag).
type PortIndex = HashMap<String, BTreeSet<String>>;

fn index_insert(index: &mut PortIndex, key: &str, port_id: &str) {
    index.entry(key.to_string()).or_default().insert(port_id.to_string());
}

/// Removes `port_id` under `key`, and the key with its last port.
fn index_remove(index: &mut PortIndex, key: &str, port_id: &str) {
    if let Some(ids) = index.get_mut(key) {
        ids.remove(port_id);
        if ids.is_empty() {
            index.remove(key);
        }
    }
}

/// The whole in-memory state.
pub(crate) struct Store {
    networks: BTreeMap<String, Network>,
    subnets: BTreeMap<String, Subnet>,
    ports: BTreeMap<String, Port>,
    routers: BTreeMap<String, Router>,
    fips: BTreeMap<String, FloatingIp>,
    by_device: PortIndex,
    by_network: PortIndex,
    by_tag: PortIndex,
    macs: HashSet<(String, String)>,
    default_sgs: HashMap<String, String>,
    rng: ChaCha8Rng,
    pub bind_activates: bool,
    pub tags_on_post: bool,
    pub notify: bool,
    pub events: Vec<NovaEvent>,
}

// ---------- small input helpers ----------

fn pyrepr(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

/// How a create (`POST`) or update (`PUT`) body may use an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Settable,
    ReadOnly,
    Unknown,
}

/// A resource's attributes, as its Neutron attribute map has them (each name in one list).
struct Attributes {
    create_and_update: &'static [&'static str],
    /// Settable on create, read-only afterwards.
    create_only: &'static [&'static str],
    /// Settable on create; unknown to an update ("Unrecognized attribute(s)").
    create_only_unknown_to_update: &'static [&'static str],
    /// Unknown to a create.
    update_only: &'static [&'static str],
    read_only: &'static [&'static str],
}

/// The standard attributes every resource has.
const STANDARD_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["description"],
    create_only: &["project_id", "tenant_id", "tags"],
    create_only_unknown_to_update: &[],
    update_only: &[],
    read_only: &["id", "revision_number", "created_at", "updated_at"],
};

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

const SUBNET_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["name", "enable_dhcp", "dns_nameservers", "host_routes", "service_types"],
    create_only: &[
        "network_id",
        "ip_version",
        "cidr",
        "ipv6_ra_mode",
        "ipv6_address_mode",
        "subnetpool_id",
    ],
    create_only_unknown_to_update: &["gateway_ip", "allocation_pools", "segment_id"],
    update_only: &[],
    read_only: &[],
};

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

const ROUTER_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["name", "admin_state_up", "external_gateway_info"],
    create_only: &[],
    create_only_unknown_to_update: &["distributed", "ha", "availability_zone_hints", "flavor_id"],
    update_only: &["routes"],
    read_only: &["status"],
};

const FLOATING_IP_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["port_id", "fixed_ip_address"],
    create_only: &["floating_network_id", "floating_ip_address"],
    create_only_unknown_to_update: &["subnet_id", "dns_name", "dns_domain"],
    update_only: &[],
    read_only: &["status", "router_id", "port_details"],
};

impl Attributes {
    fn access(&self, key: &str, create: bool) -> Access {
        let listed = |names: &[&str]| names.contains(&key);
        let settable = if create {
            listed(self.create_only) || listed(self.create_only_unknown_to_update)
        } else {
            listed(self.update_only)
        };
        if settable || listed(self.create_and_update) {
            Access::Settable
        } else if listed(self.read_only) || (!create && listed(self.create_only)) {
            Access::ReadOnly
        } else {
            Access::Unknown
        }
    }

    /// Checks a create or update body against these and the standard attributes.
    fn check(&self, obj: &Obj, create: bool) -> Result<()> {
        check_keys(obj, create, |key| match STANDARD_ATTRIBUTES.access(key, create) {
            Access::Unknown => self.access(key, create),
            known => known,
        })
    }
}

/// 400 for the first read-only attribute of `obj`, else for all the unknown ones.
fn check_keys(obj: &Obj, create: bool, access: impl Fn(&str) -> Access) -> Result<()> {
    let mut unknown = Vec::new();
    for k in obj.keys() {
        match access(k) {
            Access::Settable => {}
            Access::ReadOnly if create => {
                return Err(Error::bad(format!("Attribute '{k}' not allowed in POST")));
            }
            Access::ReadOnly => {
                return Err(Error::bad(format!("Cannot update read-only attribute {k}")));
            }
            Access::Unknown => unknown.push(k.as_str()),
        }
    }
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::bad(format!(
            "Unrecognized attribute(s) '{}'",
            unknown.join(", ")
        )))
    }
}

/// 400 for any attribute but `allowed` (bodies without standard attributes).
fn check_only(obj: &Obj, allowed: &[&str]) -> Result<()> {
    check_keys(obj, true, |key| {
        if allowed.contains(&key) {
            Access::Settable
        } else {
            Access::Unknown
        }
    })
}

/// Sets `field` when the body gave a value for it.
fn update_field<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// `Some(item)`, or `kind`'s 404 for `id`.
fn found<T>(item: Option<T>, kind: Kind, id: &str) -> Result<T> {
    item.ok_or_else(|| Error::not_found(kind.not_found(), id))
}

/// `binding:host_id`: real Neutron takes `null` as "no host" (stored as "").
fn get_host(obj: &Obj) -> Result<Option<String>> {
    match obj.get("binding:host_id") {
        Some(Value::Null) => Ok(Some(String::new())),
        _ => get_str(obj, "binding:host_id"),
    }
}

fn get_str(obj: &Obj, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not a valid string.",
            pyrepr(v)
        ))),
    }
}

pub(crate) fn parse_bool(v: &Value) -> Result<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") || s == "1" => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") || s == "0" => Ok(false),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
        other => Err(Error::invalid(format!(
            "{} cannot be converted to boolean",
            pyrepr(other)
        ))),
    }
}

fn get_bool(obj: &Obj, key: &str) -> Result<Option<bool>> {
    obj.get(key).map(parse_bool).transpose()
}

fn get_uuid(obj: &Obj, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if uuid::Uuid::parse_str(s).is_ok() => Ok(Some(s.clone())),
        Some(v) => Err(Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not a valid UUID.",
            pyrepr(v)
        ))),
    }
}

fn required<T>(v: Option<T>, key: &str) -> Result<T> {
    v.ok_or_else(|| {
        Error::bad(format!(
            "Failed to parse request. Required attribute '{key}' not specified"
        ))
    })
}

/// `tags` of a create body (none when absent).
fn get_tags(obj: &Obj) -> Result<BTreeSet<String>> {
    Ok(obj.get("tags").map(parse_tags).transpose()?.unwrap_or_default())
}

/// A JSON list attribute stored as given; anything but a list is ignored.
fn get_array(obj: &Obj, key: &str) -> Option<Value> {
    obj.get(key).filter(|v| v.is_array()).cloned()
}

fn string_items(list: &[Value]) -> Vec<String> {
    list.iter().filter_map(|v| v.as_str().map(String::from)).collect()
}

fn get_list(obj: &Obj, key: &str) -> Result<Option<Vec<Value>>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a.clone())),
        Some(v) => Err(Error::invalid(format!("{} is not a list", pyrepr(v)))),
    }
}

/// Validates a tag list (strings, at most 255 chars, no duplicates).
pub(crate) fn parse_tags(v: &Value) -> Result<BTreeSet<String>> {
    let Value::Array(items) = v else {
        return Err(Error::invalid(format!("{} is not a list", pyrepr(v))));
    };
    let mut out = BTreeSet::new();
    for item in items {
        let Value::String(s) = item else {
            return Err(Error::invalid(format!("{} is not a valid string", pyrepr(item))));
        };
        check_tag(s)?;
        if !out.insert(s.clone()) {
            return Err(Error::invalid(format!("Duplicate items in the list: '{s}'")));
        }
    }
    Ok(out)
}

pub(crate) fn check_tag(s: &str) -> Result<()> {
    if s.chars().count() > 255 {
        return Err(Error::invalid(format!("'{s}' exceeds maximum length of 255")));
    }
    Ok(())
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

fn ip_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

fn u128_ip(v: u128, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(v.into())
    } else {
        IpAddr::V4((v as u32).into())
    }
}

fn parse_ip(v: &Value, key: &str) -> Result<IpAddr> {
    v.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
        Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not a valid IP address.",
            pyrepr(v)
        ))
    })
}

/// A requested `mac_address`, lower-cased, if valid.
fn parse_mac(requested: &str) -> Result<String> {
    let m = requested.to_ascii_lowercase();
    if !is_mac(&m) {
        return Err(Error::bad(format!(
            "Invalid input for mac_address. Reason: '{m}' is not a valid MAC address."
        )));
    }
    Ok(m)
}

/// The `(subnet_id, ip_address)` of a `fixed_ips` entry, if well-formed.
fn parse_fixed_ip(r: &Value) -> Result<(Option<String>, Option<IpAddr>)> {
    let Some(r) = r.as_object() else {
        return Err(Error::invalid(format!(
            "Invalid data format for fixed IP: {}",
            pyrepr(r)
        )));
    };
    check_only(r, &["subnet_id", "ip_address"])?;
    let sid = get_uuid(r, "subnet_id")?;
    let ip = r.get("ip_address").map(|v| parse_ip(v, "ip_address")).transpose()?;
    Ok((sid, ip))
}

// ---------- the store ----------

impl Store {
    pub fn new(seed: u64, bind_activates: bool, tags_on_post: bool) -> Self {
        Store {
            networks: BTreeMap::new(),
            subnets: BTreeMap::new(),
            ports: BTreeMap::new(),
            routers: BTreeMap::new(),
            fips: BTreeMap::new(),
            by_device: HashMap::new(),
            by_network: HashMap::new(),
            by_tag: HashMap::new(),
            macs: HashSet::new(),
            default_sgs: HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            bind_activates,
            tags_on_post,
            notify: false,
            events: Vec::new(),
        }
    }

    pub fn clear(&mut self) {
        let fresh = Store::new(self.rng.random(), self.bind_activates, self.tags_on_post);
        let notify = self.notify;
        *self = fresh;
        self.notify = notify;
    }

    fn new_id(&mut self) -> String {
        uuid::Builder::from_random_bytes(self.rng.random())
            .into_uuid()
            .to_string()
    }

    fn emit(&mut self, name: &str, server: &str, tag: &str) {
        if self.notify {
            // Only the vif plugged/unplugged events carry a status.
            let status = name.ends_with("plugged").then(|| "completed".to_string());
            self.events.push(NovaEvent {
                name: name.into(),
                server_uuid: server.into(),
                status,
                tag: tag.into(),
            });
        }
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// Id of a visible network by name (for the default topology).
    pub fn network_by_name(&self, name: &str) -> Option<String> {
        self.networks.values().find(|n| n.name == name).map(|n| n.id.clone())
    }

    fn subnet_ids(&self, network_id: &str) -> Vec<String> {
        self.networks
            .get(network_id)
            .map(|n| n.subnets.clone())
            .unwrap_or_default()
    }

    pub fn subnets_of(&self, network_id: &str) -> Vec<(String, bool)> {
        self.networks
            .get(network_id)
            .map(|n| {
                n.subnets
                    .iter()
                    .filter_map(|s| self.subnets.get(s))
                    .map(|s| (s.id.clone(), s.v6()))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn router_by_name(&self, name: &str) -> Option<String> {
        self.routers.values().find(|r| r.name == name).map(|r| r.id.clone())
    }

    fn project_for(caller: &Caller, obj: &Obj) -> Result<String> {
        let body = get_str(obj, "project_id")?.or(get_str(obj, "tenant_id")?);
        Ok(match body {
            Some(p) if caller.is_admin => p,
            _ => caller.project_id.clone(),
        })
    }

    fn std_of(&mut self, kind: Kind, id: &str) -> Option<&mut StdAttrs> {
        match kind {
            Kind::Network => self.networks.get_mut(id).map(|x| &mut x.std),
            Kind::Subnet => self.subnets.get_mut(id).map(|x| &mut x.std),
            Kind::Port => self.ports.get_mut(id).map(|x| &mut x.std),
            Kind::Router => self.routers.get_mut(id).map(|x| &mut x.std),
            Kind::FloatingIp => self.fips.get_mut(id).map(|x| &mut x.std),
        }
    }

    fn owner_of(&self, kind: Kind, id: &str) -> Option<(&str, bool)> {
        match kind {
            Kind::Network => self
                .networks
                .get(id)
                .map(|x| (x.project_id.as_str(), x.shared || x.external)),
            Kind::Subnet => self.subnets.get(id).map(|x| {
                let shared = self.networks.get(&x.network_id).is_some_and(|n| n.shared || n.external);
                (x.project_id.as_str(), shared)
            }),
            Kind::Port => self.ports.get(id).map(|x| (x.project_id.as_str(), false)),
            Kind::Router => self.routers.get(id).map(|x| (x.project_id.as_str(), false)),
            Kind::FloatingIp => self.fips.get(id).map(|x| (x.project_id.as_str(), false)),
        }
    }

    /// 404 unless `id` exists and the caller may see it.
    pub fn check_visible(&self, caller: &Caller, kind: Kind, id: &str) -> Result<()> {
        match self.owner_of(kind, id) {
            Some((p, shared)) if shared || caller.sees(p) => Ok(()),
            _ => Err(Error::not_found(kind.not_found(), id)),
        }
    }

    /// Checks `If-Match: revision_number=N`.
    pub fn check_revision(&mut self, kind: Kind, id: &str, if_match: Option<&str>) -> Result<()> {
        let Some(expected) = if_match.and_then(|h| {
            h.split(',').find_map(|p| {
                p.trim()
                    .strip_prefix("revision_number=")
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
        }) else {
            return Ok(());
        };
        let current = self.std_of(kind, id).map(|s| s.revision).unwrap_or(0);
        if current != expected {
            return Err(Error::RevisionMismatch { expected, current });
        }
        Ok(())
    }

    // ---------- rendering ----------

    pub fn render(&self, caller: &Caller, kind: Kind, id: &str) -> Option<Value> {
        let mut v = match kind {
            Kind::Network => self.networks.get(id).map(|n| self.network_json(n)),
            Kind::Subnet => self.subnets.get(id).map(|s| self.subnet_json(s)),
            Kind::Port => self.ports.get(id).map(port_json),
            Kind::Router => self.routers.get(id).map(|r| self.router_json(r)),
            Kind::FloatingIp => self.fips.get(id).map(|f| self.fip_json(f)),
        }?;
        if !caller.is_admin
            && let Some(o) = v.as_object_mut()
        {
            o.retain(|k, _| {
                !k.starts_with("provider:")
                    && (caller.is_service || !k.starts_with("binding:") || k == "binding:vnic_type")
            });
        }
        Some(v)
    }

    fn network_json(&self, n: &Network) -> Value {
        json!({
            "id": n.id, "name": n.name, "tenant_id": n.project_id, "project_id": n.project_id,
            "admin_state_up": n.admin_state_up, "mtu": n.mtu, "status": "ACTIVE", "subnets": n.subnets,
            "shared": n.shared, "port_security_enabled": n.port_security, "router:external": n.external,
            "provider:network_type": n.net_type, "provider:physical_network": n.physnet,
            "provider:segmentation_id": n.seg_id, "vlan_transparent": false, "qinq": false, "is_default": false,
            "availability_zone_hints": [], "availability_zones": [], "ipv4_address_scope": null,
            "ipv6_address_scope": null, "description": n.std.description, "tags": n.std.tags,
            "created_at": n.std.created_at, "updated_at": n.std.updated_at, "revision_number": n.std.revision,
        })
    }

    fn subnet_json(&self, s: &Subnet) -> Value {
        let v6 = s.v6();
        let pools: Vec<Value> = s
            .pools
            .iter()
            .map(|(a, b)| json!({"start": u128_ip(*a, v6).to_string(), "end": u128_ip(*b, v6).to_string()}))
            .collect();
        let external = self.networks.get(&s.network_id).is_some_and(|n| n.external);
        json!({
            "id": s.id, "name": s.name, "project_id": s.project_id, "network_id": s.network_id,
            "ip_version": if v6 { 6 } else { 4 }, "subnetpool_id": null, "enable_dhcp": s.enable_dhcp,
            "ipv6_ra_mode": s.ra_mode, "ipv6_address_mode": s.addr_mode,
            "gateway_ip": s.gateway.map(|g| g.to_string()), "cidr": s.cidr.to_string(),
            "allocation_pools": pools, "host_routes": s.host_routes, "dns_nameservers": s.dns,
            "description": s.std.description, "router:external": external, "service_types": [],
            "tags": s.std.tags, "created_at": s.std.created_at, "updated_at": s.std.updated_at,
            "revision_number": s.std.revision, "tenant_id": s.project_id,
        })
    }

    fn router_json(&self, r: &Router) -> Value {
        let gw = r.gw_network.as_ref().map(|net| {
            let ips: Vec<Value> = r
                .gw_port
                .as_ref()
                .and_then(|p| self.ports.get(p))
                .map(|p| fixed_ips_json(&p.fixed_ips))
                .unwrap_or_default();
            json!({"network_id": net, "external_fixed_ips": ips, "enable_snat": r.enable_snat})
        });
        json!({
            "id": r.id, "name": r.name, "project_id": r.project_id, "admin_state_up": r.admin_state_up,
            "status": "ACTIVE", "external_gateway_info": gw, "description": r.std.description,
            "availability_zones": [], "distributed": false, "ha": false, "availability_zone_hints": [],
            "routes": [], "flavor_id": null, "tags": r.std.tags, "created_at": r.std.created_at,
            "updated_at": r.std.updated_at, "revision_number": r.std.revision, "tenant_id": r.project_id,
        })
    }

    fn fip_json(&self, f: &FloatingIp) -> Value {
        let details = f.port_id.as_ref().and_then(|p| self.ports.get(p)).map(|p| {
            json!({
                "name": p.name, "network_id": p.network_id, "mac_address": p.mac,
                "admin_state_up": p.admin_state_up, "status": p.status, "device_id": p.device_id,
                "device_owner": p.device_owner,
            })
        });
        json!({
            "id": f.id, "tenant_id": f.project_id, "project_id": f.project_id,
            "floating_ip_address": f.address.to_string(), "floating_network_id": f.network_id,
            "router_id": f.router_id, "port_id": f.port_id, "fixed_ip_address": f.fixed_ip.map(|i| i.to_string()),
            "status": "DOWN", "description": f.std.description, "port_details": details, "tags": f.std.tags,
            "created_at": f.std.created_at, "updated_at": f.std.updated_at, "revision_number": f.std.revision,
        })
    }

    // ---------- listing ----------

    /// Lists `kind` with Neutron's filters, sorting, pagination and `fields`.
    pub fn list(&self, caller: &Caller, kind: Kind, params: &[(String, String)], base_url: &str) -> Result<Value> {
        let q = query::ListQuery::parse(kind, params)?;
        let ids: Vec<String> = match kind {
            Kind::Port => self.port_candidates(&q),
            Kind::Network => self.networks.keys().cloned().collect(),
            Kind::Subnet => self.subnets.keys().cloned().collect(),
            Kind::Router => self.routers.keys().cloned().collect(),
            Kind::FloatingIp => self.fips.keys().cloned().collect(),
        };
        let mut items = Vec::new();
        for id in ids {
            let Some((p, shared)) = self.owner_of(kind, &id) else {
                continue;
            };
            if !(shared || caller.sees(p)) {
                continue;
            }
            if let Some(v) = self.render(caller, kind, &id)
                && q.matches(&v)?
            {
                items.push(v);
            }
        }
        q.finish(kind, items, params, base_url)
    }

    /// Candidate port ids from the secondary indexes (sorted, deduplicated).
    fn port_candidates(&self, q: &query::ListQuery) -> Vec<String> {
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

    // ---------- networks ----------

    pub fn create_network(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        NETWORK_ATTRIBUTES.check(obj, true)?;
        let net_type = get_str(obj, "provider:network_type")?.unwrap_or_else(|| "vxlan".into());
        let physnet = get_str(obj, "provider:physical_network")?;
        let seg_id = match obj.get("provider:segmentation_id").and_then(Value::as_u64) {
            Some(s) => Some(s),
            None if net_type == "vxlan" || net_type == "geneve" => Some(self.rng.random_range(1..=10000)),
            None => None,
        };
        let default_mtu = if net_type == "vxlan" {
            1450
        } else if net_type == "geneve" {
            1442
        } else {
            1500
        };
        let tags = get_tags(obj)?;
        let std = StdAttrs::new(get_str(obj, "description")?.unwrap_or_default(), tags, 1);
        let id = self.new_id();
        let n = Network {
            id: id.clone(),
            name: get_str(obj, "name")?.unwrap_or_default(),
            project_id: Self::project_for(caller, obj)?,
            admin_state_up: get_bool(obj, "admin_state_up")?.unwrap_or(true),
            shared: get_bool(obj, "shared")?.unwrap_or(false),
            external: get_bool(obj, "router:external")?.unwrap_or(false),
            mtu: obj.get("mtu").and_then(Value::as_u64).unwrap_or(default_mtu),
            subnets: Vec::new(),
            net_type,
            physnet,
            seg_id,
            port_security: get_bool(obj, "port_security_enabled")?.unwrap_or(true),
            std,
        };
        self.networks.insert(id.clone(), n);
        Ok(id)
    }

    pub fn update_network(&mut self, obj: &Obj, id: &str) -> Result<()> {
        NETWORK_ATTRIBUTES.check(obj, false)?;
        // Everything is parsed before anything changes: a bad value leaves the network as it was.
        let name = get_str(obj, "name")?;
        let description = get_str(obj, "description")?;
        let admin = get_bool(obj, "admin_state_up")?;
        let shared = get_bool(obj, "shared")?;
        let external = get_bool(obj, "router:external")?;
        let port_security = get_bool(obj, "port_security_enabled")?;
        let n = found(self.networks.get_mut(id), Kind::Network, id)?;
        update_field(&mut n.name, name);
        update_field(&mut n.admin_state_up, admin);
        update_field(&mut n.shared, shared);
        update_field(&mut n.external, external);
        update_field(&mut n.port_security, port_security);
        update_field(&mut n.mtu, obj.get("mtu").and_then(Value::as_u64));
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

    // ---------- subnets ----------

    pub fn create_subnet(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        SUBNET_ATTRIBUTES.check(obj, true)?;
        let network_id = required(get_uuid(obj, "network_id")?, "network_id")?;
        let ip_version = required(obj.get("ip_version").cloned(), "ip_version")?;
        let cidr_v = required(obj.get("cidr").cloned(), "cidr")?;
        self.check_visible(caller, Kind::Network, &network_id)?;
        let version = match ip_version
            .as_u64()
            .or_else(|| ip_version.as_str().and_then(|s| s.parse().ok()))
        {
            Some(v @ (4 | 6)) => v,
            _ => {
                return Err(Error::bad(format!(
                    "Invalid input for ip_version. Reason: {} is not in [4, 6].",
                    pyrepr(&ip_version)
                )));
            }
        };
        let cidr_s = cidr_v.as_str().unwrap_or_default();
        let cidr: IpNet = cidr_s.parse().map_err(|_| {
            Error::bad(format!(
                "Invalid input for cidr. Reason: {} is not a valid IP subnet.",
                pyrepr(&cidr_v)
            ))
        })?;
        if cidr.trunc() != cidr {
            return Err(Error::bad(format!(
                "Invalid input for cidr. Reason: '{cidr_s}' isn't a recognized IP subnet cidr, '{}' is recommended.",
                cidr.trunc()
            )));
        }
        let v6 = matches!(cidr, IpNet::V6(_));
        if v6 != (version == 6) {
            return Err(Error::invalid("Cidr and ip_version mismatch".to_string()));
        }
        for s in self.subnet_ids(&network_id).iter().filter_map(|s| self.subnets.get(s)) {
            if s.cidr.contains(&cidr.network()) || cidr.contains(&s.cidr.network()) {
                return Err(Error::invalid(format!(
                    "Requested subnet with cidr: {cidr} for network: {network_id} overlaps with another subnet"
                )));
            }
        }
        let net_lo = ip_u128(cidr.network());
        let net_hi = ip_u128(cidr.broadcast());
        let in_cidr = |ip: IpAddr| cidr.contains(&ip);
        let gateway = match obj.get("gateway_ip") {
            None => {
                if v6 {
                    Some(cidr.network())
                } else if net_hi > net_lo + 1 {
                    Some(u128_ip(net_lo + 1, false))
                } else {
                    None
                }
            }
            Some(Value::Null) => None,
            Some(v) => {
                let ip = parse_ip(v, "gateway_ip")?;
                if !in_cidr(ip) {
                    return Err(Error::bad(format!(
                        "Invalid input for operation: Gateway IP {ip} is not in subnet {cidr}."
                    )));
                }
                Some(ip)
            }
        };
        let pools = match get_list(obj, "allocation_pools")? {
            Some(list) => {
                let mut pools = Vec::new();
                for p in &list {
                    let (Some(s), Some(e)) = (p.get("start"), p.get("end")) else {
                        return Err(Error::invalid("Invalid data format for IP pool".to_string()));
                    };
                    let (s, e) = (parse_ip(s, "allocation_pools")?, parse_ip(e, "allocation_pools")?);
                    if !in_cidr(s) || !in_cidr(e) || ip_u128(s) > ip_u128(e) {
                        return Err(Error::BadRequest(
                            "InvalidAllocationPool",
                            format!("The allocation pool {s}-{e} spans beyond the subnet cidr {cidr}."),
                        ));
                    }
                    pools.push((ip_u128(s), ip_u128(e)));
                }
                pools.sort_unstable();
                pools
            }
            None => {
                let (lo, hi) = if v6 {
                    (net_lo + 1, net_hi)
                } else {
                    (net_lo + 1, net_hi.saturating_sub(1))
                };
                let mut pools = Vec::new();
                if hi >= lo {
                    match gateway.map(ip_u128) {
                        Some(g) if (lo..=hi).contains(&g) => {
                            if g > lo {
                                pools.push((lo, g - 1))
                            }
                            if g < hi {
                                pools.push((g + 1, hi))
                            }
                        }
                        _ => pools.push((lo, hi)),
                    }
                }
                pools
            }
        };
        let mode = |k: &str| -> Result<Option<String>> {
            match get_str(obj, k)? {
                Some(m) if ["slaac", "dhcpv6-stateful", "dhcpv6-stateless"].contains(&m.as_str()) => Ok(Some(m)),
                Some(m) => Err(Error::bad(format!(
                    "Invalid input for {k}. Reason: '{m}' is not in ['dhcpv6-stateful', 'dhcpv6-stateless', 'slaac']."
                ))),
                None => Ok(None),
            }
        };
        let (ra_mode, addr_mode) = (mode("ipv6_ra_mode")?, mode("ipv6_address_mode")?);
        let tags = get_tags(obj)?;
        let std = StdAttrs::new(get_str(obj, "description")?.unwrap_or_default(), tags, 0);
        let id = self.new_id();
        let cursor = pools.first().map_or(0, |p| p.0);
        let s = Subnet {
            id: id.clone(),
            name: get_str(obj, "name")?.unwrap_or_default(),
            project_id: Self::project_for(caller, obj)?,
            network_id: network_id.clone(),
            cidr,
            gateway,
            pools,
            enable_dhcp: get_bool(obj, "enable_dhcp")?.unwrap_or(true),
            dns: get_array(obj, "dns_nameservers").unwrap_or_else(|| json!([])),
            host_routes: get_array(obj, "host_routes").unwrap_or_else(|| json!([])),
            ra_mode,
            addr_mode,
            std,
            allocated: HashSet::new(),
            cursor,
        };
        self.subnets.insert(id.clone(), s);
        if let Some(n) = self.networks.get_mut(&network_id) {
            n.subnets.push(id.clone());
            n.std.bump();
        }
        Ok(id)
    }

    pub fn update_subnet(&mut self, obj: &Obj, id: &str) -> Result<()> {
        SUBNET_ATTRIBUTES.check(obj, false)?;
        let name = get_str(obj, "name")?;
        let description = get_str(obj, "description")?;
        let dhcp = get_bool(obj, "enable_dhcp")?;
        let s = found(self.subnets.get_mut(id), Kind::Subnet, id)?;
        update_field(&mut s.name, name);
        update_field(&mut s.enable_dhcp, dhcp);
        update_field(&mut s.dns, get_array(obj, "dns_nameservers"));
        update_field(&mut s.host_routes, get_array(obj, "host_routes"));
        s.std.update(description);
        Ok(())
    }

    pub fn delete_subnet(&mut self, id: &str) -> Result<()> {
        let s = found(self.subnets.get(id), Kind::Subnet, id)?;
        if !s.allocated.is_empty() {
            return Err(Error::Conflict(
                "SubnetInUse",
                format!(
                    "Unable to complete operation on subnet {id}: One or more ports have an IP allocation from this subnet."
                ),
            ));
        }
        let net = s.network_id.clone();
        self.subnets.remove(id);
        if let Some(n) = self.networks.get_mut(&net) {
            n.subnets.retain(|s| s != id);
            n.std.bump();
        }
        Ok(())
    }

    // ---------- IPAM ----------

    /// Allocates the requested fixed IPs (or the defaults) on `network_id` for a port with `mac`.
    /// `keep` are addresses the port already holds (on update) and may keep.
    fn allocate(
        &mut self,
        network_id: &str,
        mac: &str,
        requested: Option<&[Value]>,
        keep: &[(String, IpAddr)],
        device_owner: &str,
    ) -> Result<Vec<(String, IpAddr)>> {
        let mut out: Vec<(String, IpAddr)> = Vec::new();
        let router_port = device_owner.starts_with("network:router") || device_owner.starts_with("network:ha_router");
        let result = self.allocate_inner(network_id, mac, requested, keep, &mut out, router_port);
        if result.is_err() {
            self.release_except(&out, keep);
        }
        result.map(|_| out)
    }

    fn allocate_inner(
        &mut self,
        network_id: &str,
        mac: &str,
        requested: Option<&[Value]>,
        keep: &[(String, IpAddr)],
        out: &mut Vec<(String, IpAddr)>,
        router_port: bool,
    ) -> Result<()> {
        let subnet_ids = self.subnet_ids(network_id);
        let subnet_ids = subnet_ids.as_slice();
        let exhausted = || {
            Error::Conflict(
                "IpAddressGenerationFailure",
                format!("No more IP addresses available on network {network_id}."),
            )
        };
        let Some(reqs) = requested else {
            // Default: one IPv4 and one stateful IPv6 address; every SLAAC subnet auto-addresses.
            let (mut got_v4, mut got_v6, mut any_v4) = (false, false, false);
            for sid in subnet_ids {
                let Some(s) = self.subnets.get_mut(sid) else {
                    continue;
                };
                if s.v6() && s.slaac() {
                    out.push((sid.clone(), s.alloc_slaac(mac)));
                    continue;
                }
                let v6 = s.v6();
                any_v4 |= !v6;
                if (v6 && got_v6) || (!v6 && got_v4) {
                    continue;
                }
                if let Some(ip) = s.alloc_next() {
                    out.push((sid.clone(), ip));
                    if v6 { got_v6 = true } else { got_v4 = true }
                }
            }
            if any_v4 && !got_v4 {
                return Err(exhausted());
            }
            out.sort_by_key(|(sid, ip)| (ip.is_ipv6(), self.subnets.get(sid).map(|s| s.slaac()), sid.clone()));
            return Ok(());
        };
        for r in reqs {
            let (sid, ip) = parse_fixed_ip(r)?;
            let sid = match (sid, ip) {
                (Some(sid), _) => {
                    if !subnet_ids.contains(&sid) {
                        return Err(Error::invalid(format!(
                            "Failed to create port on network {network_id}, because fixed_ips included invalid subnet {sid}"
                        )));
                    }
                    sid
                }
                (None, Some(ip)) => subnet_ids
                    .iter()
                    .find(|s| self.subnets.get(*s).is_some_and(|s| s.cidr.contains(&ip)))
                    .cloned()
                    .ok_or_else(|| {
                        Error::BadRequest(
                            "InvalidIpForNetwork",
                            format!(
                                "IP address {ip} is not a valid IP for any of the subnets on the specified network."
                            ),
                        )
                    })?,
                (None, None) => return Err(Error::invalid("Invalid fixed IP entry: no subnet_id nor ip_address")),
            };
            let s = found(self.subnets.get_mut(&sid), Kind::Subnet, &sid)?;
            match ip {
                Some(ip) => {
                    if !s.cidr.contains(&ip) {
                        return Err(Error::BadRequest(
                            "InvalidIpForSubnet",
                            format!("IP address {ip} is not a valid IP for the specified subnet."),
                        ));
                    }
                    let kept = keep.contains(&(sid.clone(), ip));
                    if !kept && !s.allocated.insert(ip_u128(ip)) {
                        return Err(Error::Conflict(
                            "IpAddressAlreadyAllocated",
                            format!("IP address {ip} already allocated in subnet {sid}"),
                        ));
                    }
                    out.push((sid, ip));
                }
                None => {
                    let reuse = keep
                        .iter()
                        .find(|(k, kip)| *k == sid && !out.iter().any(|(_, o)| o == kip));
                    if let Some((_, kip)) = reuse {
                        out.push((sid, *kip));
                    } else if s.v6() && s.slaac() {
                        out.push((sid, s.alloc_slaac(mac)));
                    } else {
                        out.push((sid, s.alloc_next().ok_or_else(exhausted)?));
                    }
                }
            }
        }
        // SLAAC subnets always auto-address a non-router port, even when not requested.
        if !router_port {
            for sid in subnet_ids {
                if out.iter().any(|(s, _)| s == sid) {
                    continue;
                }
                if let Some(s) = self.subnets.get_mut(sid).filter(|s| s.v6() && s.slaac()) {
                    out.push((sid.clone(), s.alloc_slaac(mac)));
                }
            }
        }
        Ok(())
    }

    /// Frees the addresses in `ips` that are not also in `kept`.
    fn release_except(&mut self, ips: &[(String, IpAddr)], kept: &[(String, IpAddr)]) {
        for (sid, ip) in ips.iter().filter(|a| !kept.contains(a)) {
            if let Some(s) = self.subnets.get_mut(sid) {
                s.allocated.remove(&ip_u128(*ip));
            }
        }
    }

    // ---------- ports ----------

    fn index_port(&mut self, p: &Port, add: bool) {
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

    fn new_mac(&mut self, network_id: &str) -> String {
        loop {
            let b: [u8; 3] = self.rng.random();
            let mac = format!("fa:16:3e:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2]);
            if !self.macs.contains(&(network_id.to_string(), mac.clone())) {
                return mac;
            }
        }
    }

    /// A requested `mac_address`, lower-cased, if valid and not used by another port on
    /// the network (`current` is the port's own MAC on update).
    fn requested_mac(&self, network_id: &str, requested: &str, current: Option<&str>) -> Result<String> {
        let m = parse_mac(requested)?;
        self.check_mac_free(network_id, &m, current)?;
        Ok(m)
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
    fn create_service_port(&mut self, caller: &Caller, body: Value) -> Result<String> {
        let admin = Caller {
            is_admin: true,
            ..caller.clone()
        };
        self.create_port(&admin, body.as_object().unwrap_or(&Obj::new()))
    }

    fn default_sg(&mut self, project: &str) -> String {
        if let Some(sg) = self.default_sgs.get(project) {
            return sg.clone();
        }
        let sg = self.new_id();
        self.default_sgs.insert(project.to_string(), sg.clone());
        sg
    }

    pub fn create_port(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        PORT_ATTRIBUTES.check(obj, true)?;
        let network_id = required(get_uuid(obj, "network_id")?, "network_id")?;
        self.check_visible(caller, Kind::Network, &network_id)?;
        port_policy(caller, obj, "create_port")?;
        let project_id = Self::project_for(caller, obj)?;
        let tags = match obj.get("tags") {
            Some(t) if self.tags_on_post => parse_tags(t)?,
            _ => BTreeSet::new(),
        };
        let vnic_type = self.vnic(obj)?.unwrap_or_else(|| "normal".into());
        let profile = profile(obj)?.unwrap_or_else(|| json!({}));
        let requested_mac = get_str(obj, "mac_address")?.map(|m| parse_mac(&m)).transpose()?;
        let device_owner = get_str(obj, "device_owner")?.unwrap_or_default();
        let security_groups = get_list(obj, "security_groups")?;
        let requested = get_list(obj, "fixed_ips")?;
        if let Some(reqs) = &requested {
            reqs.iter().try_for_each(|r| parse_fixed_ip(r).map(drop))?;
        }
        let description = get_str(obj, "description")?.unwrap_or_default();
        let name = get_str(obj, "name")?.unwrap_or_default();
        let admin_state_up = get_bool(obj, "admin_state_up")?.unwrap_or(true);
        let device_id = get_str(obj, "device_id")?.unwrap_or_default();
        let host_id = get_host(obj)?.unwrap_or_default();
        let port_security = get_bool(obj, "port_security_enabled")?.unwrap_or(true);
        // The whole body is valid (as Neutron's API layer checks it before the plugin runs):
        // only now anything is reserved, so a failure below leaves nothing behind.
        let mac = match requested_mac {
            Some(m) => {
                self.check_mac_free(&network_id, &m, None)?;
                m
            }
            None => self.new_mac(&network_id),
        };
        let security_groups = match security_groups {
            Some(l) => string_items(&l),
            None if device_owner.starts_with("network:") => Vec::new(),
            None => vec![self.default_sg(&project_id)],
        };
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
            allowed_address_pairs: get_array(obj, "allowed_address_pairs").unwrap_or_else(|| json!([])),
            extra_dhcp_opts: get_array(obj, "extra_dhcp_opts").unwrap_or_else(|| json!([])),
            security_groups,
            vnic_type,
            profile,
            host_id,
            port_security,
            std,
        };
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

    fn vnic(&self, obj: &Obj) -> Result<Option<String>> {
        match get_str(obj, "binding:vnic_type")? {
            Some(v) if VNIC_TYPES.contains(&v.as_str()) => Ok(Some(v)),
            Some(v) => Err(Error::bad(format!(
                "Invalid input for binding:vnic_type. Reason: '{v}' is not in {}.",
                serde_json::to_string(VNIC_TYPES)
                    .unwrap_or_default()
                    .replace('"', "'")
                    .replace(',', ", ")
            ))),
            None => Ok(None),
        }
    }

    pub fn update_port(&mut self, caller: &Caller, obj: &Obj, id: &str) -> Result<()> {
        PORT_ATTRIBUTES.check(obj, false)?;
        port_policy(caller, obj, "update_port")?;
        let old = found(self.ports.get(id), Kind::Port, id)?.clone();
        // Changes go to a copy, stored only once every value is valid.
        let mut p = old.clone();
        update_field(&mut p.name, get_str(obj, "name")?);
        update_field(&mut p.std.description, get_str(obj, "description")?);
        update_field(&mut p.admin_state_up, get_bool(obj, "admin_state_up")?);
        update_field(&mut p.device_id, get_str(obj, "device_id")?);
        update_field(&mut p.device_owner, get_str(obj, "device_owner")?);
        update_field(&mut p.port_security, get_bool(obj, "port_security_enabled")?);
        update_field(&mut p.vnic_type, self.vnic(obj)?);
        update_field(&mut p.profile, profile(obj)?);
        update_field(&mut p.host_id, get_host(obj)?);
        let security_groups = get_list(obj, "security_groups")?;
        update_field(&mut p.security_groups, security_groups.as_deref().map(string_items));
        update_field(&mut p.allowed_address_pairs, get_array(obj, "allowed_address_pairs"));
        update_field(&mut p.extra_dhcp_opts, get_array(obj, "extra_dhcp_opts"));
        if let Some(m) = get_str(obj, "mac_address")? {
            p.mac = self.requested_mac(&old.network_id, &m, Some(&old.mac))?;
        }
        if let Some(reqs) = get_list(obj, "fixed_ips")? {
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

    pub fn delete_port(&mut self, id: &str, via_api: bool) -> Result<()> {
        let p = found(self.ports.get(id), Kind::Port, id)?;
        if via_api
            && [
                "network:router_interface",
                "network:router_gateway",
                "network:floatingip",
            ]
            .contains(&p.device_owner.as_str())
        {
            return Err(Error::Conflict(
                "PortInUse",
                format!(
                    "Port {id} cannot be deleted directly via the port API: has device owner {}.",
                    p.device_owner
                ),
            ));
        }
        let p = self.ports.remove(id).unwrap_or_else(|| unreachable!());
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

    // ---------- tags ----------

    pub fn tags(&mut self, kind: Kind, id: &str) -> Result<Vec<String>> {
        let std = found(self.std_of(kind, id), kind, id)?;
        Ok(std.tags.iter().cloned().collect())
    }

    /// Replaces all tags of a resource.
    pub fn set_tags(&mut self, kind: Kind, id: &str, new: BTreeSet<String>) -> Result<()> {
        let old = self.tags(kind, id)?;
        if kind == Kind::Port {
            for t in &old {
                index_remove(&mut self.by_tag, t, id);
            }
            for t in &new {
                index_insert(&mut self.by_tag, t, id);
            }
        }
        let changed = old.iter().cloned().collect::<BTreeSet<_>>() != new;
        let std = found(self.std_of(kind, id), kind, id)?;
        std.tags = new;
        if changed {
            std.bump();
        }
        Ok(())
    }

    // ---------- routers ----------

    pub fn create_router(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        ROUTER_ATTRIBUTES.check(obj, true)?;
        let id = self.new_id();
        let std = StdAttrs::new(get_str(obj, "description")?.unwrap_or_default(), get_tags(obj)?, 0);
        let r = Router {
            id: id.clone(),
            name: get_str(obj, "name")?.unwrap_or_default(),
            project_id: Self::project_for(caller, obj)?,
            admin_state_up: get_bool(obj, "admin_state_up")?.unwrap_or(true),
            gw_network: None,
            gw_port: None,
            enable_snat: true,
            std,
        };
        self.routers.insert(id.clone(), r);
        if let Some(gw) = obj.get("external_gateway_info").filter(|v| !v.is_null())
            && let Err(e) = self.set_gateway(caller, &id, gw)
        {
            self.routers.remove(&id);
            return Err(e);
        }
        if let Some(r) = self.routers.get_mut(&id) {
            r.std.revision = if r.gw_network.is_some() { 2 } else { 1 };
        }
        Ok(id)
    }

    fn set_gateway(&mut self, caller: &Caller, router_id: &str, gw: &Value) -> Result<()> {
        if let Some(old) = self.routers.get_mut(router_id).and_then(|r| r.gw_port.take()) {
            self.delete_port(&old, false)?;
        }
        if let Some(r) = self.routers.get_mut(router_id) {
            r.gw_network = None;
        }
        if gw.is_null() || gw.as_object().is_some_and(|o| o.is_empty()) {
            return Ok(());
        }
        let gw = gw
            .as_object()
            .ok_or_else(|| Error::invalid("external_gateway_info is not a dict"))?;
        let net = required(get_uuid(gw, "network_id")?, "network_id")?;
        if !self.networks.get(&net).is_some_and(|n| n.external) {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad router request: Network {net} is not an external network."),
            ));
        }
        let snat = get_bool(gw, "enable_snat")?.unwrap_or(true);
        let mut body = json!({"network_id": net, "device_owner": "network:router_gateway", "device_id": router_id});
        if let Some(ips) = get_array(gw, "external_fixed_ips") {
            body["fixed_ips"] = ips;
        }
        let port = self.create_service_port(caller, body)?;
        if let Some(r) = self.routers.get_mut(router_id) {
            r.gw_network = Some(net);
            r.gw_port = Some(port);
            r.enable_snat = snat;
        }
        Ok(())
    }

    pub fn update_router(&mut self, caller: &Caller, obj: &Obj, id: &str) -> Result<()> {
        ROUTER_ATTRIBUTES.check(obj, false)?;
        let name = get_str(obj, "name")?;
        let description = get_str(obj, "description")?;
        let admin = get_bool(obj, "admin_state_up")?;
        if let Some(gw) = obj.get("external_gateway_info") {
            self.set_gateway(caller, id, gw)?;
        }
        let r = found(self.routers.get_mut(id), Kind::Router, id)?;
        update_field(&mut r.name, name);
        update_field(&mut r.admin_state_up, admin);
        r.std.update(description);
        Ok(())
    }

    fn router_interfaces(&self, router_id: &str) -> Vec<&Port> {
        self.by_device
            .get(router_id)
            .into_iter()
            .flatten()
            .filter_map(|p| self.ports.get(p))
            .filter(|p| p.device_owner == "network:router_interface")
            .collect()
    }

    pub fn delete_router(&mut self, id: &str) -> Result<()> {
        found(self.routers.get(id), Kind::Router, id)?;
        let ifaces: Vec<String> = self.router_interfaces(id).iter().map(|p| p.id.clone()).collect();
        if !ifaces.is_empty() {
            return Err(Error::Conflict(
                "RouterInUse",
                format!("Router {id} has ports still attached: {}", ifaces.join(", ")),
            ));
        }
        if self.fips.values().any(|f| f.router_id.as_deref() == Some(id)) {
            return Err(Error::Conflict(
                "RouterInUse",
                format!("Router {id} still has floating IPs associated"),
            ));
        }
        if let Some(gw) = self.routers.get_mut(id).and_then(|r| r.gw_port.take()) {
            self.delete_port(&gw, false)?;
        }
        self.routers.remove(id);
        Ok(())
    }

    pub fn add_router_interface(&mut self, caller: &Caller, id: &str, obj: &Obj) -> Result<Value> {
        check_only(obj, &["subnet_id", "port_id"])?;
        let project = found(self.routers.get(id), Kind::Router, id)?.project_id.clone();
        let port_id = match (get_uuid(obj, "subnet_id")?, get_uuid(obj, "port_id")?) {
            (Some(sid), None) => {
                self.check_visible(caller, Kind::Subnet, &sid)?;
                let s = &self.subnets[&sid];
                let gw = s.gateway.ok_or_else(|| {
                    Error::BadRequest(
                        "BadRequest",
                        format!("Bad router request: Subnet {sid} does not have a gateway IP."),
                    )
                })?;
                if self
                    .router_interfaces(id)
                    .iter()
                    .any(|p| p.fixed_ips.iter().any(|(s, _)| *s == sid))
                {
                    return Err(Error::BadRequest(
                        "BadRequest",
                        format!("Bad router request: Router already has a port on subnet {sid}."),
                    ));
                }
                let body = json!({
                    "network_id": s.network_id, "device_owner": "network:router_interface", "device_id": id,
                    "fixed_ips": [{"subnet_id": sid, "ip_address": gw.to_string()}], "project_id": project,
                });
                self.create_service_port(caller, body)?
            }
            (None, Some(pid)) => {
                self.check_visible(caller, Kind::Port, &pid)?;
                let p = found(self.ports.get(&pid), Kind::Port, &pid)?.clone();
                if !p.device_id.is_empty() {
                    return Err(Error::Conflict(
                        "PortInUse",
                        format!(
                            "Unable to complete operation on port {pid} for network {}. Port already has an attached device {}.",
                            p.network_id, p.device_id
                        ),
                    ));
                }
                self.index_port(&p, false);
                let port = self.ports.get_mut(&pid).unwrap_or_else(|| unreachable!());
                port.device_id = id.to_string();
                port.device_owner = "network:router_interface".into();
                port.std.bump();
                let p = port.clone();
                self.index_port(&p, true);
                pid
            }
            _ => {
                return Err(Error::BadRequest(
                    "BadRequest",
                    "Bad router request: Either subnet_id or port_id must be specified.".into(),
                ));
            }
        };
        if let Some(r) = self.routers.get_mut(id) {
            r.std.bump();
        }
        Ok(interface_json(id, &project, &self.ports[&port_id]))
    }

    pub fn remove_router_interface(&mut self, id: &str, obj: &Obj) -> Result<Value> {
        check_only(obj, &["subnet_id", "port_id"])?;
        found(self.routers.get(id), Kind::Router, id)?;
        let sid = get_uuid(obj, "subnet_id")?;
        let pid = get_uuid(obj, "port_id")?;
        let port = self
            .router_interfaces(id)
            .into_iter()
            .find(|p| pid.as_deref() == Some(p.id.as_str()) || p.fixed_ips.iter().any(|(s, _)| Some(s) == sid.as_ref()))
            .cloned();
        let Some(port) = port else {
            return Err(match (sid, pid) {
                (Some(s), _) => Error::NotFound(
                    "RouterInterfaceNotFoundForSubnet",
                    format!("Router {id} has no interface on subnet {s}"),
                ),
                (_, Some(p)) => Error::NotFound(
                    "RouterInterfaceNotFound",
                    format!("Router {id} does not have an interface with id {p}"),
                ),
                _ => Error::BadRequest(
                    "BadRequest",
                    "Bad router request: Either subnet_id or port_id must be specified.".into(),
                ),
            });
        };
        let subnets: Vec<String> = port.fixed_ips.iter().map(|(s, _)| s.clone()).collect();
        if self.fips.values().any(|f| {
            f.router_id.as_deref() == Some(id)
                && f.port_id
                    .as_ref()
                    .and_then(|p| self.ports.get(p))
                    .is_some_and(|p| p.fixed_ips.iter().any(|(s, _)| subnets.contains(s)))
        }) {
            return Err(Error::Conflict(
                "RouterInterfaceInUseByFloatingIP",
                format!(
                    "Router interface for subnet {} on router {id} cannot be deleted, as it is required by one or more floating IPs.",
                    subnets.first().cloned().unwrap_or_default()
                ),
            ));
        }
        self.delete_port(&port.id, false)?;
        if let Some(r) = self.routers.get_mut(id) {
            r.std.bump();
        }
        Ok(interface_json(id, &port.project_id, &port))
    }

    // ---------- floating IPs ----------

    /// Resolves (port, fixed ip, router) for associating a FIP on `fip_net`.
    fn fip_target(
        &self,
        caller: &Caller,
        fip_net: &str,
        fip_id: Option<&str>,
        port_id: &str,
        fixed: Option<&Value>,
    ) -> Result<(IpAddr, String)> {
        self.check_visible(caller, Kind::Port, port_id)?;
        let p = &self.ports[port_id];
        let fixed_ip = match fixed.filter(|v| !v.is_null()) {
            Some(v) => {
                let ip = parse_ip(v, "fixed_ip_address")?;
                if !p.fixed_ips.iter().any(|(_, i)| *i == ip) {
                    return Err(Error::BadRequest(
                        "BadRequest",
                        format!("Bad floatingip request: Port {port_id} does not have fixed ip {ip}."),
                    ));
                }
                ip
            }
            None => p
                .fixed_ips
                .iter()
                .map(|(_, i)| *i)
                .find(IpAddr::is_ipv4)
                .ok_or_else(|| {
                    Error::BadRequest(
                        "BadRequest",
                        format!("Bad floatingip request: Port {port_id} does not have any IPv4 address."),
                    )
                })?,
        };
        let subnet = p
            .fixed_ips
            .iter()
            .find(|(_, i)| *i == fixed_ip)
            .map(|(s, _)| s.clone())
            .unwrap_or_default();
        let router = self
            .routers
            .values()
            .filter(|r| r.gw_network.as_deref() == Some(fip_net))
            .find(|r| self.router_interfaces(&r.id).iter().any(|ip| ip.fixed_ips.iter().any(|(s, _)| *s == subnet)))
            .map(|r| r.id.clone())
            .ok_or_else(|| {
                Error::NotFound(
                    "ExternalGatewayForFloatingIPNotFound",
                    format!(
                        "External network {fip_net} is not reachable from subnet {subnet}.  Therefore, cannot associate Port {port_id} with a Floating IP."
                    ),
                )
            })?;
        if let Some(other) = self.fips.values().find(|f| {
            f.port_id.as_deref() == Some(port_id) && f.fixed_ip == Some(fixed_ip) && Some(f.id.as_str()) != fip_id
        }) {
            return Err(Error::Conflict(
                "FloatingIPPortAlreadyAssociated",
                format!(
                    "Cannot associate floating IP {} ({}) with port {port_id} using fixed IP {fixed_ip}, as that fixed IP already has a floating IP on external network {}.",
                    other.address, other.id, other.network_id
                ),
            ));
        }
        Ok((fixed_ip, router))
    }

    fn notify_port_changed(&mut self, port_id: Option<&str>) {
        if let Some(p) = port_id.and_then(|p| self.ports.get(p)).filter(|p| p.is_compute()) {
            let (dev, id) = (p.device_id.clone(), p.id.clone());
            self.emit("network-changed", &dev, &id);
        }
    }

    pub fn create_fip(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        FLOATING_IP_ATTRIBUTES.check(obj, true)?;
        let net = required(get_uuid(obj, "floating_network_id")?, "floating_network_id")?;
        self.check_visible(caller, Kind::Network, &net)?;
        if !self.networks.get(&net).is_some_and(|n| n.external) {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad floatingip request: Network {net} is not a valid external network."),
            ));
        }
        let port_id = get_uuid(obj, "port_id")?;
        // Validated before the floating IP's own port is created, so a failure leaves none.
        let description = get_str(obj, "description")?.unwrap_or_default();
        let tags = get_tags(obj)?;
        let project_id = Self::project_for(caller, obj)?;
        let target = match &port_id {
            Some(p) => Some(self.fip_target(caller, &net, None, p, obj.get("fixed_ip_address"))?),
            None => None,
        };
        let id = self.new_id();
        let v4: Vec<String> = self
            .subnets_of(&net)
            .into_iter()
            .filter(|(_, v6)| !v6)
            .map(|(s, _)| s)
            .collect();
        let mut fixed = Vec::new();
        match obj.get("floating_ip_address").filter(|v| !v.is_null()) {
            Some(ip) => fixed.push(json!({"ip_address": ip})),
            None => match get_uuid(obj, "subnet_id")? {
                Some(s) => fixed.push(json!({"subnet_id": s})),
                None => fixed.extend(v4.first().map(|s| json!({"subnet_id": s}))),
            },
        }
        if fixed.is_empty() {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad floatingip request: Network {net} has no IPv4 subnet."),
            ));
        }
        let body = json!({"network_id": net, "device_owner": "network:floatingip", "device_id": id, "project_id": "", "fixed_ips": fixed});
        let own_port = self.create_service_port(caller, body)?;
        let address = self.ports[&own_port].fixed_ips[0].1;
        let std = StdAttrs::new(description, tags, 0);
        let f = FloatingIp {
            id: id.clone(),
            project_id,
            network_id: net,
            address,
            own_port,
            port_id: port_id.clone(),
            fixed_ip: target.as_ref().map(|t| t.0),
            router_id: target.map(|t| t.1),
            std,
        };
        self.fips.insert(id.clone(), f);
        self.notify_port_changed(port_id.as_deref());
        Ok(id)
    }

    pub fn update_fip(&mut self, caller: &Caller, obj: &Obj, id: &str) -> Result<()> {
        FLOATING_IP_ATTRIBUTES.check(obj, false)?;
        let f = found(self.fips.get(id), Kind::FloatingIp, id)?;
        let (net, old_port) = (f.network_id.clone(), f.port_id.clone());
        let description = get_str(obj, "description")?;
        let new_target = match obj.get("port_id") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(_) => {
                let pid = required(get_uuid(obj, "port_id")?, "port_id")?;
                let t = self.fip_target(caller, &net, Some(id), &pid, obj.get("fixed_ip_address"))?;
                Some(Some((pid, t)))
            }
        };
        let f = found(self.fips.get_mut(id), Kind::FloatingIp, id)?;
        match &new_target {
            None => {}
            Some(None) => f.disassociate(),
            Some(Some((pid, (ip, router)))) => {
                f.port_id = Some(pid.clone());
                f.fixed_ip = Some(*ip);
                f.router_id = Some(router.clone());
            }
        }
        f.std.update(description);
        let new_port = f.port_id.clone();
        if new_target.is_some() {
            if old_port != new_port {
                self.notify_port_changed(old_port.as_deref());
            }
            self.notify_port_changed(new_port.as_deref());
        }
        Ok(())
    }

    pub fn delete_fip(&mut self, id: &str) -> Result<()> {
        let f = found(self.fips.remove(id), Kind::FloatingIp, id)?;
        let _ = self.delete_port(&f.own_port, false);
        self.notify_port_changed(f.port_id.as_deref());
        Ok(())
    }
}

/// The answer to adding or removing a router interface.
fn interface_json(router_id: &str, project_id: &str, port: &Port) -> Value {
    let subnet_ids: Vec<&String> = port.fixed_ips.iter().map(|(s, _)| s).collect();
    json!({
        "id": router_id, "project_id": project_id, "port_id": port.id, "network_id": port.network_id,
        "subnet_id": subnet_ids.first(), "subnet_ids": subnet_ids, "tenant_id": project_id,
    })
}

fn fixed_ips_json(ips: &[(String, IpAddr)]) -> Vec<Value> {
    ips.iter()
        .map(|(s, ip)| json!({"subnet_id": s, "ip_address": ip.to_string()}))
        .collect()
}

fn port_json(p: &Port) -> Value {
    let bound = !p.host_id.is_empty();
    json!({
        "id": p.id, "name": p.name, "network_id": p.network_id, "project_id": p.project_id,
        "mac_address": p.mac, "admin_state_up": p.admin_state_up, "status": p.status,
        "device_id": p.device_id, "device_owner": p.device_owner, "fixed_ips": fixed_ips_json(&p.fixed_ips),
        "allowed_address_pairs": p.allowed_address_pairs, "extra_dhcp_opts": p.extra_dhcp_opts,
        "security_groups": p.security_groups, "description": p.std.description,
        "binding:vnic_type": p.vnic_type, "binding:profile": p.profile, "binding:host_id": p.host_id,
        "binding:vif_type": if bound { "ovs" } else { "unbound" },
        "binding:vif_details": if bound {
            json!({"port_filter": true, "ovs_hybrid_plug": false, "bound_drivers": {"0": "fakebind"}})
        } else { json!({}) },
        "port_security_enabled": p.port_security, "tags": p.std.tags, "created_at": p.std.created_at,
        "updated_at": p.std.updated_at, "revision_number": p.std.revision, "tenant_id": p.project_id,
    })
}

fn profile(obj: &Obj) -> Result<Option<Value>> {
    match obj.get("binding:profile") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(json!({}))),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(v) => Err(Error::bad(format!(
            "Invalid input for binding:profile. Reason: {} is not a dictionary.",
            pyrepr(v)
        ))),
    }
}

fn is_mac(m: &str) -> bool {
    let parts: Vec<&str> = m.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// SLAAC (EUI-64) address for `mac` in a /64.
fn eui64(cidr: IpNet, mac: &str) -> IpAddr {
    let b: Vec<u8> = mac.split(':').filter_map(|x| u8::from_str_radix(x, 16).ok()).collect();
    let b = if b.len() == 6 { b } else { vec![0; 6] };
    let iid = u64::from_be_bytes([b[0] ^ 0x02, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]]);
    let prefix = ip_u128(cidr.network()) & !((1u128 << 64) - 1);
    u128_ip(prefix | u128::from(iid), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eui64_matches_neutron() {
        let ip = eui64(
            "fd00:9::/64".parse().unwrap_or_else(|_| unreachable!()),
            "fa:16:3e:99:fa:91",
        );
        assert_eq!(ip.to_string(), "fd00:9::f816:3eff:fe99:fa91");
    }

    #[test]
    fn allocation_exhausts_then_fails() {
        let mut st = Store::new(1, true, true);
        let c = Caller::admin();
        let net = st
            .create_network(&c, json!({"name": "n"}).as_object().unwrap_or(&Obj::new()))
            .unwrap_or_default();
        let body = json!({"network_id": net, "ip_version": 4, "cidr": "10.0.0.0/29"});
        st.create_subnet(&c, body.as_object().unwrap_or(&Obj::new()))
            .unwrap_or_default();
        let port = json!({"network_id": net});
        let port = port.as_object().unwrap_or_else(|| unreachable!());
        for _ in 0..5 {
            assert!(st.create_port(&c, port).is_ok());
        }
        let err = st.create_port(&c, port).err().map(|e| e.kind());
        assert_eq!(err, Some("IpAddressGenerationFailure"));
    }
}
