//! What a server's network info cache is: its attached VIF records, in order, each
//! rendered from Neutron's port details. A Neutron port that is not in the VIF
//! records never enters the cache, whatever its `device_id` (invariant 1).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::network_info::{self, FixedIp, Ip, NetworkInfo, NetworkMeta, Route, SubnetMeta};
use crate::neutron::{FloatingIp, Network, Port, Subnet};
use crate::vif::{VifOrigin, VifRecord};
use crate::{NetworkId, PortId, ServerId, SubnetId};

mod digest;
pub use digest::{FoundRight, InputsDigest, REBUILD_EVERY, Seen, rebuild_due};

/// What Neutron said about a port in this refresh.
#[derive(Clone, Debug)]
pub enum Observed {
    /// Fresh details, with the floating IPs pointing at the port. Shared: heal
    /// refers to the port its observation of a batch holds, without a copy.
    Present {
        port: Arc<Port>,
        floating_ips: Vec<FloatingIp>,
    },
    /// Neutron has no such port.
    Gone,
}

/// What to do with a VIF whose port is lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnLost {
    /// Drop it from the cache (it stays recorded as lost).
    #[default]
    Drop,
    /// Keep its last known entry in the cache.
    Keep,
}

#[derive(Clone, Debug, Hash)]
pub struct CacheOptions {
    /// Bridge name for OVS VIFs whose details name none (Nova's `[neutron] ovs_bridge`).
    pub ovs_bridge: String,
    pub on_lost: OnLost,
}

impl Default for CacheOptions {
    fn default() -> Self {
        Self {
            ovs_bridge: "br-int".to_owned(),
            on_lost: OnLost::Drop,
        }
    }
}

