//! Embedded, in-process Neutron v2.0-compatible port service with seeded, scriptable fault
//! injection and a Nova notifier. See `README.md` for the admin endpoints.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use neutron_sim::{NeutronSim, SimConfig, FaultRule, FaultAction};
//! let sim = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse()?).await?;
//! sim.handle().add_fault(FaultRule::new("ports.create", FaultAction::Error { status: 503 }).nth(1));
//! println!("{}/v2.0/ports", sim.url());
//! sim.shutdown().await;
//! # Ok(()) }
//! ```

mod api;
mod config;
mod core;
mod error;
mod faults;
mod http;
mod notifier;
mod query;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use crate::config::{ALL_EXTENSIONS, FaultAction, FaultRule, SimConfig};
use crate::core::Obj;
pub use crate::core::{Caller, NovaEvent};
pub use crate::error::Error;
pub use crate::faults::{RuleState, Stats, json_subset};
use crate::http::{Shared, lock};

/// Entry point: `NeutronSim::start(config, addr)`.
pub struct NeutronSim;

/// A started simulator; stop it with [`RunningSim::shutdown`].
pub struct RunningSim {
    addr: SocketAddr,
    handle: SimHandle,
    accept: JoinHandle<()>,
    notifier: JoinHandle<()>,
}

/// Cheap, cloneable in-process control of a running simulator.
#[derive(Clone)]
pub struct SimHandle {
    shared: Arc<Shared>,
}

/// Ids of the default topology (see [`SimHandle::create_default_topology`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefaultTopology {
    pub project_id: String,
    pub private_network_id: String,
    pub private_subnet_id: String,
    pub private_subnet_v6_id: String,
    pub public_network_id: String,
    pub public_subnet_id: String,
    pub router_id: String,
}

impl NeutronSim {
    /// Binds `listen` (loopback only; port 0 = ephemeral) and serves until shutdown.
    pub async fn start(config: SimConfig, listen: SocketAddr) -> anyhow::Result<RunningSim> {
        anyhow::ensure!(
            listen.ip().is_loopback(),
            "neutron-sim binds loopback addresses only, not {listen}"
        );
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let tags_on_post = config.has_extension("tag-ports-during-bulk-creation");
        let shared = Arc::new(Shared {
            store: Mutex::new(core::Store::new(config.seed, config.bind_activates, tags_on_post)),
            faults: Mutex::new(faults::FaultEngine::new(config.seed, config.faults.clone())),
            stats: Mutex::new(Stats::default()),
            nova_url: Mutex::new(None),
            events: tx,
            shutdown,
            delayed: Mutex::new(Vec::new()),
            next_delayed: std::sync::atomic::AtomicU64::new(0),
            config,
        });
        shared.set_nova_url(shared.config.nova_url.clone());
        let notifier = tokio::spawn(notifier::run(shared.clone(), rx));
        let accept = tokio::spawn(http::accept_loop(listener, http::app(shared.clone()), shutdown_rx));
        tracing::info!(%addr, "neutron-sim listening");
        Ok(RunningSim {
            addr,
            handle: SimHandle { shared },
            accept,
            notifier,
        })
    }
}

impl RunningSim {
    /// `http://127.0.0.1:PORT` (no `/v2.0` suffix).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
    pub fn handle(&self) -> SimHandle {
        self.handle.clone()
    }
    /// Stops accepting, closes every connection (held ones too) and stops the notifier.
    pub async fn shutdown(self) {
        let _ = self.handle.shared.shutdown.send(true);
        let _ = self.accept.await;
        let _ = self.notifier.await;
    }
}

pub(crate) fn reset(sh: &Shared, data: bool) {
    lock(&sh.faults).clear();
    *lock(&sh.stats) = Stats::default();
    if data {
        lock(&sh.store).clear();
    }
}

pub(crate) fn default_topology(sh: &Shared, project: &str) -> DefaultTopology {
    let mut st = lock(&sh.store);
    let admin = Caller::admin();
    let obj = |v: Value| -> Obj { v.as_object().cloned().unwrap_or_default() };
    let net = |st: &mut core::Store, name: &str, body: Value| -> String {
        st.network_by_name(name)
            .unwrap_or_else(|| st.create_network(&admin, &obj(body)).unwrap_or_default())
    };
    let private = net(&mut st, "private", json!({"name": "private", "project_id": project}));
    let public = net(
        &mut st,
        "public",
        json!({"name": "public", "router:external": true, "provider:network_type": "flat", "provider:physical_network": "public"}),
    );
    let subnet = |st: &mut core::Store, network: &str, v6: bool, body: Value| -> String {
        st.subnets_of(network)
            .into_iter()
            .find(|(_, is6)| *is6 == v6)
            .map(|(s, _)| s)
            .unwrap_or_else(|| st.create_subnet(&admin, &obj(body)).unwrap_or_default())
    };
    let v4 = subnet(
        &mut st,
        &private,
        false,
        json!({"name": "private-subnet", "network_id": private, "ip_version": 4, "cidr": "10.0.0.0/24", "project_id": project}),
    );
    let v6 = subnet(
        &mut st,
        &private,
        true,
        json!({"name": "ipv6-private-subnet", "network_id": private, "ip_version": 6, "cidr": "fd00::/64", "ipv6_ra_mode": "slaac", "ipv6_address_mode": "slaac", "project_id": project}),
    );
    let pub4 = subnet(
        &mut st,
        &public,
        false,
        json!({"name": "public-subnet", "network_id": public, "ip_version": 4, "cidr": "172.24.4.0/24", "enable_dhcp": false}),
    );
    let router = st.router_by_name("router1").unwrap_or_else(|| {
        st.create_router(
            &admin,
            &obj(json!({"name": "router1", "project_id": project, "external_gateway_info": {"network_id": public}})),
        )
        .unwrap_or_default()
    });
    // Idempotent: a second add fails with "already has a port on subnet", which is fine.
    let _ = st.add_router_interface(&admin, &router, &obj(json!({"subnet_id": v4})));
    DefaultTopology {
        project_id: project.to_string(),
        private_network_id: private,
        private_subnet_id: v4,
        private_subnet_v6_id: v6,
        public_network_id: public,
        public_subnet_id: pub4,
        router_id: router,
    }
}

