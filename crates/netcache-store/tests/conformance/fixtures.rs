//! Domain values with every field set, and a whole-store snapshot to compare.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use netcache_domain::action::{Action, ActionEvent};
use netcache_domain::flavor::FlavorSnapshot;
use netcache_domain::ghost::{GhostOwner, GhostSighting};
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::keypair::{KeyPair, KeyType};
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::server::{Fault, LockedBy, NetworkRequest, NetworkRequests, Server, TaskState, VmState};
use netcache_domain::vif::{VifOrigin, VifRecord, VifState};
use netcache_domain::{HostName, IntentId, NetworkId, PortId, ProjectId, ServerId};
use netcache_store::{ServerFilter, Store, StoredCache};

/// A fixed instant with a microsecond part, `seconds` later.
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456) + Duration::seconds(seconds)
}

/// A server in ERROR with every optional field set.
pub fn server(project: &str, created: DateTime<Utc>) -> Server {
    Server {
        id: ServerId(uuid::Uuid::new_v4()),
        name: "vm-1".into(),
        project_id: ProjectId::from(project),
        user_id: "user-1".into(),
        host: Some(HostName::from("host2")),
        availability_zone: "nova".into(),
        vm_state: VmState::Error,
        task_state: Some(TaskState::Spawning),
        fault: Some(Fault {
            code: 500,
            message: "No valid host was found. \"quoted\" and ünïcode".into(),
            created: created + Duration::seconds(3),
        }),
        flavor_ref: "m1.small".into(),
        flavor: Some(FlavorSnapshot {
            name: "m1.small \"x\" ünï".into(),
            vcpus: 2,
            ram_mb: 3000,
            disk_gb: 20,
            ephemeral_gb: 5,
            swap_mb: 512,
            extra_specs: BTreeMap::from([("hw:cpu_policy".into(), "dedicated".into())]),
        }),
        image_ref: "cirros".into(),
        metadata: BTreeMap::from([("role".into(), "db".into()), ("empty".into(), String::new())]),
        access_ip_v4: Some("192.0.2.10".parse().unwrap()),
        access_ip_v6: Some("2001:db8::10".parse().unwrap()),
        requested_networks: NetworkRequests::Explicit(vec![
            NetworkRequest::Network {
                network_id: Some(NetworkId::from("net-a")),
                fixed_ip: Some("10.0.0.5".parse().unwrap()),
                tag: Some("nic1".into()),
            },
            NetworkRequest::Network {
                network_id: None,
                fixed_ip: Some("2001:db8::5".parse().unwrap()),
                tag: None,
            },
            NetworkRequest::Port {
                port_id: PortId::from("user-port"),
                tag: Some("nic3".into()),
            },
        ]),
        key_name: Some("laptop key_1".into()),
        security_groups: vec!["5e0c4f4e-1b9a-4e8e-9a53-6d8f4f0a2b11".into()],
        locked_by: Some(LockedBy::Owner),
        attributes: Default::default(),
        tried_hosts: vec![HostName::from("host1"), HostName::from("host2")],
        created_at: created,
        updated_at: created + Duration::seconds(1),
        launched_at: Some(created + Duration::seconds(2)),
        deleted_at: None,
        generation: 0,
    }
}

/// A server with every optional field empty.
pub fn bare_server(project: &str, created: DateTime<Utc>) -> Server {
    Server {
        host: None,
        vm_state: VmState::Building,
        task_state: None,
        fault: None,
        metadata: BTreeMap::new(),
        access_ip_v4: None,
        access_ip_v6: None,
        requested_networks: NetworkRequests::Auto,
        key_name: None,
        security_groups: vec![],
        locked_by: None,
        attributes: Default::default(),
        tried_hosts: vec![],
        launched_at: None,
        flavor: None,
        ..server(project, created)
    }
}

pub fn vif(server: ServerId, port: &str, position: i64) -> VifRecord {
    VifRecord {
        port_id: PortId::from(port),
        server_id: server,
        position,
        origin: VifOrigin::Created,
        state: VifState::Attached,
        intent_id: Some(IntentId(uuid::Uuid::new_v4())),
        network_id: NetworkId::from("net-a"),
        requested_fixed_ip: Some("10.0.0.5".parse().unwrap()),
        tag: Some("nic1".into()),
        details: None,
    }
}

/// A user's port: no intent, no fixed IP, no tag.
pub fn preexisting_vif(server: ServerId, port: &str, position: i64) -> VifRecord {
    VifRecord {
        origin: VifOrigin::Preexisting,
        intent_id: None,
        requested_fixed_ip: None,
        tag: None,
        ..vif(server, port, position)
    }
}

pub fn intent(server: ServerId, position: i64, created: DateTime<Utc>) -> PortIntent {
    PortIntent {
        id: IntentId(uuid::Uuid::new_v4()),
        server_id: server,
        attempt: 2,
        position,
        host: HostName::from("host2"),
        network_id: NetworkId::from("net-a"),
        fixed_ip: Some("2001:db8::7".parse().unwrap()),
        tag: Some("nic1".into()),
        state: IntentState::Pending,
        port_id: None,
        adopted: false,
        reason: None,
        created_at: created,
        updated_at: created,
    }
}

