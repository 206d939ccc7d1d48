//! The compute service: it creates servers on compute hosts, allocates their
//! Neutron ports with the intent protocol, and keeps each server's network info
//! cache — as the source of truth for which ports are attached.
//!
//! Decisions come from `netcache-domain`; this crate does the I/O around them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use netcache_domain::action::Action;
use netcache_domain::cache::{self, CacheInputs, CacheOutcome, Observed};
use netcache_domain::change::Change;
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::server::Server;
use netcache_domain::vif::VifRecord;
use netcache_domain::{DeploymentId, PortId, ServerId};
use netcache_neutron::NeutronApi;
use netcache_store::Store;
use tokio::task::JoinHandle;
use tracing::info;

pub mod attachment;
pub mod clock;
pub mod config;
mod error;
mod fleet;
mod hooks;
pub mod lifecycle;
mod operation_kinds;
mod proxies;
mod runner;
mod tenancy;

pub use attachment::audit::{AuditReport, AuditTotals, GhostAudit, LostAudit, OperationAudit, ServerAudit};
pub use attachment::events::{EVENT_NAMES, EventCode, ExternalEvent};
pub use attachment::gc::GcReport;
pub use attachment::heal::HealReport;
pub use attachment::interfaces::{AttachRequest, Interface};
pub use attachment::security_groups::SecurityGroupsInFull;
pub use attachment::{AttachmentOps, AuditOps, EventOps, FixedIpOps, InterfaceOps, ServerSecurityGroupOps};
#[cfg(feature = "testing")]
pub use config::Sabotage;
pub use config::{ComputeConfig, CrashPoint, GcConfig, HealConfig, OperationsConfig, RetentionConfig, VirtConfig};
pub use error::{Error, Result};
pub use fleet::aggregates::AggregateOps;
pub use fleet::flavors::FlavorOps;
pub use fleet::services::{ServiceKey, ServiceOps};
#[cfg(feature = "testing")]
pub use hooks::Held;
pub use hooks::HoldPoint;
pub use lifecycle::build::CreateServer;
pub use lifecycle::edit::{ServerEdit, TagEdit};
pub use lifecycle::rebuild::RebuildServer;
pub use lifecycle::{BuildOps, ConsoleOps, EditOps, PowerOps, RebuildOps, ServerOps, ServerReads, ServerStateOps};
pub use netcache_store::{HostServers, StoredService, UsageWindow};
/// The orders of server list pages (`ServerReads::servers_page`).
pub use netcache_store::{Sort, SortKey, StoredKeyPair};
pub use proxies::floating_ip_proxy::{FloatingIpProxy, PooledFloatingIp};
pub use proxies::network_proxy::NetworkProxy;
pub use proxies::security_group_proxy::SecurityGroupProxy;
pub use runner::retention::purge;
pub use tenancy::keypairs::{KeyPairOps, KeyPairRequest, NewKeyPair};
pub use tenancy::project_scope::ProjectScope;
pub use tenancy::quotas::{QuotaOps, QuotaUsage};
pub use tenancy::server_groups::{GroupView, NewServerGroup, ServerGroupOps};

/// Every request-side trait of the service, for code that holds the whole
/// `Compute` (its own crates' tests, the binary's tools) rather than one
/// narrow interface: `use netcache_compute::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AggregateOps, AttachmentOps, AuditOps, BuildOps, ConsoleOps, EditOps, EventOps, FixedIpOps, FlavorOps,
        FloatingIpProxy, InterfaceOps, KeyPairOps, NetworkProxy, PowerOps, QuotaOps, RebuildOps, SecurityGroupProxy,
        ServerGroupOps, ServerOps, ServerReads, ServerSecurityGroupOps, ServerStateOps, ServiceOps,
    };
}

use crate::attachment::catalog::NetworkCatalog;
use crate::clock::Clock;
use crate::lifecycle::virt::VirtDriver;

/// Who asks, for the action log and ownership checks.
#[derive(Clone, Debug)]
pub struct RequestContext {
    pub request_id: String,
    pub project_id: String,
    pub user_id: String,
    /// Keystone role names (lower case).
    pub roles: Vec<String>,
}

impl RequestContext {
    /// A context for netcache's own work (recovery, background builds): the
    /// operator's, so admin.
    #[must_use]
    pub fn system(project_id: &str) -> Self {
        Self {
            request_id: new_request_id(),
            project_id: project_id.to_owned(),
            user_id: "netcache".to_owned(),
            roles: vec!["admin".to_owned()],
        }
    }