impl SimHandle {
    pub fn add_fault(&self, rule: FaultRule) {
        lock(&self.shared.faults).add(rule);
    }
    pub fn clear_faults(&self) {
        lock(&self.shared.faults).clear();
    }
    /// Current rules with their `matched`/`fired` counters.
    pub fn faults(&self) -> Vec<RuleState> {
        lock(&self.shared.faults).list()
    }
    pub fn stats(&self) -> Stats {
        lock(&self.shared.stats).clone()
    }
    pub fn reset_stats(&self) {
        *lock(&self.shared.stats) = Stats::default();
    }
    /// Clears faults and stats, and all resources too when `data`.
    pub fn reset(&self, data: bool) {
        reset(&self.shared, data);
    }
    pub fn set_nova_url(&self, url: Option<String>) {
        self.shared.set_nova_url(url);
    }
    /// Applies every request a delayed-commit fault still holds, now, and returns
    /// how many: a test decides exactly when the late commit happens.
    pub fn release_delayed_commits(&self) -> usize {
        self.shared.release_delayed()
    }
    /// Network `private` (project's; 10.0.0.0/24 + fd00::/64 SLAAC), external network `public`
    /// (172.24.4.0/24) and router `router1` joining them. Idempotent (reuses by name).
    pub fn create_default_topology(&self, project_id: &str) -> DefaultTopology {
        default_topology(&self.shared, project_id)
    }
    /// Number of ports in the store.
    pub fn port_count(&self) -> usize {
        lock(&self.shared.store).port_count()
    }
    /// In-process API call as admin, without HTTP, faults or stats: `("POST", "/v2.0/ports?x=y", body)`.
    /// Returns the status and the JSON body (`Value::Null` when empty).
    pub fn request(&self, method: &str, path_and_query: &str, body: Option<Value>) -> (u16, Value) {
        self.request_as(&Caller::admin(), method, path_and_query, body)
    }
    /// As [`SimHandle::request`], for `caller`.
    pub fn request_as(&self, caller: &Caller, method: &str, path_and_query: &str, body: Option<Value>) -> (u16, Value) {
        let Ok(method) = method.parse::<axum::http::Method>() else {
            return (405, Value::Null);
        };
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        let Some((_, route)) = api::route(&method, path) else {
            let e = Error::route_not_found();
            return (
                404,
                json!({"NeutronError": {"type": e.kind(), "message": e.to_string(), "detail": ""}}),
            );
        };
        let req = api::ApiRequest {
            method,
            route,
            params: serde_urlencoded::from_str(query).unwrap_or_default(),
            body: body.map(|b| bytes::Bytes::from(b.to_string())).unwrap_or_default(),
            caller: caller.clone(),
            if_match: None,
            base: "http://127.0.0.1".into(),
        };
        let (res, events) = {
            let mut st = lock(&self.shared.store);
            let res = api::execute(&mut st, &self.shared.config, &req);
            (res, std::mem::take(&mut st.events))
        };
        for e in events {
            let _ = self.shared.events.send(e);
        }
        match res {
            Ok((s, v)) => (s.as_u16(), v.unwrap_or(Value::Null)),
            Err(e) => (
                e.status().as_u16(),
                json!({"NeutronError": {"type": e.kind(), "message": e.to_string(), "detail": ""}}),
            ),
        }
    }
}

/// Options of `netcache neutron-sim` (parsed by the binary; clap-free).
#[derive(Debug, Clone)]
pub struct Cli {
    pub listen: SocketAddr,
    pub config: Option<PathBuf>,
    pub seed: Option<u64>,
    pub without_extensions: Vec<String>,
    pub nova_url: Option<String>,
    pub default_topology_project: Option<String>,
}

impl Default for Cli {
    fn default() -> Self {
        Cli {
            listen: SocketAddr::from(([127, 0, 0, 1], 9696)),
            config: None,
            seed: None,
            without_extensions: Vec::new(),
            nova_url: None,
            default_topology_project: None,
        }
    }
}

impl Cli {
    /// Builds the config: file (JSON or TOML) first, then the flags on top.
    pub fn into_config(self) -> anyhow::Result<(SimConfig, SocketAddr)> {
        let mut cfg = match &self.config {
            Some(path) => SimConfig::from_text(&std::fs::read_to_string(path)?)?,
            None => SimConfig::default(),
        };
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        for x in &self.without_extensions {
            cfg = cfg.without_extension(x);
        }
        if self.nova_url.is_some() {
            cfg.nova_url = self.nova_url;
        }
        if self.default_topology_project.is_some() {
            cfg.default_topology_project = self.default_topology_project;
        }
        Ok((cfg, self.listen))
    }
}

/// Runs a simulator until Ctrl-C, creating the default topology first when
/// `config.default_topology_project` is set.
pub async fn serve_forever(config: SimConfig, listen: SocketAddr) -> anyhow::Result<()> {
    let project = config.default_topology_project.clone();
    let sim = NeutronSim::start(config, listen).await?;
    if let Some(p) = project {
        let topo = sim.handle().create_default_topology(&p);
        tracing::info!(?topo, "default topology ready");
    }
    println!("{}/v2.0", sim.url());
    tokio::signal::ctrl_c().await?;
    sim.shutdown().await;
    Ok(())
}
