//! A Nova cloud of fakes: Nova's records in memory ([`FakeNova`]), the
//! embedded Neutron, and a tap on the Neutron client that can change the
//! world right after a chosen call (a test's "meanwhile").

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::nova::{CachedVif, InstanceRecords, NovaAction, NovaInstance, NovaVif};
use netcache_domain::{InstanceUuid, PortId};
use netcache_neutron::{Auth, ClientConfig, HttpNeutron, Tap, TapCall};
use netcache_nova::{FakeNova, NovaAuditor, NovaConfig, NovaGc, RecordedEvents};
use neutron_sim::{NeutronSim, RunningSim, SimConfig};
use serde_json::json;

pub const PROJECT: &str = "demo";

type Meanwhile = Box<dyn FnOnce() + Send>;

/// Something to do right after a chosen port call answered: a test's "meanwhile".
#[derive(Default)]
pub struct Meddling {
    lists: Mutex<u32>,
    /// Runs after the list call with this number (1-based) answered.
    after_list: Mutex<Option<(u32, Meanwhile)>>,
    /// Runs after the next `show_port` answered.
    after_show: Mutex<Option<Meanwhile>>,
}

impl Meddling {
    pub fn after_list(&self, n: u32, meanwhile: impl FnOnce() + Send + 'static) {
        *self.after_list.lock().unwrap() = Some((n, Box::new(meanwhile)));
    }

    pub fn after_show(&self, meanwhile: impl FnOnce() + Send + 'static) {
        *self.after_show.lock().unwrap() = Some(Box::new(meanwhile));
    }

    fn answered(&self, call: &TapCall<'_>) {
        let meanwhile = match call {
            TapCall::ShowPort(_) => self.after_show.lock().unwrap().take(),
            TapCall::ListPorts(_) => {
                let mut lists = self.lists.lock().unwrap();
                *lists += 1;
                let mut after = self.after_list.lock().unwrap();
                match after.take() {
                    Some((at, meanwhile)) if at == *lists => Some(meanwhile),
                    other => {
                        *after = other;
                        None
                    }
                }
            }
            TapCall::UpdatePort { .. } | TapCall::DeletePort { .. } => None,
        };
        if let Some(meanwhile) = meanwhile {
            meanwhile();
        }
    }
}

pub struct Cloud {
    pub nova: Arc<FakeNova>,
    pub neutron: Arc<Tap>,
    pub meddling: Arc<Meddling>,
    pub events: Arc<RecordedEvents>,
    pub sim: RunningSim,
    pub network_id: String,
}

impl Cloud {
    pub async fn start() -> Self {
        let sim = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let topology = sim.handle().create_default_topology(PROJECT);
        let mut client = ClientConfig::new(Auth::none(url::Url::parse(&sim.url()).unwrap()));
        client.timeout = Duration::from_secs(5);
        client.retries = 0;
        let meddling = Arc::new(Meddling::default());
        let answered = meddling.clone();
        let neutron = Arc::new(Tap::new(Arc::new(HttpNeutron::new(client).unwrap()), move |call| {
            answered.answered(call);
        }));
        Self {
            nova: Arc::new(FakeNova::default()),
            neutron,
            meddling,
            events: Arc::new(RecordedEvents::default()),
            sim,
            network_id: topology.private_network_id,
        }
    }

    pub fn config(grace: Duration) -> NovaConfig {
        NovaConfig {
            grace,
            ..NovaConfig::default()
        }
    }

    pub fn auditor(&self, config: NovaConfig) -> NovaAuditor {
        NovaAuditor::new(self.nova.clone(), self.neutron.clone(), config)
    }

    pub fn gc(&self, grace: Duration) -> NovaGc {
        NovaGc::new(self.auditor(Self::config(grace)), self.events.clone())
    }