    /// The instance action this request starts on a server, named as Nova names it.
    #[must_use]
    pub fn action(&self, server_id: ServerId, name: &str, at: chrono::DateTime<chrono::Utc>) -> Action {
        Action {
            server_id,
            request_id: self.request_id.clone(),
            action: name.to_owned(),
            project_id: self.project_id.clone(),
            user_id: self.user_id.clone(),
            start_time: at,
            message: None,
            events: vec![],
        }
    }

    #[must_use]
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    #[must_use]
    pub fn is_admin(&self) -> bool {
        self.has_role("admin")
    }
}

/// Nova-style request id.
#[must_use]
pub fn new_request_id() -> String {
    format!("req-{}", uuid::Uuid::new_v4())
}

pub struct Compute {
    store: Arc<dyn Store>,
    neutron: Arc<dyn NeutronApi>,
    virt: Arc<dyn VirtDriver>,
    config: ComputeConfig,
    deployment: DeploymentId,
    /// Neutron's extensions, once it named them.
    features: attachment::neutron_features::NeutronFeatures,
    catalog: NetworkCatalog,
    clock: Clock,
    /// The operation runner: this process's owner identity, node lock, slots,
    /// workers and waiting requests.
    runner: Arc<runner::OperationRunner>,
    build_permits: HashMap<netcache_domain::HostName, Arc<tokio::sync::Semaphore>>,
    /// Names of security groups, for servers' views.
    group_names: attachment::security_groups::GroupNames,
    builds: Mutex<Vec<JoinHandle<()>>>,
    next_host: AtomicUsize,
    crashed: AtomicBool,
    #[cfg(feature = "testing")]
    holds: hooks::Holds,
    plug_events: attachment::plugging::PlugEvents,
    unsent_intents: attachment::first_attempt::UnsentIntents,
    heal_passes: AtomicU64,
}

impl Compute {
    /// Starts the service: learns the deployment id and Neutron's extensions
    /// (later, in the background, if Neutron does not answer now), proves no
    /// other live process runs its node, releases the leases an earlier
    /// incarnation of it held, and takes over the operations it (or a dead
    /// process) left unfinished.
    pub async fn start(
        config: ComputeConfig,
        store: Arc<dyn Store>,
        neutron: Arc<dyn NeutronApi>,
        virt: Arc<dyn VirtDriver>,
    ) -> Result<Arc<Self>> {
        let node = config.node_name();
        let compute = Self::new(node, config, store, neutron, virt).await?;
        let lock = compute.lock_node().await?;
        compute.runner.hold_node_lock(lock).await;
        compute.register_services().await?;
        compute.release_earlier_leases().await?;
        compute.claim_orphaned_operations().await?;
        Ok(compute)
    }

