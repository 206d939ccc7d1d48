//! The one implementation of [`Store`], generic over the sqlx database: every
//! statement, bind and row decoding is written once here and runs on both
//! backends. The backend modules only connect, migrate and supply a [`Dialect`].

use netcache_store_bounds::sql_bounds;
use std::collections::HashMap;
use std::marker::PhantomData;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::action::{Action, ActionEvent};
use netcache_domain::cache::FoundRight;
use netcache_domain::change::Change;
use netcache_domain::flavor::Flavor;
use netcache_domain::ghost::{GhostOwner, GhostSighting};
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::keypair::KeyPair;
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::operation::{Operation, Owner};
use netcache_domain::quota::{ProjectLimits, Resource, ServerCount};
use netcache_domain::retention::Purged;
use netcache_domain::server::{Server, WatchedServer};
use netcache_domain::server_group::{GroupMember, ServerGroup};
use netcache_domain::vif::{PortDetails, VifRecord, VifState};
use netcache_domain::{DeploymentId, HostName, IntentId, NetworkId, PortId, ProjectId, ServerId};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Database, Pool};
use uuid::Uuid;

use crate::dialect::Dialect;
use crate::{
    CacheGeneration, CacheText, DeletedWatch, Error, HostServers, NodeLock, Result, ServerFilter, Sort, Store,
    StoredCache, StoredKeyPair, StoredService, UsageWindow, json, sorted, sql, telemetry,
};

mod aggregates;
mod cols;
mod counts;
mod flavors;
mod group_commit;
mod leases;
mod operations;
mod quotas;
mod retention;
mod server_groups;
mod server_rows;
mod services;
mod sets;
mod usage;

use cols::Cols;
pub(crate) use cols::corrupt;
pub(crate) use counts::QueryCount;
pub(crate) use group_commit::GroupWriter;
#[cfg(any(test, feature = "testing"))]
pub(crate) use sets::placeholders;

/// A store over one sqlx pool; implemented by `SqliteStore` and `PgStore`.
pub(crate) trait Backend: Send + Sync + 'static {
    type Db: Dialect;
    /// The pool, for one read: each call is counted.
    fn pool(&self) -> &Pool<Self::Db>;
    /// The pool of writes, for one statement or one batch: each call is counted.
    /// SQLite's holds one connection, so writers queue in the process instead of
    /// sleeping on the database's lock; PostgreSQL's is the one pool.
    fn writer(&self) -> &Pool<Self::Db>;
    /// How many times [`Backend::pool`] and [`Backend::writer`] were asked
    /// for, and how many batches were committed.
    fn counts(&self) -> &QueryCount;
    /// The queue that commits this store's batches in groups, if it has one
    /// (SQLite's); else each batch is its own transaction on [`Backend::writer`].
    fn group_writer(&self) -> Option<&GroupWriter> {
        None
    }
    /// Proves this is the only live process of `node` for as long as the lock lives.
    fn lock_node_exclusively(&self, node: &str) -> impl Future<Output = Result<NodeLock>> + Send;
}

pub(crate) type Q<'q, DB> = Query<'q, DB, <DB as Database>::Arguments>;

