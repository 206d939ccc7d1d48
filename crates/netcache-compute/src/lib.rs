//! The compute service: it creates servers on compute hosts, allocates their
//! Neutron ports with the intent protocol, and keeps each server's network info
//! cache — as the source of truth for which ports are attached.
//!
//! Decisions come from `netcache-domain`; this crate does the I/O around them.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use netcache_domain::cache::{self, CacheInputs, CacheOutcome, Observed};
use netcache_domain::change::Change;
use netcache_domain::marker::MarkerMode;
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::server::Server;
use netcache_domain::vif::VifRecord;
use netcache_domain::{DeploymentId, PortId, ServerId};
use netcache_neutron::NeutronApi;
use netcache_store::Store;
use tokio::task::JoinHandle;
use tracing::info;

mod allocate;
mod audit;
mod build;
pub mod catalog;
pub mod clock;
pub mod config;
mod error;
mod events;
mod gc;
mod heal;
mod interfaces;
mod locks;
mod loops;
mod plugging;
mod recovery;
pub mod virt;

pub use audit::{AuditReport, AuditTotals, GhostAudit, LostAudit, ServerAudit};
pub use build::CreateServer;
pub use config::{ComputeConfig, CrashPoint, GcConfig, HealConfig, VirtConfig};
pub use error::{Error, Result};
pub use events::{EVENT_NAMES, EventCode, ExternalEvent};
pub use gc::GcReport;
pub use heal::HealReport;
pub use interfaces::{AttachRequest, Interface};

use crate::catalog::NetworkCatalog;
use crate::clock::Clock;
use crate::config::CrashPoint as Crash;
use crate::locks::ServerLocks;
use crate::virt::VirtDriver;

/// Who asks, for the action log and ownership checks.
#[derive(Clone, Debug)]
pub struct RequestContext {
    pub request_id: String,
    pub project_id: String,
    pub user_id: String,
}

impl RequestContext {
    /// A context for netcache's own work (recovery, background builds).
    pub fn system(project_id: &str) -> Self {
        Self {
            request_id: new_request_id(),
            project_id: project_id.to_owned(),
            user_id: "netcache".to_owned(),
        }
    }
}

/// Nova-style request id.
pub fn new_request_id() -> String {
    format!("req-{}", uuid::Uuid::new_v4())
}

pub struct Compute {
    store: Arc<dyn Store>,
    neutron: Arc<dyn NeutronApi>,
    virt: Arc<dyn VirtDriver>,
    config: ComputeConfig,
    deployment: DeploymentId,
    extensions: BTreeSet<String>,
    marker_mode: MarkerMode,
    catalog: NetworkCatalog,
    locks: ServerLocks,
    clock: Clock,
    builds: Mutex<Vec<JoinHandle<()>>>,
    next_host: AtomicUsize,
    crashed: AtomicBool,
    plug_events: plugging::PlugEvents,
    heal_passes: AtomicU64,
}

impl Compute {
    /// Starts the service: learns the deployment id and Neutron's extensions,
    /// resolves intents a crash left pending, and resumes interrupted builds.
    pub async fn start(
        config: ComputeConfig,
        store: Arc<dyn Store>,
        neutron: Arc<dyn NeutronApi>,
        virt: Arc<dyn VirtDriver>,
    ) -> Result<Arc<Self>> {
        let compute = Self::open(config, store, neutron, virt).await?;
        compute.recover().await?;
        Ok(compute)
    }

