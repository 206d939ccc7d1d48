//! Domain values the tests share: fixed ids, a port, a VIF record, a network
//! and its subnet, a server, and a cache rebuild over them. Ids are numbers, never random, so a test names
//! the same values in every run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::cache::{CacheInputs, CacheOptions, CacheOutcome, Observed, OnLost, build_network_info};
use crate::network_info::NetworkInfo;
use crate::neutron::{Network, Port, PortFixedIp, Subnet};
use crate::server::{NetworkRequests, Server, TaskState, VmState};
use crate::server_attributes::ServerAttributes;
use crate::vif::{VifOrigin, VifRecord, VifState};
use crate::{NetworkId, PortId, ProjectId, ServerId, SubnetId};

/// The uuid numbered `n`.
#[must_use]
pub fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// A bound port of `server` on `net1`, with one address.
#[must_use]
pub fn port(id: &str, server: &ServerId, ip: &str) -> Port {
    Port {
        id: PortId::from(id),
        name: String::new(),
        network_id: NetworkId::from("net1"),
        project_id: ProjectId::from("proj"),
        mac_address: "fa:16:3e:4c:2a:10".into(),
        fixed_ips: vec![PortFixedIp {
            subnet_id: SubnetId::from("sub1"),
            ip_address: ip.parse().expect("a fixture's address"),
        }],
        status: "ACTIVE".into(),
        admin_state_up: true,
        device_id: server.to_string(),
        device_owner: "compute:nova".into(),
        binding_host_id: Some("host1".into()),
        vif_type: Some("ovs".into()),
        vnic_type: Some("normal".into()),
        vif_details: serde_json::json!({"port_filter": true}),
        profile: serde_json::json!({}),
        tags: BTreeSet::new(),
        revision_number: 3,
        security_groups: Vec::new(),
        port_security_enabled: true,
        created_at: None,
    }
}

/// An attached VIF record on `net1`.
#[must_use]
pub fn vif(id: &str, server: ServerId, position: i64, origin: VifOrigin) -> VifRecord {
    VifRecord {
        port_id: PortId::from(id),
        server_id: server,
        position,
        origin,
        state: VifState::Attached,
        intent_id: None,
        network_id: NetworkId::from("net1"),
        requested_fixed_ip: None,
        tag: None,
        details: None,
    }
}

/// Networks and subnets by id, as a cache rebuild reads them.
pub type Topology = (HashMap<NetworkId, Network>, HashMap<SubnetId, Subnet>);

/// `net1` and its one subnet `sub1` (10.0.0.0/26).
#[must_use]
pub fn topology() -> Topology {
    let net = Network {
        id: NetworkId::from("net1"),
        name: "private".into(),
        project_id: ProjectId::from("proj"),
        shared: false,
        external: false,
        mtu: Some(1442),
        subnet_ids: vec![SubnetId::from("sub1")],
    };
    let sub = Subnet {
        id: SubnetId::from("sub1"),
        network_id: NetworkId::from("net1"),
        cidr: "10.0.0.0/26".parse().expect("a fixture's literal"),
        gateway_ip: Some("10.0.0.1".parse().expect("a fixture's literal")),
        enable_dhcp: true,
        dns_nameservers: vec!["8.8.8.8".parse().expect("a fixture's literal")],
        host_routes: vec![],
        ipv6_address_mode: None,
    };
    (
        HashMap::from([(net.id.clone(), net)]),
        HashMap::from([(sub.id.clone(), sub)]),
    )
}

/// `port` as a refresh saw it: present, with no floating IP.
#[must_use]
pub fn present(port: Port) -> (PortId, Observed) {
    (
        port.id.clone(),
        Observed::Present {
            port: Arc::new(port),
            floating_ips: vec![],
        },
    )
}

/// Rebuilds `server_id`'s cache over `topology`, with the default options but `on_lost`.
#[must_use]
pub fn build_cache(
    server_id: ServerId,
    (networks, subnets): &Topology,
    vifs: &[VifRecord],
    previous: &NetworkInfo,
    observed: &HashMap<PortId, Observed>,
    on_lost: OnLost,
) -> CacheOutcome {
    let options = CacheOptions {
        on_lost,
        ..CacheOptions::default()
    };
    build_network_info(&CacheInputs {
        server_id,
        vifs,
        previous,
        observed,
        networks,
        subnets,
        options: &options,
    })
}

/// A building server of project `p`.
#[must_use]
pub fn server() -> Server {
    let at = DateTime::<Utc>::UNIX_EPOCH;
    Server {
        id: ServerId(uuid(1)),
        name: "old".into(),
        project_id: ProjectId::from("p"),
        user_id: "u".into(),
        host: None,
        availability_zone: "nova".into(),
        vm_state: VmState::Building,
        task_state: Some(TaskState::Scheduling),
        fault: None,
        flavor_ref: "1".into(),
        flavor: crate::flavor::built_in_snapshot("1"),
        image_ref: "i".into(),
        metadata: BTreeMap::new(),
        access_ip_v4: None,
        access_ip_v6: None,
        key_name: None,
        security_groups: vec![],
        locked_by: None,
        attributes: ServerAttributes::default(),
        requested_networks: NetworkRequests::None,
        tried_hosts: vec![],
        created_at: at,
        updated_at: at,
        launched_at: None,
        deleted_at: None,
        generation: 3,
    }
}
