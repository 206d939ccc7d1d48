//! A compute service over the embedded Neutron and a SQLite file, with a
//! recording wrapper around the Neutron client (a test double that passes
//! every call through and remembers the `If-Match` revisions sent).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use netcache_compute::lifecycle::virt::{FakeVirt, VirtDriver};
use netcache_compute::prelude::*;
use netcache_compute::{Compute, ComputeConfig, CrashPoint, CreateServer, RequestContext};
use netcache_domain::change::Change;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::server::{NetworkRequest, NetworkRequests};
use netcache_domain::{HostName, IntentId, NetworkId, PortId, ServerId};
use netcache_neutron::{Auth, ClientConfig, HttpNeutron, Tap, TapCall};
use neutron_sim::{DefaultTopology, NeutronSim, RunningSim, SimConfig, SimHandle};
use serde_json::{Value, json};

pub const PROJECT: &str = "demo";

/// The `If-Match` revisions of the port updates and deletes sent, by port.
#[derive(Default)]
pub struct Recorded {
    pub deletes: Mutex<Vec<(PortId, Option<u64>)>>,
    pub updates: Mutex<Vec<(PortId, Option<u64>)>>,
}

/// The real client, whose port updates and deletes are recorded.
fn recording(inner: HttpNeutron, recorded: Arc<Recorded>) -> Tap {
    Tap::new(Arc::new(inner), move |call| match call {
        TapCall::UpdatePort { id, if_revision } => {
            recorded.updates.lock().unwrap().push(((*id).clone(), *if_revision));
        }
        TapCall::DeletePort { id, if_revision } => {
            recorded.deletes.lock().unwrap().push(((*id).clone(), *if_revision));
        }
        TapCall::ShowPort(_) | TapCall::ListPorts(_) => {}
    })
}

pub struct Harness {
    pub compute: Arc<Compute>,
    pub neutron: Arc<Tap>,
    pub recorded: Arc<Recorded>,
    pub sim: RunningSim,
    pub topology: DefaultTopology,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub async fn start(config: ComputeConfig) -> Self {
        Self::with_sim(config, SimConfig::default()).await
    }

    pub async fn with_sim(config: ComputeConfig, sim: SimConfig) -> Self {
        let virt = Arc::new(FakeVirt::new(&config.virt));
        Self::with_virt(config, sim, virt).await
    }

