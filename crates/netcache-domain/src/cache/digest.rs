//! A digest of what one server's cache is rebuilt from, but what its cache
//! generation stands for (the stored cache and its VIF records: every change
//! of either advances it): the ports Neutron gives the VIFs (every field),
//! their floating IPs, their networks, the subnets of their fixed IPs, and the
//! cache options. Heal stores it beside the cache, at the generation it found
//! the cache right at; the same digest at the same generation rebuilds the same
//! cache, so the rebuild is skipped.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use serde_json::Value;

use super::CacheOptions;
use crate::network_info::TextDigest;
use crate::neutron::{FloatingIp, Network, Port, Subnet};
use crate::vif::VifRecord;
use crate::{NetworkId, PortId, ServerId, SubnetId};

/// What a batch's rebuilds read of Neutron.
pub struct Seen<'a> {
    pub ports: &'a HashMap<PortId, Arc<Port>>,
    pub floating_ips: &'a HashMap<PortId, Vec<FloatingIp>>,
    pub networks: &'a HashMap<NetworkId, Network>,
    pub subnets: &'a HashMap<SubnetId, Subnet>,
}

/// A 64-bit digest of a rebuild's inputs. Equal inputs give equal digests;
/// inputs that differ only in a JSON object's key order may not (a rebuild
/// more, no harm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputsDigest(u64);

impl InputsDigest {
    #[must_use]
    pub fn of(server_id: ServerId, vifs: &[VifRecord], seen: &Seen<'_>, options: &CacheOptions) -> Self {
        let mut h = DefaultHasher::new();
        // A digest is stored: another release may render the same inputs
        // otherwise, and a stored digest must not stand for its rebuild.
        env!("CARGO_PKG_VERSION").hash(&mut h);
        server_id.hash(&mut h);
        options.hash(&mut h);
        for vif in vifs {
            vif.port_id.hash(&mut h);
            let port = seen.ports.get(&vif.port_id);
            port.is_some().hash(&mut h);
            let Some(port) = port else {
                continue;
            };
            // What `render_vif` reads: the port, its floating IPs, its network
            // and the subnets of its fixed IPs.
            hash_port(port, &mut h);
            seen.floating_ips.get(&vif.port_id).hash(&mut h);
            seen.networks.get(&port.network_id).hash(&mut h);
            for fixed_ip in &port.fixed_ips {
                seen.subnets.get(&fixed_ip.subnet_id).hash(&mut h);
            }
        }
        Self(h.finish())
    }
}

/// A cache heal found equal to its rebuild: the digest of the inputs it was
/// rebuilt from, and of the rebuild's text. The store keeps it beside the
/// cache at the generation it was found at, so any process's pass (a restarted
/// one's first too) skips the rebuild while the generation and the inputs'
/// digest are as they were, and compares a due rebuild with the text digest
/// rather than read the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoundRight {
    pub inputs: InputsDigest,
    pub text: TextDigest,
}

impl FoundRight {
    /// As the store keeps it: two signed 64-bit columns, inputs and text.
    #[must_use]
    pub fn to_columns(self) -> (i64, i64) {
        let signed = |bits: u64| i64::from_ne_bytes(bits.to_ne_bytes());
        (signed(self.inputs.0), signed(self.text.0))
    }

    #[must_use]
    pub fn from_columns(inputs: i64, text: i64) -> Self {
        let unsigned = |bits: i64| u64::from_ne_bytes(bits.to_ne_bytes());
        Self {
            inputs: InputsDigest(unsigned(inputs)),
            text: TextDigest(unsigned(text)),
        }
    }
}

/// Heal rebuilds each cache once in this many passes, whatever its inputs'
/// digest: what a missed input or a digest collision could leave stale lasts
/// no longer.
pub const REBUILD_EVERY: u64 = 10;

/// Whether heal's pass number `pass` rebuilds this server's cache whatever its
/// inputs' digest. Each pass takes the tenth of the servers whose id falls to
/// it, so every server has its turn once in [`REBUILD_EVERY`] passes and no
/// pass rebuilds them all.
#[must_use]
pub fn rebuild_due(server_id: ServerId, pass: u64) -> bool {
    server_id.0.as_u128() % u128::from(REBUILD_EVERY) == u128::from(pass % REBUILD_EVERY)
}

/// Every field of a port; its driver-specific JSON walked in place.
fn hash_port(port: &Port, h: &mut impl Hasher) {
    let Port {
        id,
        name,
        network_id,
        project_id,
        mac_address,
        fixed_ips,
        status,
        admin_state_up,
        device_id,
        device_owner,
        binding_host_id,
        vif_type,
        vnic_type,
        vif_details,
        profile,
        tags,
        revision_number,
        security_groups,
        port_security_enabled,
        // Not in the network info cache: its age changes nothing there.
        created_at: _,
    } = port;
    (id, name, network_id, project_id, mac_address, fixed_ips, status).hash(h);
    (
        admin_state_up,
        device_id,
        device_owner,
        binding_host_id,
        vif_type,
        vnic_type,
    )
        .hash(h);
    (tags, revision_number, security_groups, port_security_enabled).hash(h);
    hash_json(vif_details, h);
    hash_json(profile, h);
}