    /// The service without start-up recovery: for one-off commands (audit, heal,
    /// gc) that run beside a live service and must not resume its builds.
    pub async fn open(
        config: ComputeConfig,
        store: Arc<dyn Store>,
        neutron: Arc<dyn NeutronApi>,
        virt: Arc<dyn VirtDriver>,
    ) -> Result<Arc<Self>> {
        let deployment = store.deployment_id().await?;
        let extensions = neutron.list_extensions().await?;
        let marker_mode = MarkerMode::for_extensions(&extensions);
        info!(
            deployment = %deployment,
            marker_mode = ?marker_mode,
            "Neutron {} tags in create-port requests",
            if marker_mode == MarkerMode::Tags { "accepts" } else { "does not accept" }
        );
        Ok(Arc::new(Self {
            catalog: NetworkCatalog::new(config.network_details_ttl),
            store,
            neutron,
            virt,
            config,
            deployment,
            extensions,
            marker_mode,
            locks: ServerLocks::default(),
            clock: Clock::new(),
            builds: Mutex::new(Vec::new()),
            next_host: AtomicUsize::new(0),
            crashed: AtomicBool::new(false),
            plug_events: plugging::PlugEvents::default(),
            heal_passes: AtomicU64::new(0),
        }))
    }

    pub fn deployment_id(&self) -> &DeploymentId {
        &self.deployment
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn neutron(&self) -> &Arc<dyn NeutronApi> {
        &self.neutron
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn config(&self) -> &ComputeConfig {
        &self.config
    }

    /// Waits until every build started so far has finished.
    pub async fn settle(&self) {
        loop {
            let pending: Vec<JoinHandle<()>> = std::mem::take(&mut *self.builds.lock().expect("builds lock"));
            if pending.is_empty() {
                return;
            }
            for handle in pending {
                let _ = handle.await;
            }
        }
    }

    /// Heal passes this process has run.
    pub fn heal_passes(&self) -> u64 {
        self.heal_passes.load(Ordering::Relaxed)
    }

    /// Whether a simulated crash has happened (the process would be dead).
    pub fn has_crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    pub async fn server(&self, id: ServerId) -> Result<Server> {
        match self.store.server(id).await? {
            Some(server) if !server.is_deleted() => Ok(server),
            _ => Err(Error::ServerNotFound(id)),
        }
    }

    pub async fn network_info(&self, id: ServerId) -> Result<NetworkInfo> {
        Ok(self.store.cache(id).await?.info)
    }

    fn spawn_tracked(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        let mut builds = self.builds.lock().expect("builds lock");
        builds.retain(|h| !h.is_finished());
        builds.push(handle);
    }

    /// Stops dead at the configured crash point.
    fn crash_point(&self, point: Crash) -> Result<()> {
        if self.config.crash_at == Some(point) && !self.crashed.swap(true, Ordering::SeqCst) {
            tracing::error!(?point, "Simulated crash");
            return Err(Error::Crashed(point));
        }
        if self.has_crashed() {
            return Err(Error::Crashed(point));
        }
        Ok(())
    }

    /// Applies `changes` together with a rebuilt cache (`source` labels the write
    /// in metrics): `vifs_after` is the
    /// server's VIF set once the changes apply, `observed` the fresh Neutron details.
    /// Retries on a concurrent cache write (another process).
    async fn commit_with_cache(
        &self,
        source: &'static str,
        server_id: ServerId,
        vifs_after: &[VifRecord],
        observed: &HashMap<PortId, Observed>,
        changes: Vec<Change>,
    ) -> Result<CacheOutcome> {
        let network_ids: Vec<_> = observed
            .values()
            .filter_map(|o| match o {
                Observed::Present { port, .. } => Some(port.network_id.clone()),
                Observed::Gone => None,
            })
            .collect();
        let topology = self.catalog.topology(self.neutron.as_ref(), &network_ids).await?;
        let mut attempt = 0;
        loop {
            let stored = self.store.cache(server_id).await?;
            let outcome = cache::build_network_info(&CacheInputs {
                server_id,
                vifs: vifs_after,
                previous: &stored.info,
                observed,
                networks: &topology.networks,
                subnets: &topology.subnets,
                options: &self.config.cache,
            });
            let mut batch = changes.clone();
            batch.push(Change::WriteCache {
                server_id,
                info: outcome.info.clone(),
                expected_generation: stored.generation,
            });
            match self.store.commit(batch).await {
                Ok(()) => {
                    metrics::counter!("netcache_cache_writes_total", "source" => source).increment(1);
                    return Ok(outcome);
                }
                Err(e) if e.is_conflict() && attempt < 3 => attempt += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }
}
