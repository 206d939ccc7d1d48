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
mod error;
mod faults;
mod http;
mod notifier;
mod routes;
mod store;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use crate::config::{ALL_EXTENSIONS, FaultAction, FaultRule, SimConfig};
pub use crate::error::Error;
pub use crate::faults::{RuleState, Stats, json_subset};
use crate::http::{Shared, lock};
use crate::store::Obj;
pub use crate::store::{Caller, NovaEvent};
use tower::ServiceExt;

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
            store: Mutex::new(store::Store::new(config.seed, config.bind_activates, tags_on_post)),
            faults: Mutex::new(faults::FaultEngine::new(config.seed, config.faults.clone())),
            stats: Mutex::new(Stats::default()),
            nova_url: Mutex::new(None),
            events: tx,
            shutdown,
            delayed: Mutex::new(Vec::new()),
            next_delayed: std::sync::atomic::AtomicU64::new(0),
            held: Mutex::new(0),
            releases: watch::channel(0).0,
            config,
        });
        shared.set_nova_url(shared.config.nova_url.clone());
        let notifier = tokio::spawn(notifier::run(shared.clone(), rx));
        let accept = tokio::spawn(http::accept_loop(listener, routes::app(shared.clone()), shutdown_rx));
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
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
    #[must_use]
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
    let net = |st: &mut store::Store, name: &str, body: Value| -> String {
        st.network_by_name(name)
            .unwrap_or_else(|| st.create_network(&admin, &obj(body)).unwrap_or_default())
    };
    let private = net(&mut st, "private", json!({"name": "private", "project_id": project}));
    let public = net(
        &mut st,
        "public",
        json!({"name": "public", "router:external": true, "provider:network_type": "flat", "provider:physical_network": "public"}),
    );
    let subnet = |st: &mut store::Store, network: &str, v6: bool, body: Value| -> String {
        st.subnets_of(network)
            .into_iter()
            .find(|(_, is6)| *is6 == v6)
            .map_or_else(|| st.create_subnet(&admin, &obj(body)).unwrap_or_default(), |(s, _)| s)
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
    #[must_use]
    pub fn faults(&self) -> Vec<RuleState> {
        lock(&self.shared.faults).list()
    }
    #[must_use]
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
    #[must_use]
    pub fn release_delayed_commits(&self) -> usize {
        self.shared.release_delayed()
    }
    /// Lets every call a hold fault keeps waiting be handled now; returns how many.
    #[must_use]
    pub fn release_held(&self) -> usize {
        self.shared.release_held()
    }
    /// Network `private` (project's; 10.0.0.0/24 + fd00::/64 SLAAC), external network `public`
    /// (172.24.4.0/24) and router `router1` joining them. Idempotent (reuses by name).
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; the ids are there if wanted"
    )]
    pub fn create_default_topology(&self, project_id: &str) -> DefaultTopology {
        default_topology(&self.shared, project_id)
    }
    /// Number of ports in the store.
    #[must_use]
    pub fn port_count(&self) -> usize {
        lock(&self.shared.store).port_count()
    }
    /// In-process API call as admin, through the same routes but without a socket, faults or
    /// stats: `("POST", "/v2.0/ports?x=y", body)`.
    /// Returns the status and the JSON body (`Value::Null` when empty).
    #[allow(
        clippy::must_use_candidate,
        reason = "called for its effect; the answer is there if wanted"
    )]
    pub fn request(&self, method: &str, path_and_query: &str, body: Option<Value>) -> (u16, Value) {
        self.request_as(&Caller::admin(), method, path_and_query, body)
    }
    /// As [`SimHandle::request`], for `caller`.
    #[must_use]
    pub fn request_as(&self, caller: &Caller, method: &str, path_and_query: &str, body: Option<Value>) -> (u16, Value) {
        // The same routes as over HTTP; without faults, nothing in them waits, so the
        // future completes on its first poll.
        let Ok(method) = method.parse::<axum::http::Method>() else {
            return (405, Value::Null);
        };
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path_and_query)
            .extension(http::InProcess(caller.clone()))
            .body(axum::body::Body::from(body.map(|b| b.to_string()).unwrap_or_default()));
        let Ok(request) = request else {
            return (404, Value::Null);
        };
        futures::executor::block_on(async {
            let Ok(res) = routes::app(self.shared.clone()).oneshot(request).await;
            let status = res.status().as_u16();
            let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
                .await
                .unwrap_or_default();
            (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
        })
    }
}
