//! netcache's durable records behind the [`Store`] trait: SQLite (embedded default,
//! a file created on first run) and PostgreSQL (shared by several hosts).
//!
//! Writes are batches of [`Change`]s applied in one transaction each, with
//! optimistic concurrency on server rows, intents and caches.

use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::action::Action;
use netcache_domain::change::Change;
use netcache_domain::ghost::GhostSighting;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::server::Server;
use netcache_domain::vif::VifRecord;
use netcache_domain::{DeploymentId, IntentId, PortId, ProjectId, ServerId};

mod dialect;
mod engine;
mod error;
mod json;
mod postgres;
mod sql;
mod sqlite;

pub use error::{Error, Result};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// A server's cache as stored, with its generation for compare-and-swap writes.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredCache {
    pub info: NetworkInfo,
    pub generation: i64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerFilter {
    pub project_id: Option<ProjectId>,
    pub include_deleted: bool,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// This deployment's id, generated and stored on first run.
    async fn deployment_id(&self) -> Result<DeploymentId>;

    /// Applies a batch in one transaction. Any failed precondition (a server, intent
    /// or cache changed since read) rolls the whole batch back with [`Error::Conflict`].
    ///
    /// Changes apply in order. Besides the compare-and-swaps, a duplicate key (a port
    /// already in some server's VIF records, an existing server/intent/action id) is a
    /// [`Error::Conflict`]; a change naming a row that does not exist (`UpdateVif`,
    /// `DeleteVif`, `AddActionEvent`, or a record of an unknown server) is
    /// [`Error::NotFound`]; both roll the whole batch back too. Deleting a ghost
    /// sighting that is already gone is not an error. A returned `Ok` is durable.
    async fn commit(&self, changes: Vec<Change>) -> Result<()>;

    async fn server(&self, id: ServerId) -> Result<Option<Server>>;
    /// Servers, oldest first.
    async fn servers(&self, filter: &ServerFilter) -> Result<Vec<Server>>;

    /// A server's VIF records in every state, by position.
    async fn vifs(&self, server: ServerId) -> Result<Vec<VifRecord>>;
    /// The VIF record holding a port, if any server's does.
    async fn vif_by_port(&self, port: &PortId) -> Result<Option<VifRecord>>;
    /// Every VIF record in state `releasing`, across servers (left for retry).
    async fn releasing_vifs(&self) -> Result<Vec<VifRecord>>;

    /// A server's cache; [`Error::NotFound`] for a server that does not exist.
    async fn cache(&self, server: ServerId) -> Result<StoredCache>;

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

    async fn ghost_sightings(&self) -> Result<Vec<GhostSighting>>;
    async fn ghost_sighting(&self, port: &PortId) -> Result<Option<GhostSighting>>;
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