    /// A port in the embedded Neutron; `fixed` = whether it takes an address.
    pub fn port(&self, device_id: &str, owner: &str, host: Option<&str>, fixed: bool) -> PortId {
        let mut body = json!({
            "network_id": self.network_id,
            "project_id": PROJECT,
            "device_id": device_id,
            "device_owner": owner,
        });
        if let Some(host) = host {
            body["binding:host_id"] = json!(host);
        }
        if !fixed {
            body["fixed_ips"] = json!([]);
        }
        let (status, answer) = self
            .sim
            .handle()
            .request("POST", "/v2.0/ports", Some(json!({ "port": body })));
        assert_eq!(status, 201, "{answer}");
        PortId::from(answer["port"]["id"].as_str().unwrap())
    }

    /// Case A: a live server with its allocated port, and the re-sent
    /// create's twin, which heal adopted (in the cache, no VIF row).
    pub fn case_a(&self) -> (String, PortId, PortId) {
        let server = uuid();
        let allocated = self.port(&server, "compute:nova", Some("compute1"), true);
        let ghost = self.port(&server, "compute:nova", Some("compute1"), true);
        let mut records = built(&server, &[&allocated]);
        records.cache.push(cached(&ghost, false));
        self.nova.put(records);
        (server, allocated, ghost)
    }

    pub fn update_port(&self, id: &PortId, body: serde_json::Value) {
        let (status, answer) =
            self.sim
                .handle()
                .request("PUT", &format!("/v2.0/ports/{id}"), Some(json!({ "port": body })));
        assert_eq!(status, 200, "{answer}");
    }

    pub fn port_exists(&self, id: &PortId) -> bool {
        self.sim.handle().request("GET", &format!("/v2.0/ports/{id}"), None).0 == 200
    }

    pub fn list_calls(&self) -> u64 {
        self.sim.handle().stats().calls("ports.list")
    }

    pub fn neutron_calls(&self) -> u64 {
        self.sim.handle().stats().total
    }
}

/// A live instance Nova built 100 s ago, with a VIF row and a cache entry
/// for each of `ports` (written during its create action).
pub fn built(uuid: &str, ports: &[&PortId]) -> InstanceRecords {
    let now = Utc::now();
    let ago = |s: i64| now - TimeDelta::seconds(s);
    InstanceRecords {
        instance: NovaInstance {
            uuid: InstanceUuid::from(uuid),
            project_id: PROJECT.to_owned(),
            host: Some("compute1".to_owned()),
            vm_state: Some("active".to_owned()),
            task_state: None,
            deleted: false,
            deleted_at: None,
            created_at: ago(100),
            cell: "cell1".to_owned(),
        },
        vifs: ports.iter().map(|p| vif(p, ago(90))).collect(),
        cache: ports.iter().map(|p| cached(p, false)).collect(),
        actions: vec![action("create", ago(100), Some(ago(80)))],
    }
}

pub fn vif(port: &PortId, at: DateTime<Utc>) -> NovaVif {
    NovaVif {
        port_id: port.clone(),
        created_at: at,
        deleted: false,
    }
}

pub fn cached(port: &PortId, given: bool) -> CachedVif {
    CachedVif {
        port_id: port.clone(),
        network_id: None,
        addresses: Vec::new(),
        preserve_on_delete: given,
    }
}

pub fn action(name: &str, start: DateTime<Utc>, finish: Option<DateTime<Utc>>) -> NovaAction {
    NovaAction {
        action: name.to_owned(),
        request_id: format!("req-{name}"),
        start_time: start,
        finish_time: finish,
    }
}

/// `records`, deleted 60 s ago as Nova deletes: VIF rows soft-deleted, cache emptied.
pub fn deleted(mut records: InstanceRecords) -> InstanceRecords {
    records.instance.deleted = true;
    records.instance.deleted_at = Some(Utc::now() - TimeDelta::seconds(60));
    records.instance.vm_state = Some("deleted".to_owned());
    records.cache.clear();
    for vif in &mut records.vifs {
        vif.deleted = true;
    }
    records
}

pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