    /// Proves no other live process runs this node. A restart right after a kill
    /// may find the dead incarnation's lock not yet dropped by the database: it
    /// waits up to one lease for it (a live process keeps it, and is refused).
    async fn lock_node(&self) -> Result<netcache_store::NodeLock> {
        let deadline = tokio::time::Instant::now() + self.config.operations.lease;
        loop {
            match self.store.lock_node(&self.runner.owner.node).await {
                Err(netcache_store::Error::NodeBusy(why)) if tokio::time::Instant::now() < deadline => {
                    tracing::warn!("{why}; waiting for it to be released");
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                other => return Ok(other?),
            }
        }
    }

    /// The service without start-up recovery: for one-off commands (audit, heal,
    /// gc) that run beside a live service and must not resume its builds. It is
    /// a node of its own (`oneoff-<pid>-<id>`), never a service's: a service
    /// takes the operations it starts (GC's releases) over only once their
    /// leases run out, and it renews them while it runs.
    pub async fn open(
        config: ComputeConfig,
        store: Arc<dyn Store>,
        neutron: Arc<dyn NeutronApi>,
        virt: Arc<dyn VirtDriver>,
    ) -> Result<Arc<Self>> {
        let node = format!(
            "oneoff-{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let compute = Self::new(node, config, store, neutron, virt).await?;
        compute.spawn_lease_renewal();
        Ok(compute)
    }

    async fn new(
        node: String,
        config: ComputeConfig,
        store: Arc<dyn Store>,
        neutron: Arc<dyn NeutronApi>,
        virt: Arc<dyn VirtDriver>,
    ) -> Result<Arc<Self>> {
        let deployment = store.deployment_id().await?;
        info!(deployment = %deployment, node = %node, "Compute service of deployment {deployment} as node {node}");
        let owner = netcache_domain::operation::Owner {
            node,
            incarnation: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
        };
        let build_permits = config
            .hosts
            .iter()
            .map(|h| {
                (
                    h.clone(),
                    Arc::new(tokio::sync::Semaphore::new(
                        config.operations.max_concurrent_builds.max(1),
                    )),
                )
            })
            .collect();
        let compute = Arc::new(Self {
            runner: runner::OperationRunner::new(owner, config.operations.clone(), operation_kinds::step_for),
            build_permits,
            group_names: attachment::security_groups::GroupNames::new(config.network_details_ttl),
            catalog: NetworkCatalog::new(config.network_details_ttl),
            store,
            neutron,
            virt,
            config,
            deployment,
            features: attachment::neutron_features::NeutronFeatures::default(),
            clock: Clock::new(),
            builds: Mutex::new(Vec::new()),
            next_host: AtomicUsize::new(0),
            crashed: AtomicBool::new(false),
            #[cfg(feature = "testing")]
            holds: hooks::Holds::default(),
            plug_events: attachment::plugging::PlugEvents::default(),
            unsent_intents: attachment::first_attempt::UnsentIntents::default(),
            heal_passes: AtomicU64::new(0),
        });
        compute.learn_neutron_features().await;
        Ok(compute)
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

    /// This process's identity in operation rows.
    pub fn owner(&self) -> &netcache_domain::operation::Owner {
        &self.runner.owner
    }

    /// Whether this process takes new work: not while its node lock is lost.
    pub fn takes_work(&self) -> bool {
        self.runner.takes_work()
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

    pub(crate) async fn server(&self, id: ServerId) -> Result<Server> {
        match self.store.server(id).await? {
            Some(server) if !server.is_deleted() => Ok(server),
            _ => Err(Error::ServerNotFound(id)),
        }
    }

    pub(crate) async fn network_info(&self, id: ServerId) -> Result<NetworkInfo> {
        Ok(self.store.cache(id).await?.info)
    }

    fn spawn_tracked(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        let mut builds = self.builds.lock().expect("builds lock");
        builds.retain(|h| !h.is_finished());
        builds.push(handle);
    }

    /// Applies `changes` together with a rebuilt cache (`source` labels the write
    /// in metrics): `vifs_after` is the
    /// server's VIF set once the changes apply, `observed` the fresh Neutron details.
    /// Retries on a concurrent cache write (an event's). The cache write comes
    /// first in the batch: the VIF changes after it advance the generation again.
    async fn commit_with_cache(
        &self,
        source: &'static str,
        server_id: ServerId,
        vifs_after: &[VifRecord],
        observed: &HashMap<PortId, Observed>,
        changes: Vec<Change>,
    ) -> Result<CacheOutcome> {
        let mut attempt = 0;
        loop {
            let stored = self.store.cache(server_id).await?;
            match self
                .commit_with_cache_at(source, server_id, &stored, vifs_after, observed, changes.clone())
                .await
            {
                Err(Error::Store(e)) if e.is_conflict() && attempt < 3 => attempt += 1,
                other => return other,
            }
        }
    }

    /// The same, only if the server's cache (and VIF records) are still as in
    /// `stored`, read before the caller asked Neutron: a conflict otherwise.
    async fn commit_with_cache_at(
        &self,
        source: &'static str,
        server_id: ServerId,
        stored: &netcache_store::StoredCache,
        vifs_after: &[VifRecord],
        observed: &HashMap<PortId, Observed>,
        changes: Vec<Change>,
    ) -> Result<CacheOutcome> {
        let (outcome, write) = self.cache_write(server_id, stored, vifs_after, observed).await?;
        let mut batch = vec![write];
        batch.extend(changes);
        self.commit(batch).await?;
        metrics::counter!("netcache_cache_writes_total", "source" => source).increment(1);
        Ok(outcome)
    }

    /// The server's cache rebuilt from `vifs_after` and `observed`, and its
    /// write, a compare-and-swap on the generation of `stored`.
    async fn cache_write(
        &self,
        server_id: ServerId,
        stored: &netcache_store::StoredCache,
        vifs_after: &[VifRecord],
        observed: &HashMap<PortId, Observed>,
    ) -> Result<(CacheOutcome, Change)> {
        let network_ids: Vec<_> = observed
            .values()
            .filter_map(|o| match o {
                Observed::Present { port, .. } => Some(port.network_id.clone()),
                Observed::Gone => None,
            })
            .collect();
        let topology = self.catalog.topology(self.neutron.as_ref(), &network_ids).await?;
        let outcome = cache::build_network_info(&CacheInputs {
            server_id,
            vifs: vifs_after,
            previous: &stored.info,
            observed,
            networks: &topology.networks,
            subnets: &topology.subnets,
            options: &self.config.cache,
        });
        let write = Change::WriteCache {
            server_id,
            info: outcome.info.clone(),
            expected_generation: stored.generation,
        };
        Ok((outcome, write))
    }
}