fn hash_json(value: &Value, h: &mut impl Hasher) {
    std::mem::discriminant(value).hash(h);
    match value {
        Value::Null => {}
        Value::Bool(b) => b.hash(h),
        Value::Number(n) => n.hash(h),
        Value::String(s) => s.hash(h),
        Value::Array(items) => {
            items.len().hash(h);
            items.iter().for_each(|item| hash_json(item, h));
        }
        Value::Object(map) => {
            map.len().hash(h);
            for (key, item) in map {
                key.hash(h);
                hash_json(item, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProjectId;
    use crate::fixtures::{port, topology, vif};
    use crate::vif::VifOrigin;

    /// One change to the inputs.
    type Change = fn(&mut Inputs);

    /// One server's inputs, with a batch-mate's port beside its own.
    struct Inputs {
        ports: HashMap<PortId, Arc<Port>>,
        floating_ips: HashMap<PortId, Vec<FloatingIp>>,
        networks: HashMap<NetworkId, Network>,
        subnets: HashMap<SubnetId, Subnet>,
        options: CacheOptions,
    }

    impl Inputs {
        fn digest(&self, server: ServerId) -> InputsDigest {
            let seen = Seen {
                ports: &self.ports,
                floating_ips: &self.floating_ips,
                networks: &self.networks,
                subnets: &self.subnets,
            };
            InputsDigest::of(
                server,
                &[vif("p1", server, 0, VifOrigin::Created)],
                &seen,
                &self.options,
            )
        }

        fn port_mut(&mut self, id: &str) -> &mut Port {
            Arc::make_mut(self.ports.get_mut(&PortId::from(id)).unwrap())
        }
    }

    #[test]
    fn every_server_is_due_a_rebuild_once_in_every_run_of_ten_passes_and_each_pass_takes_a_tenth() {
        // Ids spread like random v4 uuids, the same on every run.
        let servers: Vec<ServerId> = (1..=10_000u128)
            .map(|i| {
                ServerId(uuid::Uuid::from_u128(
                    i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
                ))
            })
            .collect();
        for first in [0, 7, u64::MAX - 20] {
            for server in &servers {
                let due = (first..first + REBUILD_EVERY).filter(|&pass| rebuild_due(*server, pass));
                assert_eq!(due.count(), 1, "{server} from pass {first}");
            }
        }
        for pass in 0..REBUILD_EVERY {
            let due = servers.iter().filter(|s| rebuild_due(**s, pass)).count();
            assert!(
                (900..=1100).contains(&due),
                "{due} of 10,000 servers due in pass {pass}"
            );
        }
    }

    #[test]
    fn the_digest_changes_with_every_input_of_the_servers_rebuild_and_no_other() {
        let server = ServerId(crate::fixtures::uuid(1));
        let (networks, subnets) = topology();
        let ports = [
            port("p1", &server, "10.0.0.5"),
            port("p2", &ServerId(crate::fixtures::uuid(2)), "10.0.0.6"),
        ];
        let mut inputs = Inputs {
            ports: ports.into_iter().map(|p| (p.id.clone(), Arc::new(p))).collect(),
            floating_ips: HashMap::new(),
            networks,
            subnets,
            options: CacheOptions::default(),
        };
        let base = inputs.digest(server);
        assert_eq!(inputs.digest(server), base, "the same inputs, the same digest");
        assert_ne!(
            inputs.digest(ServerId(crate::fixtures::uuid(3))),
            base,
            "another server"
        );

        inputs.port_mut("p2").status = "DOWN".into();
        assert_eq!(inputs.digest(server), base, "a batch-mate's port is not an input");

        let changes: [(&str, Change); 9] = [
            ("the port's status", |i| i.port_mut("p1").status = "DOWN".into()),
            ("the port's revision", |i| i.port_mut("p1").revision_number += 1),
            ("a value deep in the port's vif details", |i| {
                i.port_mut("p1").vif_details = serde_json::json!({"port_filter": false});
            }),
            ("the port's profile", |i| {
                i.port_mut("p1").profile = serde_json::json!({"migrating_to": "host2"});
            }),
            ("a floating IP", |i| {
                i.floating_ips.insert(
                    PortId::from("p1"),
                    vec![FloatingIp {
                        id: "fip1".into(),
                        project_id: ProjectId::from("demo"),
                        floating_network_id: NetworkId::from("public"),
                        floating_ip_address: "172.24.4.10".parse().unwrap(),
                        fixed_ip_address: Some("10.0.0.5".parse().unwrap()),
                        port_id: Some(PortId::from("p1")),
                        device_id: Some("d".into()),
                    }],
                );
            }),
            ("the network's MTU", |i| {
                i.networks.get_mut(&NetworkId::from("net1")).unwrap().mtu = Some(1400);
            }),
            ("the subnet's DNS servers", |i| {
                i.subnets
                    .get_mut(&SubnetId::from("sub1"))
                    .unwrap()
                    .dns_nameservers
                    .clear();
            }),
            ("the port is gone", |i| {
                i.ports.remove(&PortId::from("p1"));
            }),
            ("the cache options", |i| i.options.ovs_bridge = "br-other".into()),
        ];
        for (what, change) in changes {
            let before = inputs.digest(server);
            change(&mut inputs);
            assert_ne!(inputs.digest(server), before, "{what}");
        }
    }

    #[test]
    fn a_found_right_cache_is_kept_as_two_columns_and_read_back_whole() {
        for (inputs, text) in [(0, 0), (1, u64::MAX), (u64::MAX, 1 << 63), (0x8000_0000_0000_0001, 42)] {
            let found = FoundRight {
                inputs: InputsDigest(inputs),
                text: TextDigest(text),
            };
            let (i, t) = found.to_columns();
            assert_eq!(FoundRight::from_columns(i, t), found);
        }
    }
}
