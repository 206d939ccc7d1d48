//! Subnets: CIDR, gateway and allocation pools (addresses are handed out by [`super::ipam`]).

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input::{Attr, AttrType, Attributes, JsonList, List, StdBody, Uuid, pyrepr, required};
use super::ipam::{ip_u128, u128_ip};
use super::{Caller, Kind, Obj, StdAttrs, Store, found, update_field};
use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct Subnet {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub network_id: String,
    pub cidr: IpNet,
    pub gateway: Option<IpAddr>,
    /// Inclusive address ranges, sorted.
    pub pools: Vec<(u128, u128)>,
    pub enable_dhcp: bool,
    pub dns: Value,
    pub host_routes: Value,
    pub ra_mode: Option<String>,
    pub addr_mode: Option<String>,
    pub std: StdAttrs,
    pub allocated: HashSet<u128>,
    /// Where the next-fit allocation resumes.
    pub cursor: u128,
}

impl Subnet {
    pub fn v6(&self) -> bool {
        matches!(self.cidr, IpNet::V6(_))
    }
    pub fn slaac(&self) -> bool {
        matches!(self.addr_mode.as_deref(), Some("slaac" | "dhcpv6-stateless"))
    }
}

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

const IPV6_MODES: &[&str] = &["slaac", "dhcpv6-stateful", "dhcpv6-stateless"];

/// A subnet create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SubnetBody {
    #[serde(flatten)]
    std: StdBody,
    name: Attr<String>,
    network_id: Attr<Uuid>,
    /// Checked by hand: Neutron's message quotes the value given.
    ip_version: Attr<Value>,
    cidr: Attr<Value>,
    gateway_ip: Attr<IpAddr>,
    allocation_pools: Attr<List>,
    enable_dhcp: Attr<bool>,
    dns_nameservers: Attr<JsonList>,
    host_routes: Attr<JsonList>,
    ipv6_ra_mode: Attr<String>,
    ipv6_address_mode: Attr<String>,
}

impl SubnetBody {
    fn ipv6_mode(&self, key: &str, attr: &Attr<String>) -> Result<Option<String>> {
        match attr.get(key)? {
            Some(m) if IPV6_MODES.contains(&m.as_str()) => Ok(Some(m)),
            Some(m) => Err(Error::bad(format!(
                "Invalid input for {key}. Reason: '{m}' is not in ['dhcpv6-stateful', 'dhcpv6-stateless', 'slaac']."
            ))),
            None => Ok(None),
        }
    }
}

/// The `ip_version` and `cidr` of a create body, checked against each other.
fn parse_cidr(ip_version: &Value, cidr_v: &Value) -> Result<IpNet> {
    let version = ip_version
        .as_u64()
        .or_else(|| ip_version.as_str().and_then(|s| s.parse().ok()));
    if !matches!(version, Some(4 | 6)) {
        return Err(Error::bad(format!(
            "Invalid input for ip_version. Reason: {} is not in [4, 6].",
            pyrepr(ip_version)
        )));
    }
    let cidr_s = cidr_v.as_str().unwrap_or_default();
    let cidr: IpNet = cidr_s.parse().map_err(|_| {
        Error::bad(format!(
            "Invalid input for cidr. Reason: {} is not a valid IP subnet.",
            pyrepr(cidr_v)
        ))
    })?;
    if cidr.trunc() != cidr {
        return Err(Error::bad(format!(
            "Invalid input for cidr. Reason: '{cidr_s}' isn't a recognized IP subnet cidr, '{}' is recommended.",
            cidr.trunc()
        )));
    }
    if matches!(cidr, IpNet::V6(_)) != (version == Some(6)) {
        return Err(Error::invalid("Cidr and ip_version mismatch".to_string()));
    }
    Ok(cidr)
}

