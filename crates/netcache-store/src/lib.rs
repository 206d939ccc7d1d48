//! netcache's durable records behind the [`Store`] trait: SQLite (embedded default,
//! a file created on first run) and PostgreSQL (shared by several hosts).
//!
//! Writes are batches of [`Change`]s applied in one transaction each, with
//! optimistic concurrency on server rows, intents and caches.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::action::Action;
use netcache_domain::aggregate::{Aggregate, AggregateWrite, Aggregates, NewAggregate};
use netcache_domain::cache::FoundRight;
use netcache_domain::change::Change;
use netcache_domain::flavor::Flavor;
use netcache_domain::ghost::GhostSighting;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::keypair::KeyPair;
use netcache_domain::network_info::{CacheAddresses, NetworkInfo};
use netcache_domain::operation::{Operation, Owner};
use netcache_domain::quota::{ProjectLimits, Resource, ServerCount};
use netcache_domain::retention::Purged;
use netcache_domain::server::{Server, WatchedServer};
use netcache_domain::server_group::{GroupMember, ServerGroup};
use netcache_domain::service::Service;
use netcache_domain::vif::VifRecord;
use netcache_domain::{DeploymentId, HostName, IntentId, PortId, ProjectId, ServerId};

mod aggregate_sql;
mod dialect;
mod engine;
mod error;
mod json;
mod operation_sql;
#[cfg(feature = "testing")]
pub mod plans;
mod postgres;
mod service_sql;
mod sorted;
mod sql;
mod sqlite;
mod telemetry;
mod usage_sql;

pub use error::{Error, Result};
pub use postgres::PgStore;
pub use sorted::{Sort, SortKey};
pub use sqlite::SqliteStore;

/// Held while a process runs a node; dropping it (or dying) releases it.
pub struct NodeLock(Box<dyn HeldLock>);

impl NodeLock {
    pub(crate) fn new(held: impl HeldLock + 'static) -> Self {
        Self(Box::new(held))
    }

    /// Whether the lock is still held: PostgreSQL's is lost with its
    /// connection (a restarted server, a terminated session, a network cut).
    pub async fn is_held(&self) -> bool {
        self.0.is_held().await
    }
}

/// What a node lock is held by.
#[async_trait]
pub(crate) trait HeldLock: Send + Sync {
    async fn is_held(&self) -> bool;
}

/// A file lock the kernel holds for the process: held while the process lives.
#[async_trait]
impl HeldLock for std::fs::File {
    async fn is_held(&self) -> bool {
        true
    }
}

/// No lock at all, for an in-memory database no other process can open.
#[async_trait]
impl HeldLock for () {
    async fn is_held(&self) -> bool {
        true
    }
}

impl std::fmt::Debug for NodeLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeLock")
    }
}

/// Which deleted servers a watch for ghosts covers, beside the live ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeletedWatch {
    /// Servers deleted after this.
    pub since: DateTime<Utc>,
    /// Every one of them; else only those with a create unsettled (an intent
    /// pending or abandoned), the only way a port can still come to carry their
    /// id and this deployment's marker.
    pub every: bool,
}

/// A server's cache as stored, with its generation for compare-and-swap writes.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredCache {
    pub info: NetworkInfo,
    pub generation: i64,
}

/// A server's cache as stored text, for a reader that decodes it only if it
/// must (heal compares a rebuilt cache with it as text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheText {
    pub json: String,
    pub generation: i64,
}

/// A cache's generation, and what heal found of the cache at it, if it found
/// it right there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheGeneration {
    pub generation: i64,
    pub found_right: Option<FoundRight>,
}

impl CacheText {
    pub fn decode(&self) -> Result<StoredCache> {
        Ok(StoredCache {
            info: NetworkInfo::from_json(&self.json).map_err(|e| engine::corrupt("network_info", e))?,
            generation: self.generation,
        })
    }

    /// Only what the compute API shows of it: each VIF's MAC, network and IPs.
    pub fn addresses(&self) -> Result<CacheAddresses> {
        CacheAddresses::from_json(&self.json).map_err(|e| engine::corrupt("network_info", e))
    }
}

/// A key pair as stored, with the integer id Nova shows for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredKeyPair {
    pub id: i64,
    pub keypair: KeyPair,
}

/// A compute service's row, and whether its heartbeat is ahead of the
/// database's now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredService {
    pub service: Service,
    pub heartbeat_live: bool,
}

/// How many live servers of a flavor a project has on a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostServers {
    pub host: HostName,
    pub project_id: ProjectId,
    pub flavor_ref: String,
    pub servers: i64,
}