/// Namespace of the generic helpers (statements, binds, row decoding).
pub(crate) struct Sql<DB>(PhantomData<DB>);

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    /// Stamps the deployment id on first open; a no-op once any process has.
    pub(crate) async fn ensure_deployment(pool: &Pool<DB>) -> Result<()> {
        let fresh = format!("nc-{}", &Uuid::new_v4().simple().to_string()[..12]);
        sqlx::query(sql::INSERT_DEPLOYMENT).bind(fresh).execute(pool).await?;
        Ok(())
    }

    /// Runs one write, mapping key violations to the caller's failed precondition.
    async fn run(conn: &mut DB::Connection, query: Q<'_, DB>) -> Result<u64> {
        let result = query.execute(conn).await.map_err(Error::from_write)?;
        Ok(DB::rows_affected(&result))
    }

    /// Applies a batch's changes, in order, inside the caller's transaction;
    /// stops at the first that fails.
    pub(crate) async fn apply_batch(conn: &mut DB::Connection, changes: &[Change]) -> Result<()> {
        // Server quota claims last: the project's lock they take is then held
        // only through their count and the commit (invariant 23).
        let (claims, others): (Vec<&Change>, Vec<&Change>) =
            changes.iter().partition(|c| matches!(c, Change::RequireServerQuota(_)));
        for change in others.into_iter().chain(claims) {
            Self::apply(conn, change, changes).await?;
        }
        Ok(())
    }

    /// Applies one change of `batch`.
    async fn apply(conn: &mut DB::Connection, change: &Change, batch: &[Change]) -> Result<()> {
        match change {
            Change::InsertServer(server) => {
                Self::run(conn, Self::bind_server(sqlx::query(sql::INSERT_SERVER), server)).await?;
                let cache = sqlx::query(sql::INSERT_EMPTY_CACHE).bind(DB::uuid(server.id.0));
                Self::run(conn, cache).await?;
            }
            Change::UpdateServer(server) => {
                let query = Self::bind_server(sqlx::query(sql::UPDATE_SERVER), server);
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "server {} is not at generation {}",
                        server.id, server.generation
                    )));
                }
            }
            Change::InsertVif(vif) => {
                Self::run(conn, Self::bind_vif(sqlx::query(sql::INSERT_VIF), vif)).await?;
                Self::bump_cache_generation(conn, vif.server_id).await?;
            }
            Change::UpdateVif(vif) => {
                if Self::run(conn, Self::bind_vif(sqlx::query(sql::UPDATE_VIF), vif)).await? == 0 {
                    return Err(vif_not_found(vif.server_id, &vif.port_id));
                }
                Self::bump_cache_generation(conn, vif.server_id).await?;
            }
            Change::DeleteVif { server_id, port_id } => {
                let query = sqlx::query(sql::DELETE_VIF)
                    .bind(DB::uuid(server_id.0))
                    .bind(port_id.as_str());
                if Self::run(conn, query).await? == 0 {
                    return Err(vif_not_found(*server_id, port_id));
                }
                Self::bump_cache_generation(conn, *server_id).await?;
            }
            Change::InsertIntent(intent) => {
                Self::run(conn, Self::bind_intent(sqlx::query(sql::INSERT_INTENT), intent)).await?;
            }
            Change::UpdateIntent { intent, expected } => {
                let query = Self::bind_intent(sqlx::query(sql::UPDATE_INTENT), intent).bind(expected.as_str());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!("intent {} is not {expected}", intent.id)));
                }
            }
            Change::WriteCache {
                server_id,
                info,
                expected_generation,
            } => {
                let query = sqlx::query(sql::WRITE_CACHE)
                    .bind(DB::uuid(server_id.0))
                    .bind(*expected_generation)
                    .bind(info.to_json());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "cache of server {server_id} is not at generation {expected_generation}"
                    )));
                }
            }
            Change::RecordFoundRight {
                server_id,
                generation,
                found,
            } => {
                let (inputs, text) = found.to_columns();
                let query = sqlx::query(sql::RECORD_FOUND_RIGHT)
                    .bind(DB::uuid(server_id.0))
                    .bind(*generation)
                    .bind(inputs)
                    .bind(text);
                Self::run(conn, query).await?;
            }
            Change::StartAction(action) => {
                let query = sqlx::query(sql::INSERT_ACTION)
                    .bind(DB::uuid(action.server_id.0))
                    .bind(action.request_id.as_str())
                    .bind(action.action.as_str())
                    .bind(action.project_id.as_str())
                    .bind(action.user_id.as_str())
                    .bind(DB::ts(action.start_time))
                    .bind(action.message.as_deref());
                Self::run(conn, query).await?;
                for event in &action.events {
                    Self::add_event(conn, action.server_id, &action.request_id, event).await?;
                }
            }
            Change::AddActionEvent {
                server_id,
                request_id,
                event,
            } => Self::add_event(conn, *server_id, request_id, event).await?,
            Change::UpsertGhostSighting(ghost) => {
                let intent = match &ghost.owner {
                    GhostOwner::Ours { intent } => intent.map(|i| DB::uuid(i.0)),
                    GhostOwner::Foreign => None,
                };
                let query = sqlx::query(sql::UPSERT_GHOST)
                    .bind(ghost.port_id.as_str())
                    .bind(ghost.device_id.as_str())
                    .bind(ghost.owner.label())
                    .bind(intent)
                    .bind(DB::ts(ghost.first_seen))
                    .bind(DB::ts(ghost.last_seen))
                    .bind(i64::from(ghost.times_seen))
                    .bind(to_i64("revision_number", ghost.revision_number)?);
                Self::run(conn, query).await?;
            }
            // Deleting a sighting that is already gone is not an error: two sweeps
            // may both see the ghost disappear.
            Change::DeleteGhostSighting { port_id } => {
                Self::run(conn, sqlx::query(sql::DELETE_GHOST).bind(port_id.as_str())).await?;
            }
            Change::RequireIdle { server_id } => {
                let query = sqlx::query(sql::REQUIRE_IDLE).bind(DB::uuid(server_id.0));
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "server {server_id} has an operation in flight (or is gone)"
                    )));
                }
            }
            Change::InsertOperation { .. }
            | Change::HoldOperation { .. }
            | Change::FinishOperation { .. }
            | Change::ReplaceOperation { .. }
            | Change::RecordOperationFailure { .. }
            | Change::QueueDelete { .. }
            | Change::ClaimOperation { .. } => Self::apply_operation_change(conn, change).await?,
            Change::InsertKeyPair(keypair) => {
                let query = sqlx::query(sql::INSERT_KEYPAIR)
                    .bind(keypair.user_id.as_str())
                    .bind(keypair.name.as_str())
                    .bind(keypair.public_key.as_str())
                    .bind(keypair.fingerprint.as_str())
                    .bind(DB::ts(keypair.created_at))
                    .bind(keypair.key_type.as_str());
                Self::run(conn, query).await?;
            }
            Change::DeleteKeyPair { user_id, name } => {
                let query = sqlx::query(sql::DELETE_KEYPAIR)
                    .bind(user_id.as_str())
                    .bind(name.as_str());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::NotFound(format!("key pair {name:?} of user {user_id:?}")));
                }
            }
            Change::SetQuotaLimits { .. } | Change::DeleteQuotaLimits { .. } | Change::SetQuotaClass { .. } => {
                Self::apply_quota_change(conn, change).await?;
            }
            Change::RequireServerQuota(claim) => Self::require_server_quota(conn, claim, batch).await?,
            Change::RequireKeyPairQuota(claim) => Self::require_keypair_quota(conn, claim).await?,
            Change::InsertFlavor(_)
            | Change::DeleteFlavor { .. }
            | Change::SetFlavorDescription { .. }
            | Change::AddFlavorAccess { .. }
            | Change::RemoveFlavorAccess { .. }
            | Change::SetFlavorExtraSpecs { .. }
            | Change::DeleteFlavorExtraSpec { .. } => Self::apply_flavor_change(conn, change).await?,
            Change::InsertServerGroup(_)
            | Change::DeleteServerGroup { .. }
            | Change::AdvanceServerGroup { .. }
            | Change::InsertGroupMember { .. }
            | Change::RequireServerGroupQuota(_) => Self::apply_group_change(conn, change).await?,
        }
        Ok(())
    }

    async fn bump_cache_generation(conn: &mut DB::Connection, server: ServerId) -> Result<()> {
        Self::run(conn, sqlx::query(sql::BUMP_CACHE_GENERATION).bind(DB::uuid(server.0))).await?;
        Ok(())
    }

    async fn add_event(
        conn: &mut DB::Connection,
        server: ServerId,
        request_id: &str,
        event: &ActionEvent,
    ) -> Result<()> {
        let query = sqlx::query(sql::INSERT_ACTION_EVENT)
            .bind(DB::uuid(server.0))
            .bind(request_id)
            .bind(event.event.as_str())
            .bind(DB::ts(event.start_time))
            .bind(event.finish_time.map(DB::ts))
            .bind(event.result.as_deref())
            .bind(event.details.as_deref())
            .bind(event.host.as_deref());
        if Self::run(conn, query).await? == 0 {
            return Err(Error::NotFound(format!("action {request_id} of server {server}")));
        }
        Ok(())
    }

    /// `$1` id, `$2` generation, then the other columns (see [`sql::UPDATE_SERVER`]).
    fn bind_server<'q>(query: Q<'q, DB>, s: &Server) -> Q<'q, DB> {
        query
            .bind(DB::uuid(s.id.0))
            .bind(s.generation)
            .bind(s.name.as_str())
            .bind(s.project_id.as_str())
            .bind(s.user_id.as_str())
            .bind(s.host.as_ref().map(HostName::as_str))
            .bind(s.availability_zone.as_str())
            .bind(s.vm_state.as_str())
            .bind(s.task_state.map(netcache_domain::server::TaskState::as_str))
            .bind(s.fault.as_ref().map(|f| i64::from(f.code)))
            .bind(s.fault.as_ref().map(|f| f.message.as_str()))
            .bind(s.fault.as_ref().map(|f| DB::ts(f.created)))
            .bind(s.flavor_ref.as_str())
            .bind(s.image_ref.as_str())
            .bind(json::metadata_to_json(&s.metadata))
            .bind(json::requests_to_json(&s.requested_networks))
            .bind(json::hosts_to_json(&s.tried_hosts))
            .bind(DB::ts(s.created_at))
            .bind(DB::ts(s.updated_at))
            .bind(s.launched_at.map(DB::ts))
            .bind(s.deleted_at.map(DB::ts))
            .bind(s.access_ip_v4.map(|ip| ip.to_string()))
            .bind(s.access_ip_v6.map(|ip| ip.to_string()))
            .bind(s.key_name.as_deref())
            .bind(s.locked_by.map(netcache_domain::server::LockedBy::as_str))
            .bind(json::strings_to_json(&s.security_groups))
            .bind(s.flavor.as_ref().map(json::flavor_to_json))
            .bind(s.flavor.as_ref().map(|f| f.vcpus))
            .bind(s.flavor.as_ref().map(|f| f.ram_mb))
            .bind(json::attributes_to_json(&s.attributes))
    }

    /// `$1` server, `$2` port, then the other columns (see [`sql::UPDATE_VIF`]).
    fn bind_vif<'q>(query: Q<'q, DB>, v: &VifRecord) -> Q<'q, DB> {
        query
            .bind(DB::uuid(v.server_id.0))
            .bind(v.port_id.as_str())
            .bind(v.position)
            .bind(v.origin.as_str())
            .bind(v.state.as_str())
            .bind(v.intent_id.map(|i| DB::uuid(i.0)))
            .bind(v.network_id.as_str())
            .bind(v.requested_fixed_ip.map(|ip| ip.to_string()))
            .bind(v.tag.as_deref())
            .bind(v.details.as_ref().map(PortDetails::to_json))
    }

    /// `$1` id, then the other columns (see [`sql::UPDATE_INTENT`]).
    fn bind_intent<'q>(query: Q<'q, DB>, i: &PortIntent) -> Q<'q, DB> {
        query
            .bind(DB::uuid(i.id.0))
            .bind(DB::uuid(i.server_id.0))
            .bind(i64::from(i.attempt))
            .bind(i.position)
            .bind(i.host.as_str())
            .bind(i.network_id.as_str())
            .bind(i.fixed_ip.map(|ip| ip.to_string()))
            .bind(i.tag.as_deref())
            .bind(i.state.as_str())
            .bind(i.port_id.as_ref().map(PortId::as_str))
            .bind(i.adopted)
            .bind(i.reason.as_deref())
            .bind(DB::ts(i.created_at))
            .bind(DB::ts(i.updated_at))
    }

    fn vif(row: &DB::Row) -> Result<VifRecord> {
        let c = Cols::<DB>(row);
        Ok(VifRecord {
            port_id: PortId(c.get("port_id")?),
            server_id: ServerId(c.uuid("server_id")?),
            position: c.get("position")?,
            origin: c.parse("origin")?,
            state: c.parse("state")?,
            intent_id: c.uuid_opt("intent_id")?.map(IntentId),
            network_id: NetworkId(c.get("network_id")?),
            requested_fixed_ip: c.parse_opt("requested_fixed_ip")?,
            tag: c.get("tag")?,
            details: c.json_opt("details", PortDetails::from_json)?,
        })
    }

    fn intent(row: &DB::Row) -> Result<PortIntent> {
        let c = Cols::<DB>(row);
        Ok(PortIntent {
            id: IntentId(c.uuid("id")?),
            server_id: ServerId(c.uuid("server_id")?),
            attempt: c.narrow("attempt", c.get("attempt")?)?,
            position: c.get("position")?,
            host: HostName(c.get("host")?),
            network_id: NetworkId(c.get("network_id")?),
            fixed_ip: c.parse_opt("fixed_ip")?,
            tag: c.get("tag")?,
            state: c.parse("state")?,
            port_id: c.get::<Option<String>>("port_id")?.map(PortId),
            adopted: c.get("adopted")?,
            reason: c.get("reason")?,
            created_at: c.ts("created_at")?,
            updated_at: c.ts("updated_at")?,
        })
    }

    fn ghost(row: &DB::Row) -> Result<GhostSighting> {
        let c = Cols::<DB>(row);
        let owner = match c.get::<String>("owner")?.as_str() {
            "ours" => GhostOwner::Ours {
                intent: c.uuid_opt("owner_intent_id")?.map(IntentId),
            },
            "foreign" => GhostOwner::Foreign,
            other => return Err(corrupt("owner", format!("unknown ghost owner {other:?}"))),
        };
        Ok(GhostSighting {
            port_id: PortId(c.get("port_id")?),
            device_id: c.get("device_id")?,
            owner,
            first_seen: c.ts("first_seen")?,
            last_seen: c.ts("last_seen")?,
            times_seen: c.narrow("times_seen", c.get("times_seen")?)?,
            revision_number: c.narrow("revision_number", c.get("revision_number")?)?,
        })
    }

    fn keypair(row: &DB::Row) -> Result<StoredKeyPair> {
        let c = Cols::<DB>(row);
        Ok(StoredKeyPair {
            id: c.get("id")?,
            keypair: KeyPair {
                user_id: c.get("user_id")?,
                name: c.get("name")?,
                public_key: c.get("public_key")?,
                fingerprint: c.get("fingerprint")?,
                key_type: c.parse("key_type")?,
                created_at: c.ts("created_at")?,
            },
        })
    }

    /// Folds the rows of [`sql::SELECT_ACTIONS`] (one per event) into actions.
    fn actions(server_id: ServerId, rows: &[DB::Row]) -> Result<Vec<Action>> {
        let mut actions: Vec<(i64, Action)> = Vec::new();
        for row in rows {
            let c = Cols::<DB>(row);
            let seq: i64 = c.get("seq")?;
            if actions.last().is_none_or(|(last, _)| *last != seq) {
                let action = Action {
                    server_id,
                    request_id: c.get("request_id")?,
                    action: c.get("action")?,
                    project_id: c.get("project_id")?,
                    user_id: c.get("user_id")?,
                    start_time: c.ts("start_time")?,
                    message: c.get("message")?,
                    events: Vec::new(),
                };
                actions.push((seq, action));
            }
            if let Some(event) = c.get::<Option<String>>("event")? {
                let (_, action) = actions.last_mut().expect("pushed above");
                action.events.push(ActionEvent {
                    event,
                    start_time: c.ts("event_start_time")?,
                    finish_time: c.ts_opt("finish_time")?,
                    result: c.get("result")?,
                    details: c.get("details")?,
                    host: c.get("host")?,
                });
            }
        }
        Ok(actions.into_iter().map(|(_, action)| action).collect())
    }
}