    /// With a virt driver of the test's own.
    pub async fn with_virt(config: ComputeConfig, sim: SimConfig, virt: Arc<dyn VirtDriver>) -> Self {
        let sim = NeutronSim::start(sim, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let topology = sim.handle().create_default_topology(PROJECT);
        let dir = tempfile::tempdir().unwrap();
        let store = netcache_store::open(&format!("sqlite:{}/netcache.db", dir.path().display()))
            .await
            .unwrap();
        let mut client = ClientConfig::new(Auth::none(url::Url::parse(&sim.url()).unwrap()));
        client.timeout = std::time::Duration::from_secs(2);
        client.retries = 1;
        let recorded = Arc::new(Recorded::default());
        let neutron = Arc::new(recording(HttpNeutron::new(client).unwrap(), recorded.clone()));
        let compute = Compute::start(config, store, neutron.clone(), virt).await.unwrap();
        sim.handle().reset_stats();
        Self {
            compute,
            neutron,
            recorded,
            sim,
            topology,
            _dir: dir,
        }
    }

    /// The service of a one-off command (`netcache heal`) on the same store
    /// and Neutron: another process, with nothing of this one's memory.
    pub async fn one_off(&self, config: ComputeConfig) -> Arc<Compute> {
        let virt = Arc::new(FakeVirt::new(&config.virt));
        Compute::open(config, self.compute.store().clone(), self.neutron.clone(), virt)
            .await
            .unwrap()
    }

    /// This service's next incarnation on the same store and Neutron (its
    /// node's lock free: the first one crashed).
    pub async fn restart(&self, config: ComputeConfig) -> Arc<Compute> {
        let virt = Arc::new(FakeVirt::new(&config.virt));
        Compute::start(config, self.compute.store().clone(), self.neutron.clone(), virt)
            .await
            .unwrap()
    }

    /// Waits until every fault rule has fired at least once (bounded only so
    /// that a failure ends); the calls they hold stay held.
    pub async fn until_every_fault_fired(&self) {
        if !self.wait_until_every_fault_fired().await {
            panic!("a fault never fired: {:?}", self.sim().faults());
        }
    }

    pub fn sim(&self) -> SimHandle {
        self.sim.handle()
    }

    /// Waits until every fault rule has fired, then clears them and lets the
    /// calls they hold go on: how many it released, or, if a rule never
    /// fired, how often each did. Bounded only so that a failure ends:
    /// nothing but the test releases the calls a hold fault keeps waiting.
    pub async fn release_once_every_fault_fired(&self) -> Result<usize, Vec<u64>> {
        let all_fired = self.wait_until_every_fault_fired().await;
        let fired: Vec<u64> = self.sim().faults().iter().map(|rule| rule.fired).collect();
        self.sim().clear_faults();
        let released = self.sim().release_held();
        if all_fired { Ok(released) } else { Err(fired) }
    }

    /// Waits until every fault rule has fired (false if one never did, after
    /// a bound that only ends a failing test).
    pub async fn wait_until_every_fault_fired(&self) -> bool {
        let all_fired = async || self.sim().faults().iter().all(|rule| rule.fired >= 1).then_some(());
        netcache_testenv::poll::poll(all_fired).await.is_some()
    }

    pub fn ctx() -> RequestContext {
        RequestContext::system(PROJECT)
    }

    /// Boots a server with one port on `private` and waits for the build.
    pub async fn boot(&self) -> ServerId {
        self.boot_with_ports(1).await
    }

    /// Boots a server with `ports` new ports on `private` and waits for the build.
    pub async fn boot_with_ports(&self, ports: usize) -> ServerId {
        let server = self
            .compute
            .create_server(&Self::ctx(), self.boot_request(ports))
            .await
            .unwrap();
        self.compute.settle().await;
        server.id
    }

    /// A boot request for a server with `ports` new ports on `private`.
    pub fn boot_request(&self, ports: usize) -> CreateServer {
        let network = NetworkRequest::Network {
            network_id: Some(NetworkId::from(self.topology.private_network_id.as_str())),
            fixed_ip: None,
            tag: None,
        };
        CreateServer {
            name: "vm".into(),
            flavor_ref: "1".into(),
            flavor: netcache_domain::flavor::built_in_snapshot("1").unwrap(),
            image_ref: "img".into(),
            metadata: BTreeMap::new(),
            access_ip_v4: None,
            access_ip_v6: None,
            networks: NetworkRequests::Explicit(vec![network; ports]),
            allocate_network: false,
            key_name: None,
            security_groups: vec![],
            attributes: Default::default(),
            group: None,
            injected_files: vec![],
        }
    }

    /// Ports Neutron gives this device id.
    pub fn ports_of(&self, server: ServerId) -> Vec<Value> {
        let (_, body) = self
            .sim()
            .request("GET", &format!("/v2.0/ports?device_id={server}"), None);
        body["ports"].as_array().unwrap().clone()
    }

    pub fn port(&self, id: &str) -> (u16, Value) {
        self.sim().request("GET", &format!("/v2.0/ports/{id}"), None)
    }

    /// A port created behind netcache's back.
    pub fn neutron_port(&self, extra: Value) -> Value {
        let mut body = json!({"network_id": self.topology.private_network_id, "project_id": PROJECT});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let (status, port) = self.sim().request("POST", "/v2.0/ports", Some(json!({"port": body})));
        assert_eq!(status, 201, "{port}");
        port["port"].clone()
    }

    /// Writes an empty cache over the server's, at its generation: as another
    /// writer would, or a cache the heal pass must fill again.
    pub async fn empty_cache(&self, server: ServerId) {
        let store = self.compute.store();
        let stored = store.cache(server).await.unwrap();
        store
            .commit(vec![Change::WriteCache {
                server_id: server,
                info: NetworkInfo::default(),
                expected_generation: stored.generation,
            }])
            .await
            .unwrap();
    }

    pub async fn cached_port_ids(&self, server: ServerId) -> Vec<String> {
        self.compute
            .network_info(server)
            .await
            .unwrap()
            .port_ids()
            .map(str::to_owned)
            .collect()
    }
}

/// A config with the loops off (tests drive passes) and a 10-minute grace.
pub fn config() -> ComputeConfig {
    let mut config = ComputeConfig::default();
    config.heal.interval = std::time::Duration::ZERO;
    config.gc.interval = std::time::Duration::ZERO;
    config.retention.interval = std::time::Duration::ZERO;
    config
}

/// `config` with a simulated crash at `point`.
pub fn crashing_at(point: CrashPoint, config: ComputeConfig) -> ComputeConfig {
    ComputeConfig {
        crash_at: Some(point),
        ..config
    }
}

/// An intent of `server` to create a port on `net` at host1, with no port yet.
pub fn intent(server: ServerId, position: i64, state: IntentState, now: DateTime<Utc>) -> PortIntent {
    PortIntent {
        id: IntentId(uuid::Uuid::new_v4()),
        server_id: server,
        attempt: 1,
        position,
        host: HostName::from("host1"),
        network_id: NetworkId::from("net"),
        fixed_ip: None,
        tag: None,
        state,
        port_id: None,
        adopted: false,
        reason: None,
        created_at: now,
        updated_at: now,
    }
}