/// The gateway: as given (`null` = none), else the first address (an IPv4 /31 or /32 has none).
fn gateway(cidr: IpNet, given: Option<Option<IpAddr>>) -> Result<Option<IpAddr>> {
    let (lo, hi) = (ip_u128(cidr.network()), ip_u128(cidr.broadcast()));
    match given {
        None if matches!(cidr, IpNet::V6(_)) => Ok(Some(cidr.network())),
        None => Ok((hi > lo + 1).then(|| u128_ip(lo + 1, false))),
        Some(None) => Ok(None),
        Some(Some(ip)) if cidr.contains(&ip) => Ok(Some(ip)),
        Some(Some(ip)) => Err(Error::bad(format!(
            "Invalid input for operation: Gateway IP {ip} is not in subnet {cidr}."
        ))),
    }
}

/// The allocation pools as given, else the whole CIDR but the network and (IPv4)
/// broadcast addresses and the gateway.
fn pools(cidr: IpNet, gateway: Option<IpAddr>, given: Option<Vec<Value>>) -> Result<Vec<(u128, u128)>> {
    let v6 = matches!(cidr, IpNet::V6(_));
    let (net_lo, net_hi) = (ip_u128(cidr.network()), ip_u128(cidr.broadcast()));
    let Some(list) = given else {
        let (lo, hi) = (net_lo + 1, if v6 { net_hi } else { net_hi.saturating_sub(1) });
        let mut pools = Vec::new();
        if hi >= lo {
            match gateway.map(ip_u128) {
                Some(g) if (lo..=hi).contains(&g) => {
                    if g > lo {
                        pools.push((lo, g - 1));
                    }
                    if g < hi {
                        pools.push((g + 1, hi));
                    }
                }
                _ => pools.push((lo, hi)),
            }
        }
        return Ok(pools);
    };
    let ip = |v: &Value| IpAddr::from_json(v).ok_or_else(|| IpAddr::error("allocation_pools", v));
    let mut pools = Vec::new();
    for p in &list {
        let (Some(s), Some(e)) = (p.get("start"), p.get("end")) else {
            return Err(Error::invalid("Invalid data format for IP pool".to_string()));
        };
        let (s, e) = (ip(s)?, ip(e)?);
        if !cidr.contains(&s) || !cidr.contains(&e) || ip_u128(s) > ip_u128(e) {
            return Err(Error::BadRequest(
                "InvalidAllocationPool",
                format!("The allocation pool {s}-{e} spans beyond the subnet cidr {cidr}."),
            ));
        }
        pools.push((ip_u128(s), ip_u128(e)));
    }
    pools.sort_unstable();
    Ok(pools)
}