/// The servers a usage report reads (Nova's `instance_get_active_by_window_joined`):
/// those launched before `end` and not deleted by `start` (never deleted, or
/// deleted after it), live and deleted rows alike until retention purges
/// them; of `project_id` only, if given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageWindow {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub project_id: Option<ProjectId>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerFilter {
    pub project_id: Option<ProjectId>,
    pub include_deleted: bool,
}

/// Nova's host aggregates, shared by every process on the database.
#[async_trait]
pub trait AggregateStore: Send + Sync {
    /// Every aggregate with its hosts (in the order they were added) and
    /// metadata, by id, and the generation their writes compare-and-swap.
    async fn aggregates(&self) -> Result<Aggregates>;
    /// Records a new aggregate and returns it with its id; [`Error::Conflict`]
    /// if its name is taken.
    async fn create_aggregate(&self, new: &NewAggregate) -> Result<Aggregate>;
    /// Applies `write` in one transaction if the aggregates are still at
    /// `generation` (which it advances); `Ok(false)` if they moved on (decide
    /// again from a fresh read). [`Error::Conflict`]: a name or a host taken
    /// meanwhile; [`Error::NotFound`]: no such aggregate, or no such host in it.
    async fn write_aggregate(&self, generation: i64, write: &AggregateWrite) -> Result<bool>;
}