/// `intent` moved to `state`, as the reconciler would record it.
pub fn resolved(intent: &PortIntent, state: IntentState, port: Option<&str>, adopted: bool) -> PortIntent {
    PortIntent {
        state,
        port_id: port.map(PortId::from),
        adopted,
        reason: (state != IntentState::Created).then(|| format!("{state}: neutron said no")),
        updated_at: intent.updated_at + Duration::seconds(10),
        ..intent.clone()
    }
}

pub fn action(server: ServerId, request_id: &str, start: DateTime<Utc>, events: Vec<ActionEvent>) -> Action {
    Action {
        server_id: server,
        request_id: request_id.into(),
        action: "create".into(),
        project_id: "proj-a".into(),
        user_id: "user-1".into(),
        start_time: start,
        message: None,
        events,
    }
}

pub fn event(name: &str, start: DateTime<Utc>) -> ActionEvent {
    ActionEvent {
        event: name.into(),
        start_time: start,
        finish_time: None,
        result: None,
        details: None,
        host: None,
    }
}

pub fn keypair(user: &str, name: &str, created: DateTime<Utc>) -> KeyPair {
    KeyPair {
        user_id: user.into(),
        name: name.into(),
        public_key: format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBvUqwsMzEDlxAfFDFpTPbALb+EAcHBfLLyrKo0gpPqT {name}"),
        fingerprint: "55:4a:63:6b:16:2d:21:07:f1:d0:a9:3d:60:f8:1f:2a".into(),
        key_type: KeyType::Ssh,
        created_at: created,
    }
}

pub fn ghost(port: &str, owner: GhostOwner, first_seen: DateTime<Utc>) -> GhostSighting {
    GhostSighting {
        port_id: PortId::from(port),
        device_id: ServerId(uuid::Uuid::new_v4()).to_string(),
        owner,
        first_seen,
        last_seen: first_seen + Duration::seconds(30),
        times_seen: 2,
        revision_number: 7,
    }
}

/// A Nova-shaped cache with one VIF, a floating IP and non-default fields.
pub fn network_info() -> NetworkInfo {
    NetworkInfo::from_json(
        r#"[{"id": "p1", "address": "fa:16:3e:00:00:01",
            "network": {"id": "net-a", "bridge": "br-int", "label": "private",
                "subnets": [{"cidr": "10.0.0.0/24",
                    "dns": [{"address": "8.8.8.8", "type": "dns", "version": 4, "meta": {}}],
                    "gateway": {"address": "10.0.0.1", "type": "gateway", "version": 4, "meta": {}},
                    "ips": [{"address": "10.0.0.5", "type": "fixed", "version": 4, "meta": {},
                        "floating_ips": [{"address": "172.24.4.10", "type": "floating", "version": 4, "meta": {}}]}],
                    "routes": [{"cidr": "192.168.0.0/16",
                        "gateway": {"address": "10.0.0.254", "type": "gateway", "version": 4, "meta": {}},
                        "interface": null, "meta": {}}],
                    "version": 4, "meta": {"enable_dhcp": true, "dhcp_server": "10.0.0.2"}}],
                "meta": {"injected": false, "tenant_id": "proj-a", "mtu": 1450, "physical_network": null, "tunneled": true}},
            "type": "ovs", "details": {"port_filter": true, "ovs_hybrid_plug": false},
            "devname": "tapp1", "ovs_interfaceid": "p1", "qbh_params": null, "qbg_params": null,
            "active": true, "vnic_type": "normal", "profile": {"capabilities": ["switchdev"]},
            "preserve_on_delete": true, "delegate_create": true, "meta": {"tag": "nic1"}}]"#,
    )
    .expect("valid network info")
}

/// Everything the store says, through every read of the trait.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub deployment: String,
    pub servers: Vec<Server>,
    pub per_server: Vec<ServerSnapshot>,
    pub pending_intents: Vec<PortIntent>,
    pub releasing_vifs: Vec<VifRecord>,
    pub ghosts: Vec<GhostSighting>,
}

#[derive(Debug, PartialEq)]
pub struct ServerSnapshot {
    pub server: Option<Server>,
    pub vifs: Vec<VifRecord>,
    pub cache: Option<StoredCache>,
    pub intents: Vec<PortIntent>,
    pub actions: Vec<Action>,
}

/// Reads the whole store; `servers` lists ids to read per server (present or not).
pub async fn snapshot(store: &dyn Store, servers: &[ServerId]) -> Snapshot {
    let all = ServerFilter {
        project_id: None,
        include_deleted: true,
    };
    let mut per_server = Vec::new();
    for &id in servers {
        per_server.push(ServerSnapshot {
            server: store.server(id).await.unwrap(),
            vifs: store.vifs(id).await.unwrap(),
            cache: store.cache(id).await.ok(),
            intents: store.intents(id).await.unwrap(),
            actions: store.actions(id).await.unwrap(),
        });
    }
    Snapshot {
        deployment: store.deployment_id().await.unwrap().0,
        servers: store.servers(&all).await.unwrap(),
        per_server,
        pending_intents: store.pending_intents().await.unwrap(),
        releasing_vifs: store.releasing_vifs().await.unwrap(),
        ghosts: store.ghost_sightings().await.unwrap(),
    }
}