impl Store {
    pub fn create_subnet(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: SubnetBody = SUBNET_ATTRIBUTES.parse(obj, true)?;
        let network_id = b.network_id.required("network_id")?.0;
        let ip_version = required(b.ip_version.raw(), "ip_version")?;
        let cidr = required(b.cidr.raw(), "cidr")?;
        self.check_visible(caller, Kind::Network, &network_id)?;
        let cidr = parse_cidr(ip_version, cidr)?;
        for s in self.subnet_ids(&network_id).iter().filter_map(|s| self.subnets.get(s)) {
            if s.cidr.contains(&cidr.network()) || cidr.contains(&s.cidr.network()) {
                return Err(Error::invalid(format!(
                    "Requested subnet with cidr: {cidr} for network: {network_id} overlaps with another subnet"
                )));
            }
        }
        let gateway = gateway(cidr, b.gateway_ip.nullable("gateway_ip")?)?;
        let pools = pools(
            cidr,
            gateway,
            b.allocation_pools.get("allocation_pools")?.and_then(|l| l.0),
        )?;
        let ra_mode = b.ipv6_mode("ipv6_ra_mode", &b.ipv6_ra_mode)?;
        let addr_mode = b.ipv6_mode("ipv6_address_mode", &b.ipv6_address_mode)?;
        let tags = b.std.tags.tags()?;
        let std = StdAttrs::new(b.std.description.get("description")?.unwrap_or_default(), tags, 0);
        let id = self.new_id();
        let cursor = pools.first().map_or(0, |p| p.0);
        let s = Subnet {
            id: id.clone(),
            name: b.name.get("name")?.unwrap_or_default(),
            project_id: Self::project_for(caller, b.std.project()?),
            network_id: network_id.clone(),
            cidr,
            gateway,
            pools,
            enable_dhcp: b.enable_dhcp.get("enable_dhcp")?.unwrap_or(true),
            dns: b.dns_nameservers.valid().map_or_else(|| json!([]), |l| l.0),
            host_routes: b.host_routes.valid().map_or_else(|| json!([]), |l| l.0),
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
        let b: SubnetBody = SUBNET_ATTRIBUTES.parse(obj, false)?;
        let name = b.name.get("name")?;
        let description = b.std.description.get("description")?;
        let dhcp = b.enable_dhcp.get("enable_dhcp")?;
        let s = found(self.subnets.get_mut(id), Kind::Subnet, id)?;
        update_field(&mut s.name, name);
        update_field(&mut s.enable_dhcp, dhcp);
        update_field(&mut s.dns, b.dns_nameservers.valid().map(|l| l.0));
        update_field(&mut s.host_routes, b.host_routes.valid().map(|l| l.0));
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

    pub(super) fn subnet_ids(&self, network_id: &str) -> Vec<String> {
        self.networks
            .get(network_id)
            .map(|n| n.subnets.clone())
            .unwrap_or_default()
    }

    /// The subnets of a network, each with whether it is IPv6.
    pub fn subnets_of(&self, network_id: &str) -> Vec<(String, bool)> {
        self.subnet_ids(network_id)
            .iter()
            .filter_map(|s| self.subnets.get(s))
            .map(|s| (s.id.clone(), s.v6()))
            .collect()
    }

    pub(super) fn subnet_json(&self, s: &Subnet) -> Value {
        let external = self.networks.get(&s.network_id).is_some_and(|n| n.external);
        serde_json::to_value(SubnetView::new(s, external)).expect("serializable")
    }
}

/// A subnet as the API shows it; `router:external` is its network's.
#[derive(Serialize)]
struct SubnetView<'a> {
    id: &'a str,
    name: &'a str,
    project_id: &'a str,
    network_id: &'a str,
    ip_version: u8,
    /// Subnet pools are not modelled.
    subnetpool_id: Option<&'static str>,
    enable_dhcp: bool,
    ipv6_ra_mode: Option<&'a str>,
    ipv6_address_mode: Option<&'a str>,
    gateway_ip: Option<IpAddr>,
    cidr: IpNet,
    allocation_pools: Vec<PoolView>,
    /// Free-form lists, kept as the request gave them.
    host_routes: &'a Value,
    dns_nameservers: &'a Value,
    #[serde(rename = "router:external")]
    external: bool,
    service_types: [&'static str; 0],
    #[serde(flatten)]
    std: &'a StdAttrs,
    tenant_id: &'a str,
}

/// An allocation pool: an inclusive address range.
#[derive(Serialize)]
struct PoolView {
    start: IpAddr,
    end: IpAddr,
}

impl<'a> SubnetView<'a> {
    fn new(s: &'a Subnet, external: bool) -> Self {
        let v6 = s.v6();
        SubnetView {
            id: &s.id,
            name: &s.name,
            project_id: &s.project_id,
            network_id: &s.network_id,
            ip_version: if v6 { 6 } else { 4 },
            subnetpool_id: None,
            enable_dhcp: s.enable_dhcp,
            ipv6_ra_mode: s.ra_mode.as_deref(),
            ipv6_address_mode: s.addr_mode.as_deref(),
            gateway_ip: s.gateway,
            cidr: s.cidr,
            allocation_pools: s
                .pools
                .iter()
                .map(|&(start, end)| PoolView {
                    start: u128_ip(start, v6),
                    end: u128_ip(end, v6),
                })
                .collect(),
            host_routes: &s.host_routes,
            dns_nameservers: &s.dns,
            external,
            service_types: [],
            std: &s.std,
            tenant_id: &s.project_id,
        }
    }
}