#[sql_bounds(B::Db)]
#[async_trait]
impl<B> Store for B
where
    B: Backend,
{
    async fn deployment_id(&self) -> Result<DeploymentId> {
        let row = sqlx::query(sql::SELECT_DEPLOYMENT).fetch_optional(self.pool()).await?;
        let row = row.ok_or_else(|| corrupt("deployment", "no deployment row (was the store migrated?)"))?;
        Ok(DeploymentId(Cols::<B::Db>(&row).get("id")?))
    }

    async fn commit(&self, changes: Vec<Change>) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let outcome = async {
            if let Some(group) = self.group_writer() {
                self.counts().add();
                group.commit(changes).await?;
                self.counts().committed_one();
                return Ok(());
            }
            let mut tx = self.writer().begin_with(<B::Db as Dialect>::BEGIN_WRITE).await?;
            match Sql::<B::Db>::apply_batch(&mut tx, &changes).await {
                Ok(()) => {
                    tx.commit().await.map_err(Error::from_write)?;
                    self.counts().committed_one();
                    self.counts().transacted();
                    Ok(())
                }
                Err(error) => {
                    // Roll back now rather than on drop, so the write lock (SQLite) or the
                    // row locks (PostgreSQL) are released before the caller retries.
                    if let Err(rollback) = tx.rollback().await {
                        tracing::warn!(error = %rollback, "Rollback of a failed batch failed: {rollback}");
                    }
                    Err(error)
                }
            }
        }
        .await;
        telemetry::commit_ended(started, &outcome);
        outcome
    }

    async fn server(&self, id: ServerId) -> Result<Option<Server>> {
        let row = sqlx::query(sql::SELECT_SERVER)
            .bind(<B::Db as Dialect>::uuid(id.0))
            .fetch_optional(self.pool())
            .await?;
        self.counts().read_servers(usize::from(row.is_some()));
        row.as_ref().map(Sql::<B::Db>::server).transpose()
    }

    async fn servers(&self, filter: &ServerFilter) -> Result<Vec<Server>> {
        let query = match &filter.project_id {
            None => sqlx::query(sql::SELECT_SERVERS).bind(filter.include_deleted),
            Some(project) => sqlx::query(sql::SELECT_PROJECT_SERVERS)
                .bind(filter.include_deleted)
                .bind(project.as_str()),
        };
        let rows = query.fetch_all(self.pool()).await?;
        self.counts().read_servers(rows.len());
        rows.iter().map(Sql::<B::Db>::server).collect()
    }

    async fn servers_newest_first(
        &self,
        filter: &ServerFilter,
        after: Option<&Server>,
        limit: i64,
    ) -> Result<Vec<Server>> {
        let deleted = filter.include_deleted;
        let after = after.map(|s| (<B::Db as Dialect>::ts(s.created_at), <B::Db as Dialect>::uuid(s.id.0)));
        let query = match (&filter.project_id, after) {
            (None, None) => sqlx::query(sql::SELECT_SERVERS_NEWEST).bind(deleted).bind(limit),
            (None, Some((time, id))) => sqlx::query(sql::SELECT_SERVERS_NEWEST_AFTER)
                .bind(deleted)
                .bind(time)
                .bind(id)
                .bind(limit),
            (Some(project), None) => sqlx::query(sql::SELECT_PROJECT_SERVERS_NEWEST)
                .bind(deleted)
                .bind(project.as_str())
                .bind(limit),
            (Some(project), Some((time, id))) => sqlx::query(sql::SELECT_PROJECT_SERVERS_NEWEST_AFTER)
                .bind(deleted)
                .bind(project.as_str())
                .bind(time)
                .bind(id)
                .bind(limit),
        };
        let rows = query.fetch_all(self.pool()).await?;
        self.counts().read_servers(rows.len());
        rows.iter().map(Sql::<B::Db>::server).collect()
    }

    async fn servers_sorted(
        &self,
        filter: &ServerFilter,
        order: &[Sort],
        after: Option<ServerId>,
        limit: i64,
    ) -> Result<Vec<Server>> {
        let statement = sorted::select_page(
            sql::SERVER_COLUMNS,
            order,
            filter.project_id.is_some(),
            after.is_some(),
            <B::Db as Dialect>::BYTE_ORDER,
        );
        // Built only from the order's fixed column names, never from input.
        let mut query = sqlx::query(AssertSqlSafe(statement)).bind(filter.include_deleted);
        if let Some(project) = &filter.project_id {
            query = query.bind(project.as_str());
        }
        if let Some(id) = after {
            query = query.bind(<B::Db as Dialect>::uuid(id.0));
        }
        let rows = query.bind(limit).fetch_all(self.pool()).await?;
        self.counts().read_servers(rows.len());
        rows.iter().map(Sql::<B::Db>::server).collect()
    }

    async fn watched_servers(
        &self,
        deleted: DeletedWatch,
        ids: (ServerId, ServerId),
        after: Option<ServerId>,
        limit: i64,
    ) -> Result<Vec<WatchedServer>> {
        let (statement, from) = match after {
            None => (sql::SELECT_WATCHED_SERVERS, ids.0),
            Some(last) => (sql::SELECT_WATCHED_SERVERS_AFTER, last),
        };
        let query = sqlx::query(statement)
            .bind(<B::Db as Dialect>::ts(deleted.since))
            .bind(deleted.every)
            .bind(<B::Db as Dialect>::uuid(from.0))
            .bind(<B::Db as Dialect>::uuid(ids.1.0))
            .bind(limit);
        let rows = query.fetch_all(self.pool()).await?;
        rows.iter().map(Sql::<B::Db>::watched_server).collect()
    }

    async fn vifs(&self, server: ServerId) -> Result<Vec<VifRecord>> {
        let rows = sqlx::query(sql::SELECT_SERVER_VIFS)
            .bind(<B::Db as Dialect>::uuid(server.0))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(Sql::<B::Db>::vif).collect()
    }

    async fn vif_by_port(&self, port: &PortId) -> Result<Option<VifRecord>> {
        let row = sqlx::query(sql::SELECT_VIF_BY_PORT)
            .bind(port.as_str())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(Sql::<B::Db>::vif).transpose()
    }

    async fn releasing_vifs(&self) -> Result<Vec<VifRecord>> {
        let rows = sqlx::query(sql::SELECT_VIFS_IN_STATE)
            .bind(VifState::Releasing.as_str())
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(Sql::<B::Db>::vif).collect()
    }

    async fn cache(&self, server: ServerId) -> Result<StoredCache> {
        let row = sqlx::query(sql::SELECT_CACHE)
            .bind(<B::Db as Dialect>::uuid(server.0))
            .fetch_optional(self.pool())
            .await?;
        let row = row.ok_or_else(|| Error::NotFound(format!("cache of server {server}")))?;
        let c = Cols::<B::Db>(&row);
        Ok(StoredCache {
            info: c.json("network_info", NetworkInfo::from_json)?,
            generation: c.get("generation")?,
        })
    }

    async fn vifs_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, Vec<VifRecord>>> {
        let rows = Sql::<B::Db>::rows_of_servers(self, sql::SELECT_VIFS_OF_SERVERS, servers).await?;
        let mut vifs: HashMap<ServerId, Vec<VifRecord>> = HashMap::new();
        for row in &rows {
            let vif = Sql::<B::Db>::vif(row)?;
            vifs.entry(vif.server_id).or_default().push(vif);
        }
        Ok(vifs)
    }

    async fn caches_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, StoredCache>> {
        let texts = self.cache_texts_of(servers).await?;
        texts.into_iter().map(|(id, text)| Ok((id, text.decode()?))).collect()
    }

    async fn cache_texts_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, CacheText>> {
        let rows = Sql::<B::Db>::rows_of_servers(self, sql::SELECT_CACHES_OF_SERVERS, servers).await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<B::Db>(row);
                let cache = CacheText {
                    json: c.get("network_info")?,
                    generation: c.get("generation")?,
                };
                Ok((ServerId(c.uuid("server_id")?), cache))
            })
            .collect()
    }

    async fn live_cache_generations(&self) -> Result<HashMap<ServerId, CacheGeneration>> {
        let rows = sqlx::query(sql::SELECT_LIVE_CACHE_GENERATIONS)
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<B::Db>(row);
                let found_right = match (c.get("right_inputs")?, c.get("right_text")?) {
                    (Some(inputs), Some(text)) => Some(FoundRight::from_columns(inputs, text)),
                    _ => None,
                };
                let cache = CacheGeneration {
                    generation: c.get("generation")?,
                    found_right,
                };
                Ok((ServerId(c.uuid("server_id")?), cache))
            })
            .collect()
    }

    async fn purgeable_servers(&self, before: DateTime<Utc>, limit: i64) -> Result<Vec<ServerId>> {
        let rows = sqlx::query(sql::SELECT_PURGEABLE_SERVERS)
            .bind(<B::Db as Dialect>::ts(before))
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|row| Ok(ServerId(Cols::<B::Db>(row).uuid("id")?)))
            .collect()
    }

    async fn count_purgeable(&self, before: DateTime<Utc>) -> Result<Purged> {
        let row = sqlx::query(sql::COUNT_PURGEABLE)
            .bind(<B::Db as Dialect>::ts(before))
            .fetch_one(self.pool())
            .await?;
        let c = Cols::<B::Db>(&row);
        let count = |column| c.get::<i64>(column).map(i64::unsigned_abs);
        Ok(Purged {
            servers: count("servers")?,
            intents: count("intents")?,
            actions: count("actions")?,
            events: count("events")?,
        })
    }

    async fn purge_servers(&self, servers: &[ServerId]) -> Result<Purged> {
        Sql::<B::Db>::purge_servers(self, servers).await
    }

    fn queries_sent(&self) -> u64 {
        self.counts().sent()
    }

    fn commits_made(&self) -> u64 {
        self.counts().committed()
    }

    fn transactions_made(&self) -> u64 {
        self.counts().transactions()
    }

    fn servers_read(&self) -> u64 {
        self.counts().servers()
    }

    async fn intent(&self, id: IntentId) -> Result<Option<PortIntent>> {
        let row = sqlx::query(sql::SELECT_INTENT)
            .bind(<B::Db as Dialect>::uuid(id.0))
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(Sql::<B::Db>::intent).transpose()
    }

    async fn intents(&self, server: ServerId) -> Result<Vec<PortIntent>> {
        let rows = sqlx::query(sql::SELECT_SERVER_INTENTS)
            .bind(<B::Db as Dialect>::uuid(server.0))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(Sql::<B::Db>::intent).collect()
    }

    async fn intents_in_state(&self, state: IntentState) -> Result<Vec<PortIntent>> {
        let rows = sqlx::query(sql::SELECT_INTENTS_IN_STATE)
            .bind(state.as_str())
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(Sql::<B::Db>::intent).collect()
    }

    async fn intent_counts(&self) -> Result<Vec<(IntentState, i64)>> {
        let rows = sqlx::query(sql::COUNT_INTENTS_BY_STATE).fetch_all(self.pool()).await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<B::Db>(row);
                Ok((c.parse("state")?, c.get("n")?))
            })
            .collect()
    }

    async fn actions(&self, server: ServerId) -> Result<Vec<Action>> {
        let rows = sqlx::query(sql::SELECT_ACTIONS)
            .bind(<B::Db as Dialect>::uuid(server.0))
            .fetch_all(self.pool())
            .await?;
        Sql::<B::Db>::actions(server, &rows)
    }

    async fn vifs_of_deleted_servers(&self) -> Result<Vec<VifRecord>> {
        let rows = sqlx::query(sql::SELECT_VIFS_OF_DELETED_SERVERS)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(Sql::<B::Db>::vif).collect()
    }

    async fn operation(&self, server: ServerId) -> Result<Option<Operation>> {
        Sql::<B::Db>::operation_of(self.pool(), server).await
    }

    async fn operations(&self) -> Result<Vec<Operation>> {
        Sql::<B::Db>::all_operations(self.pool()).await
    }

    async fn claimable_operations(&self, me: &Owner, limit: i64) -> Result<Vec<Operation>> {
        Sql::<B::Db>::claimable_operations(self.pool(), me, limit).await
    }

    async fn renew_leases(&self, me: &Owner, servers: &[ServerId], lease: TimeDelta) -> Result<u64> {
        Sql::<B::Db>::renew_leases(self.writer(), me, servers, lease).await
    }

    async fn database_now(&self) -> Result<DateTime<Utc>> {
        Sql::<B::Db>::database_now(self.pool()).await
    }

    async fn try_lease(&self, name: &str, owner: &str, length: std::time::Duration) -> Result<bool> {
        Sql::<B::Db>::try_lease(self.writer(), name, owner, length).await
    }

    async fn renew_lease(&self, name: &str, owner: &str, length: std::time::Duration) -> Result<bool> {
        Sql::<B::Db>::renew_lease(self.writer(), name, owner, length).await
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<()> {
        Sql::<B::Db>::release_lease(self.writer(), name, owner).await
    }

    async fn release_node_leases(&self, me: &Owner) -> Result<u64> {
        Sql::<B::Db>::release_node_leases(self.writer(), me).await
    }

    async fn lock_node(&self, node: &str) -> Result<NodeLock> {
        self.lock_node_exclusively(node).await
    }

    async fn ghost_sightings(&self) -> Result<Vec<GhostSighting>> {
        let rows = sqlx::query(sql::SELECT_GHOSTS).fetch_all(self.pool()).await?;
        rows.iter().map(Sql::<B::Db>::ghost).collect()
    }

    async fn ghost_sighting(&self, port: &PortId) -> Result<Option<GhostSighting>> {
        let row = sqlx::query(sql::SELECT_GHOST)
            .bind(port.as_str())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(Sql::<B::Db>::ghost).transpose()
    }

    async fn keypairs(&self, user_id: &str) -> Result<Vec<StoredKeyPair>> {
        let rows = sqlx::query(sql::SELECT_KEYPAIRS)
            .bind(user_id)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(Sql::<B::Db>::keypair).collect()
    }

    async fn keypair(&self, user_id: &str, name: &str) -> Result<Option<StoredKeyPair>> {
        let row = sqlx::query(sql::SELECT_KEYPAIR)
            .bind(user_id)
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(Sql::<B::Db>::keypair).transpose()
    }

    async fn quota_limits(&self, project: &ProjectId) -> Result<ProjectLimits> {
        Sql::<B::Db>::quota_limits(&mut *self.pool().acquire().await?, project).await
    }

    async fn quota_class(&self, class_name: &str) -> Result<Vec<(Resource, i64)>> {
        Sql::<B::Db>::quota_class(&mut *self.pool().acquire().await?, class_name).await
    }

    async fn server_counts(&self, project: &ProjectId) -> Result<Vec<ServerCount>> {
        Sql::<B::Db>::server_counts(&mut *self.pool().acquire().await?, project).await
    }

    async fn keypair_count(&self, user_id: &str) -> Result<i64> {
        Sql::<B::Db>::keypair_count(&mut *self.pool().acquire().await?, user_id).await
    }

    async fn flavors(&self) -> Result<Vec<Flavor>> {
        Sql::<B::Db>::flavors(&mut *self.pool().acquire().await?, None).await
    }

    async fn flavor(&self, id: &str) -> Result<Option<Flavor>> {
        let flavors = Sql::<B::Db>::flavors(&mut *self.pool().acquire().await?, Some(id)).await?;
        Ok(flavors.into_iter().next())
    }

    async fn register_services(&self, hosts: &[HostName], heartbeat: TimeDelta) -> Result<()> {
        Sql::<B::Db>::register_services(self.writer(), hosts, heartbeat).await
    }

    async fn renew_service_heartbeats(&self, hosts: &[HostName], heartbeat: TimeDelta) -> Result<u64> {
        Sql::<B::Db>::renew_service_heartbeats(self.writer(), hosts, heartbeat).await
    }

    async fn services(&self) -> Result<Vec<StoredService>> {
        Sql::<B::Db>::services(self.pool()).await
    }

    async fn update_service(&self, service: &netcache_domain::service::Service) -> Result<()> {
        Sql::<B::Db>::update_service(self.writer(), service).await
    }

    async fn delete_service(&self, id: i64) -> Result<bool> {
        Sql::<B::Db>::delete_service(self.writer(), id).await
    }

    async fn unschedulable_hosts(&self) -> Result<Vec<HostName>> {
        Sql::<B::Db>::unschedulable_hosts(self.pool()).await
    }

    async fn server_counts_by_host(&self) -> Result<Vec<HostServers>> {
        Sql::<B::Db>::server_counts_by_host(self.pool()).await
    }

    async fn servers_on_host(&self, host: &HostName) -> Result<Vec<(ServerId, String)>> {
        Sql::<B::Db>::servers_on_host(self.pool(), host).await
    }

    async fn servers_in_window(&self, window: &UsageWindow, after: Option<&Server>, limit: i64) -> Result<Vec<Server>> {
        Sql::<B::Db>::servers_in_window(self, window, after, limit).await
    }

    async fn server_group(&self, id: Uuid) -> Result<Option<ServerGroup>> {
        Sql::<B::Db>::server_group(&mut *self.pool().acquire().await?, id).await
    }

    async fn server_groups(&self, project: Option<&ProjectId>) -> Result<Vec<ServerGroup>> {
        Sql::<B::Db>::server_groups(&mut *self.pool().acquire().await?, project).await
    }

    async fn group_members(&self, group: Uuid) -> Result<Vec<GroupMember>> {
        Sql::<B::Db>::group_members(&mut *self.pool().acquire().await?, group).await
    }

    async fn members_of_groups(&self, project: Option<&ProjectId>) -> Result<HashMap<Uuid, Vec<GroupMember>>> {
        Sql::<B::Db>::members_of_groups(&mut *self.pool().acquire().await?, project).await
    }

    async fn groups_of_server(&self, server: ServerId) -> Result<Vec<Uuid>> {
        Sql::<B::Db>::groups_of_server(&mut *self.pool().acquire().await?, server).await
    }

    async fn server_group_count(&self, project: &ProjectId, user: &str) -> Result<(i64, i64)> {
        Sql::<B::Db>::server_group_count(&mut *self.pool().acquire().await?, project, user).await
    }
}

fn to_i64(field: &str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::Corrupt(format!("{field} {value} does not fit a BIGINT column")))
}

fn vif_not_found(server: ServerId, port: &PortId) -> Error {
    Error::NotFound(format!("VIF record of port {port} in server {server}"))
}