#[async_trait]
pub trait Store: AggregateStore + Send + Sync + 'static {
    /// This deployment's id, generated and stored on first run.
    async fn deployment_id(&self) -> Result<DeploymentId>;

    /// Applies a batch in one transaction. Any failed precondition (a server, intent
    /// or cache changed since read) rolls the whole batch back with [`Error::Conflict`].
    ///
    /// Changes apply in order. Besides the compare-and-swaps, a duplicate key (a port
    /// already in some server's VIF records, an existing server/intent/action id, a
    /// key pair name its user has already) is a [`Error::Conflict`]; a change naming
    /// a row that does not exist (`UpdateVif`, `DeleteVif`, `AddActionEvent`,
    /// `DeleteKeyPair`, or a record of an unknown server) is [`Error::NotFound`]; both
    /// roll the whole batch back too; so does a quota claim that does not fit
    /// ([`Error::OverQuota`]). Deleting a ghost sighting that is already gone
    /// is not an error. A returned `Ok` is durable.
    async fn commit(&self, changes: Vec<Change>) -> Result<()>;

    async fn server(&self, id: ServerId) -> Result<Option<Server>>;
    /// Servers, oldest first.
    async fn servers(&self, filter: &ServerFilter) -> Result<Vec<Server>>;
    /// At most `limit` servers, newest first (`created_at`, then id, both
    /// descending), after `after` (the previous page's last server) if given.
    async fn servers_newest_first(
        &self,
        filter: &ServerFilter,
        after: Option<&Server>,
        limit: i64,
    ) -> Result<Vec<Server>>;
    /// At most `limit` servers in `order`, then by id (in the first key's
    /// direction, unless `order` has it), after the server `after` if given:
    /// a keyset page, which reads no other rows.
    async fn servers_sorted(
        &self,
        filter: &ServerFilter,
        order: &[Sort],
        after: Option<ServerId>,
        limit: i64,
    ) -> Result<Vec<Server>>;
    /// Up to `limit` of the servers heal and audit watch — the live ones, and
    /// the deleted ones `deleted` names — whose ids are in `ids` (both ends
    /// included: a heal shard's range), in id order, after `after` (a keyset
    /// page, so a pass holds one page of servers at a time).
    async fn watched_servers(
        &self,
        deleted: DeletedWatch,
        ids: (ServerId, ServerId),
        after: Option<ServerId>,
        limit: i64,
    ) -> Result<Vec<WatchedServer>>;

    /// A server's VIF records in every state, by position.
    async fn vifs(&self, server: ServerId) -> Result<Vec<VifRecord>>;
    /// The VIF record holding a port, if any server's does.
    async fn vif_by_port(&self, port: &PortId) -> Result<Option<VifRecord>>;
    /// Every VIF record in state `releasing`, across servers (left for retry).
    async fn releasing_vifs(&self) -> Result<Vec<VifRecord>>;

    /// A server's cache; [`Error::NotFound`] for a server that does not exist.
    async fn cache(&self, server: ServerId) -> Result<StoredCache>;

    /// The VIF records of a set of servers (every state, by position), one
    /// statement per 128 servers; a server without records has no entry.
    async fn vifs_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, Vec<VifRecord>>>;
    /// The caches of a set of servers, one statement per 128 servers; a server
    /// that does not exist has no entry.
    async fn caches_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, StoredCache>>;
    /// The same caches as stored text, not decoded.
    async fn cache_texts_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, CacheText>>;
    /// The cache generation of every live server, with what heal found of the
    /// cache at that generation, in one statement.
    async fn live_cache_generations(&self) -> Result<HashMap<ServerId, CacheGeneration>>;

    /// Up to `limit` servers deleted before `before` that no VIF record or
    /// operation names any more, oldest deletion first.
    async fn purgeable_servers(&self, before: DateTime<Utc>, limit: i64) -> Result<Vec<ServerId>>;
    /// What purging every server [`Store::purgeable_servers`] finds would remove.
    async fn count_purgeable(&self, before: DateTime<Utc>) -> Result<Purged>;
    /// Deletes these servers (at most 128) with their cache, intents, actions and
    /// events, in one transaction; a server that is not deleted, or that a VIF
    /// record or an operation names, is left whole.
    async fn purge_servers(&self, servers: &[ServerId]) -> Result<Purged>;

    /// Statements and write batches this store has sent since it was opened
    /// (a batch is one transaction of several statements): what tests budget.
    fn queries_sent(&self) -> u64;
    /// Write batches this store has committed since it was opened (each all or
    /// nothing): what the write path budgets.
    fn commits_made(&self) -> u64;
    /// Transactions (each one fsync) that committed those batches: one per
    /// batch, or one per group of batches where the backend commits in groups
    /// (SQLite).
    fn transactions_made(&self) -> u64;
    /// Whole server rows this store has read since it was opened: what list
    /// pages budget.
    fn servers_read(&self) -> u64;

    async fn intent(&self, id: IntentId) -> Result<Option<PortIntent>>;
    /// A server's intents, oldest first.
    async fn intents(&self, server: ServerId) -> Result<Vec<PortIntent>>;
    /// Every intent in a state, across servers, oldest first.
    async fn intents_in_state(&self, state: IntentState) -> Result<Vec<PortIntent>>;
    /// Every intent still `pending`, across servers, oldest first.
    async fn pending_intents(&self) -> Result<Vec<PortIntent>> {
        self.intents_in_state(IntentState::Pending).await
    }
    /// How many intents are in each state (states with none are absent).
    async fn intent_counts(&self) -> Result<Vec<(IntentState, i64)>>;

    /// A server's actions, newest first, with their events.
    async fn actions(&self, server: ServerId) -> Result<Vec<Action>>;

    /// VIF records left on deleted servers (a leak if any is `attached`).
    async fn vifs_of_deleted_servers(&self) -> Result<Vec<VifRecord>>;

    /// The server's operation in flight, if any.
    async fn operation(&self, server: ServerId) -> Result<Option<Operation>>;
    /// Every operation in flight, oldest first.
    async fn operations(&self) -> Result<Vec<Operation>>;
    /// Operations `me` may take over now, on the database's clock, oldest first:
    /// those whose lease ran out, and every one of an earlier incarnation of
    /// `me`'s node (provably dead: a node runs one incarnation at a time).
    async fn claimable_operations(&self, me: &Owner, limit: i64) -> Result<Vec<Operation>>;
    /// Renews, to `lease` from the database's now, `me`'s leases of the
    /// operations on `servers` (those it works on); returns how many.
    async fn renew_leases(&self, me: &Owner, servers: &[ServerId], lease: TimeDelta) -> Result<u64>;
    /// The database's clock, which every lease is judged by.
    async fn database_now(&self) -> Result<DateTime<Utc>>;

    /// Takes the deployment-wide lease `name` for `length` if it is free, expired
    /// or `owner`'s already (then extended); returns whether `owner` holds it now.
    /// Expiry is judged and computed on the database's clock.
    async fn try_lease(&self, name: &str, owner: &str, length: Duration) -> Result<bool>;
    /// Extends `owner`'s lease `name` to `length` from the database's now;
    /// false if `owner` no longer holds it (released, or taken once expired).
    async fn renew_lease(&self, name: &str, owner: &str, length: Duration) -> Result<bool>;
    async fn release_lease(&self, name: &str, owner: &str) -> Result<()>;
    /// Releases the leases held by earlier incarnations of `me`'s node (dead:
    /// `me` holds the node's lock); returns how many.
    async fn release_node_leases(&self, me: &Owner) -> Result<u64>;

    /// Proves that no other live process runs `node` (PostgreSQL: a session advisory
    /// lock; SQLite: an exclusive lock on the database file, so one process owns
    /// it). [`Error::NodeBusy`] when another process holds it. Held while the
    /// returned lock lives, and released by the database if the process dies.
    async fn lock_node(&self, node: &str) -> Result<NodeLock>;

    async fn ghost_sightings(&self) -> Result<Vec<GhostSighting>>;
    async fn ghost_sighting(&self, port: &PortId) -> Result<Option<GhostSighting>>;

    /// A user's key pairs, by name.
    async fn keypairs(&self, user_id: &str) -> Result<Vec<StoredKeyPair>>;
    async fn keypair(&self, user_id: &str, name: &str) -> Result<Option<StoredKeyPair>>;

    /// The quota limits set for a project and for its users, by user then
    /// resource, with the values set of the `default` quota class (one read).
    async fn quota_limits(&self, project: &ProjectId) -> Result<ProjectLimits>;
    /// The values set of a quota class, by resource (none: a class never set).
    async fn quota_class(&self, class_name: &str) -> Result<Vec<(Resource, i64)>>;
    /// A project's live servers counted per user and flavor (the quotas' usage).
    async fn server_counts(&self, project: &ProjectId) -> Result<Vec<ServerCount>>;
    /// How many key pairs a user has.
    async fn keypair_count(&self, user_id: &str) -> Result<i64>;
    /// Live flavors (not deleted), in the order they were created, each with
    /// its extra specs and the projects given access.
    async fn flavors(&self) -> Result<Vec<Flavor>>;
    /// The live flavor with this id.
    async fn flavor(&self, id: &str) -> Result<Option<Flavor>>;

    /// Registers a `nova-compute` service for each host that has none (safe
    /// to run by several processes at once) and renews every one's heartbeat
    /// to `heartbeat` from the database's now.
    async fn register_services(&self, hosts: &[HostName], heartbeat: TimeDelta) -> Result<()>;
    /// Renews the heartbeats of the hosts' services; returns how many rows.
    async fn renew_service_heartbeats(&self, hosts: &[HostName], heartbeat: TimeDelta) -> Result<u64>;
    /// Every service, by id, each with whether its heartbeat is live.
    async fn services(&self) -> Result<Vec<StoredService>>;
    /// Writes an admin's change of a service (disabled, its reason, forced
    /// down); [`Error::Conflict`] unless the row is still at `service.generation`.
    async fn update_service(&self, service: &Service) -> Result<()>;
    /// Deletes a service's row; false if there was none.
    async fn delete_service(&self, id: i64) -> Result<bool>;
    /// The hosts whose compute service is disabled or forced down, in one
    /// statement: the scheduler picks none of them.
    async fn unschedulable_hosts(&self) -> Result<Vec<HostName>>;
    /// Live servers counted per host and flavor.
    async fn server_counts_by_host(&self) -> Result<Vec<HostServers>>;
    /// A host's live servers (id and name), oldest first.
    async fn servers_on_host(&self, host: &HostName) -> Result<Vec<(ServerId, String)>>;
    /// At most `limit` of the servers that ran in `window`, by project (byte
    /// by byte, as Rust compares strings) then id, after `after` (the previous
    /// page's last server, or any server: a keyset page) if given.
    async fn servers_in_window(&self, window: &UsageWindow, after: Option<&Server>, limit: i64) -> Result<Vec<Server>>;

    async fn server_group(&self, id: uuid::Uuid) -> Result<Option<ServerGroup>>;
    /// Every server group, or a project's, oldest first.
    async fn server_groups(&self, project: Option<&ProjectId>) -> Result<Vec<ServerGroup>>;
    /// A group's live members (deleted servers are no longer members), in the
    /// order they joined.
    async fn group_members(&self, group: uuid::Uuid) -> Result<Vec<GroupMember>>;
    /// The live members of every group, or of a project's groups, by group.
    async fn members_of_groups(&self, project: Option<&ProjectId>) -> Result<HashMap<uuid::Uuid, Vec<GroupMember>>>;
    /// The groups a server is in.
    async fn groups_of_server(&self, server: ServerId) -> Result<Vec<uuid::Uuid>>;
    /// How many server groups a project has, and how many of them are the user's.
    async fn server_group_count(&self, project: &ProjectId, user: &str) -> Result<(i64, i64)>;
}

/// Opens (creating and migrating if needed) the store named by `url`:
/// `sqlite:PATH` / `sqlite::memory:` or `postgres://…` / `postgresql://…`.
pub async fn open(url: &str) -> Result<Arc<dyn Store>> {
    let (store, backend): (Arc<dyn Store>, _) = if url.starts_with("sqlite:") {
        (Arc::new(SqliteStore::open(url).await?), "sqlite")
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        (Arc::new(PgStore::open(url).await?), "postgres")
    } else {
        return Err(Error::UnsupportedUrl(url.to_owned()));
    };
    let deployment = store.deployment_id().await?;
    tracing::info!(%deployment, backend, "Opened the {backend} store of deployment {deployment}");
    Ok(store)
}