/// Everything a cache rebuild needs. Ports missing from `observed` were not
/// refreshed: their previous cache entry is kept as it was.
pub struct CacheInputs<'a> {
    pub server_id: ServerId,
    pub vifs: &'a [VifRecord],
    pub previous: &'a NetworkInfo,
    pub observed: &'a HashMap<PortId, Observed>,
    pub networks: &'a HashMap<NetworkId, Network>,
    pub subnets: &'a HashMap<SubnetId, Subnet>,
    pub options: &'a CacheOptions,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// Neutron no longer has the port.
    Gone,
    /// Neutron now gives the port to another device.
    Reassigned { device_id: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostVif {
    pub port_id: PortId,
    pub reason: LostReason,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CacheOutcome {
    pub info: NetworkInfo,
    /// Attached VIFs whose ports were found lost in this refresh.
    pub lost: Vec<LostVif>,
    /// Whether the rebuild kept a VIF's previous entry (a port not refreshed, or
    /// a lost one under `OnLost::Keep`): only then does `previous` matter.
    pub kept_previous: bool,
}

/// Builds a server's cache from its VIF records (the membership) and Neutron's
/// details (the content).
#[must_use]
pub fn build_network_info(inputs: &CacheInputs<'_>) -> CacheOutcome {
    let server = inputs.server_id.to_string();
    let mut vifs: Vec<&VifRecord> = inputs.vifs.iter().filter(|v| v.is_attached()).collect();
    vifs.sort_by_key(|v| v.position);

    let mut entries = Vec::with_capacity(vifs.len());
    let mut lost = Vec::new();
    let mut kept_previous = false;
    for vif in vifs {
        let previous = inputs.previous.0.iter().find(|e| e.id == vif.port_id.as_str());
        let lost_reason = match inputs.observed.get(&vif.port_id) {
            None => {
                kept_previous = true;
                entries.extend(previous.cloned());
                continue;
            }
            Some(Observed::Gone) => LostReason::Gone,
            Some(Observed::Present { port, .. }) if !port.carries_device_id(&server) => LostReason::Reassigned {
                device_id: port.device_id.clone(),
            },
            Some(Observed::Present { port, floating_ips }) => {
                entries.push(render_vif(vif, port, floating_ips, inputs));
                continue;
            }
        };
        lost.push(LostVif {
            port_id: vif.port_id.clone(),
            reason: lost_reason,
        });
        if inputs.options.on_lost == OnLost::Keep {
            kept_previous = true;
            entries.extend(previous.cloned());
        }
    }
    CacheOutcome {
        info: NetworkInfo(entries),
        lost,
        kept_previous,
    }
}

/// Renders one VIF the way Nova's `_build_vif_model` does.
fn render_vif(
    vif: &VifRecord,
    port: &Port,
    floating_ips: &[FloatingIp],
    inputs: &CacheInputs<'_>,
) -> network_info::Vif {
    let network = inputs.networks.get(&port.network_id);
    let is_ovs = port.vif_type.as_deref() == Some("ovs");
    let details = as_map(&port.vif_details);
    let bridge = is_ovs.then(|| {
        let name = details
            .get("bridge_name")
            .and_then(Value::as_str)
            .unwrap_or(&inputs.options.ovs_bridge);
        name.chars().take(14).collect::<String>()
    });

    network_info::Vif {
        id: port.id.0.clone(),
        address: port.mac_address.clone(),
        network: network_info::Network {
            id: port.network_id.0.clone(),
            bridge,
            label: network.map(|n| n.name.clone()),
            subnets: render_subnets(port, floating_ips, inputs.subnets),
            meta: NetworkMeta {
                injected: false,
                tenant_id: Some(network.map_or(&port.project_id, |n| &n.project_id).0.clone()),
                mtu: network.and_then(|n| n.mtu),
                physical_network: None,
                tunneled: None,
            },
        },
        vif_type: port.vif_type.clone(),
        details,
        devname: format!("tap{}", port.id).chars().take(14).collect(),
        ovs_interfaceid: is_ovs.then(|| port.id.0.clone()),
        qbh_params: None,
        qbg_params: None,
        active: !port.admin_state_up || port.status == "ACTIVE",
        vnic_type: port.vnic_type.clone().unwrap_or_else(|| "normal".to_owned()),
        profile: as_map(&port.profile),
        preserve_on_delete: vif.origin == VifOrigin::Preexisting,
        delegate_create: true,
        meta: Map::new(),
    }
}

/// One subnet entry per subnet of the port's fixed IPs, in fixed-IP order, each
/// holding the fixed IPs that belong to it.
fn render_subnets(
    port: &Port,
    floating_ips: &[FloatingIp],
    subnets: &HashMap<SubnetId, Subnet>,
) -> Vec<network_info::Subnet> {
    let mut seen = HashSet::new();
    let mut rendered = Vec::new();
    for fixed in &port.fixed_ips {
        if !seen.insert(&fixed.subnet_id) {
            continue;
        }
        let ips = port
            .fixed_ips
            .iter()
            .filter(|f| f.subnet_id == fixed.subnet_id)
            .map(|f| FixedIp {
                ip: Ip::new(Some(f.ip_address), "fixed"),
                floating_ips: floating_ips
                    .iter()
                    .filter(|fip| fip.fixed_ip_address == Some(f.ip_address))
                    .map(|fip| Ip::new(Some(fip.floating_ip_address), "floating"))
                    .collect(),
            })
            .collect();
        let subnet = subnets.get(&fixed.subnet_id);
        rendered.push(match subnet {
            Some(s) => network_info::Subnet {
                cidr: s.cidr.to_string(),
                dns: s.dns_nameservers.iter().map(|d| Ip::new(Some(*d), "dns")).collect(),
                gateway: Ip::new(s.gateway_ip, "gateway"),
                ips,
                routes: s
                    .host_routes
                    .iter()
                    .map(|r| Route {
                        cidr: r.destination.to_string(),
                        gateway: Ip::new(Some(r.nexthop), "gateway"),
                        interface: None,
                        meta: Map::new(),
                    })
                    .collect(),
                version: Some(network_info::ip_version(s.cidr.addr())),
                meta: SubnetMeta {
                    enable_dhcp: s.enable_dhcp,
                    ipv6_address_mode: s.ipv6_address_mode.clone(),
                    dhcp_server: None,
                },
            },
            // Subnet details unavailable (e.g. not visible to us): keep the IPs.
            None => network_info::Subnet {
                cidr: String::new(),
                dns: vec![],
                gateway: Ip::new(None, "gateway"),
                ips,
                routes: vec![],
                version: Some(network_info::ip_version(fixed.ip_address)),
                meta: SubnetMeta {
                    enable_dhcp: false,
                    ipv6_address_mode: None,
                    dhcp_server: None,
                },
            },
        });
    }
    rendered
}

fn as_map(value: &Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;
    use crate::fixtures::{build_cache, port, present, topology, vif};
    use crate::network_info::{CacheAddresses, CachedIp, NetworkAddresses, SubnetAddresses, VifAddresses};
    use crate::{ProjectId, ServerId};

    /// `server`'s first cache: no previous one, lost ports dropped.
    fn first_cache(server: ServerId, vifs: &[VifRecord], observed: &HashMap<PortId, Observed>) -> CacheOutcome {
        build_cache(
            server,
            &topology(),
            vifs,
            &NetworkInfo::default(),
            observed,
            OnLost::Drop,
        )
    }

    /// The cache of a server with one port, 10.0.0.5 on `private`, and its
    /// floating IP 172.24.4.228.
    fn one_port_with_a_floating_ip() -> CacheOutcome {
        let server = ServerId(crate::fixtures::uuid(2));
        let p = port("9a1f7f7e-3c1b-4f7e-8a3e-2b8f1d0c5e11", &server, "10.0.0.5");
        let fip = FloatingIp {
            id: "f".into(),
            project_id: ProjectId::from("demo"),
            floating_network_id: NetworkId::from("public"),
            floating_ip_address: "172.24.4.228".parse().unwrap(),
            fixed_ip_address: Some("10.0.0.5".parse().unwrap()),
            port_id: Some(p.id.clone()),
            device_id: Some(server.to_string()),
        };
        let observed = HashMap::from([(
            p.id.clone(),
            Observed::Present {
                port: Arc::new(p.clone()),
                floating_ips: vec![fip],
            },
        )]);
        let vifs = [vif(p.id.as_str(), server, 0, VifOrigin::Created)];
        first_cache(server, &vifs, &observed)
    }

    #[test]
    fn a_cache_is_written_as_its_json_and_as_nothing_else() {
        let info = one_port_with_a_floating_ip().info;
        let json = info.to_json();
        assert_eq!(info.digest_if_written_as(&json), Some(info.text_digest()));
        assert_eq!(info.digest_if_written_as(&json[..json.len() - 1]), None, "a prefix");
        assert_eq!(info.digest_if_written_as(&format!("{json} ")), None, "longer");
        assert_eq!(
            info.digest_if_written_as(&json.replace("10.0.0.5", "10.0.0.6")),
            None,
            "another address"
        );
        assert_eq!(info.digest_if_written_as(""), None);
        let empty = NetworkInfo::default();
        assert_eq!(empty.digest_if_written_as("[]"), Some(empty.text_digest()));
        assert_ne!(empty.text_digest(), info.text_digest());
    }

    #[test]
    fn renders_nova_cache_json_key_for_key() {
        let out = one_port_with_a_floating_ip();
        let json: Value = serde_json::from_str(&out.info.to_json()).unwrap();
        let keys: Vec<&str> = json[0].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "address",
                "network",
                "type",
                "details",
                "devname",
                "ovs_interfaceid",
                "qbh_params",
                "qbg_params",
                "active",
                "vnic_type",
                "profile",
                "preserve_on_delete",
                "delegate_create",
                "meta"
            ]
        );
        assert_eq!(json[0]["devname"], "tap9a1f7f7e-3c");
        assert_eq!(json[0]["network"]["label"], "private");
        assert_eq!(json[0]["network"]["bridge"], "br-int");
        let subnet = &json[0]["network"]["subnets"][0];
        assert_eq!(
            subnet["gateway"],
            serde_json::json!({"address": "10.0.0.1", "type": "gateway", "version": 4, "meta": {}})
        );
        assert_eq!(subnet["ips"][0]["floating_ips"][0]["address"], "172.24.4.228");
        assert_eq!(subnet["meta"], serde_json::json!({"enable_dhcp": true}));
        assert_eq!(json[0]["network"]["meta"]["mtu"], 1442);
        // And it reads back.
        assert_eq!(NetworkInfo::from_json(&out.info.to_json()).unwrap(), out.info);
    }

    #[test]
    fn the_api_reads_a_caches_addresses_from_its_text() {
        let out = one_port_with_a_floating_ip();
        let addresses = CacheAddresses::from_json(&out.info.to_json()).unwrap();
        let floating = CachedIp {
            address: Some("172.24.4.228".into()),
            version: Some(4),
            floating_ips: vec![],
        };
        let fixed = CachedIp {
            address: Some("10.0.0.5".into()),
            version: Some(4),
            floating_ips: vec![floating],
        };
        assert_eq!(
            addresses,
            CacheAddresses(vec![VifAddresses {
                address: out.info.0[0].address.clone(),
                network: NetworkAddresses {
                    label: Some("private".into()),
                    subnets: vec![SubnetAddresses { ips: vec![fixed] }],
                },
            }])
        );
        assert_eq!(CacheAddresses::from_json("[]").unwrap(), CacheAddresses::default());
    }

    #[test]
    fn ghost_ports_never_enter_the_cache() {
        let server = ServerId(crate::fixtures::uuid(3));
        let mine = port("mine", &server, "10.0.0.5");
        let ghost = port("ghost", &server, "10.0.0.6");
        let observed: HashMap<_, _> = [mine, ghost].into_iter().map(present).collect();
        let vifs = [vif("mine", server, 0, VifOrigin::Created)];
        let out = first_cache(server, &vifs, &observed);
        assert_eq!(out.info.port_ids().collect::<Vec<_>>(), ["mine"]);
    }

    #[test]
    fn lost_ports_are_reported_and_dropped_or_kept() {
        let server = ServerId(crate::fixtures::uuid(4));
        let a = port("a", &server, "10.0.0.5");
        let mut b = port("b", &server, "10.0.0.6");
        let vifs = [
            vif("a", server, 0, VifOrigin::Created),
            vif("b", server, 1, VifOrigin::Preexisting),
        ];
        let all: HashMap<_, _> = [&a, &b].into_iter().cloned().map(present).collect();
        let fresh = first_cache(server, &vifs, &all);
        assert!(
            !fresh.kept_previous,
            "every port refreshed: the previous cache is not read"
        );
        let previous = fresh.info;
        assert!(previous.0[1].preserve_on_delete);

        b.device_id = "someone-else".into();
        let observed = HashMap::from([(PortId::from("a"), Observed::Gone), present(b)]);
        let dropped = build_cache(server, &topology(), &vifs, &previous, &observed, OnLost::Drop);
        assert!(dropped.info.0.is_empty());
        assert!(!dropped.kept_previous);
        assert_eq!(
            dropped.lost[0],
            LostVif {
                port_id: PortId::from("a"),
                reason: LostReason::Gone
            }
        );
        assert_eq!(
            dropped.lost[1].reason,
            LostReason::Reassigned {
                device_id: "someone-else".into()
            }
        );
        let kept = build_cache(server, &topology(), &vifs, &previous, &observed, OnLost::Keep);
        assert_eq!(kept.info, previous);
        assert!(
            kept.kept_previous,
            "lost and kept: the entries come from the previous cache"
        );
    }

    #[test]
    fn unrefreshed_ports_keep_their_entry_and_order_follows_position() {
        let server = ServerId(crate::fixtures::uuid(5));
        let a = port("a", &server, "10.0.0.5");
        let b = port("b", &server, "10.0.0.6");
        let vifs = [
            vif("b", server, 1, VifOrigin::Created),
            vif("a", server, 0, VifOrigin::Created),
        ];
        let first = first_cache(server, &vifs[1..], &HashMap::from([present(a)]));
        let second = build_cache(
            server,
            &topology(),
            &vifs,
            &first.info,
            &HashMap::from([present(b)]),
            OnLost::Drop,
        );
        assert_eq!(second.info.port_ids().collect::<Vec<_>>(), ["a", "b"]);
        assert!(
            second.kept_previous,
            "`a` was not refreshed: its entry is the previous one"
        );
        let ip: IpAddr = second.info.0[0]
            .fixed_ips()
            .next()
            .unwrap()
            .ip
            .address
            .as_ref()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(ip.to_string(), "10.0.0.5");
    }
}
