//! The engine's durable operations: their rows, the fence every commit of an
//! operation carries, and leases on the database's clock
//! ([`crate::operation_sql`]).

use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::ServerId;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams, Owner, QueuedDelete};
use netcache_store_bounds::sql_bounds;
use sqlx::{AssertSqlSafe, Pool};
use uuid::Uuid;

use super::{Cols, Q, Sql};
use crate::operation_sql::{self as sql, LeaseSql};
use crate::{Error, Result};

/// Servers whose leases one statement renews.
const RENEWED_PER_STATEMENT: usize = 64;

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    fn leases() -> &'static LeaseSql {
        DB::lease_sql()
    }

    /// Applies one change to the `operations` table; 0 rows touched is the
    /// failed precondition the change names.
    pub(super) async fn apply_operation_change(conn: &mut DB::Connection, change: &Change) -> Result<()> {
        match change {
            Change::InsertOperation { op, lease } => {
                let query = Self::bind_operation(sqlx::query(Self::leases().insert.as_str()), op, *lease);
                Self::run(conn, query).await?;
            }
            Change::HoldOperation {
                server_id,
                id,
                owner,
                step,
            } => {
                Self::update_owned(conn, sql::HOLD_OPERATION, *server_id, *id, owner, step.as_str()).await?;
            }
            Change::RecordOperationFailure {
                server_id,
                id,
                owner,
                error,
            } => {
                Self::update_owned(conn, sql::RECORD_FAILURE, *server_id, *id, owner, error.as_str()).await?;
            }
            Change::FinishOperation { server_id, id, owner } => {
                let query = Self::owned(sql::FINISH_OPERATION, *server_id, *id, owner);
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "operation {id} of server {server_id} is not {}'s to finish, or has a delete queued",
                        owner.label()
                    )));
                }
            }
            Change::ReplaceOperation {
                previous,
                owner,
                next,
                lease,
            } => {
                let query = Self::bind_operation(sqlx::query(Self::leases().replace.as_str()), next, *lease)
                    .bind(DB::uuid(*previous));
                if next.owner != *owner || Self::run(conn, query).await? == 0 {
                    return Err(not_owned(next.server_id, *previous, owner));
                }
            }
            Change::QueueDelete { server_id, id, delete } => {
                let query = sqlx::query(sql::QUEUE_DELETE)
                    .bind(DB::uuid(server_id.0))
                    .bind(DB::uuid(*id))
                    .bind(delete.to_json());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "operation {id} of server {server_id} is over or has a delete queued already"
                    )));
                }
            }
            Change::ClaimOperation {
                server_id,
                id,
                previous_owner,
                owner,
                lease,
            } => {
                let query = sqlx::query(Self::leases().claim.as_str())
                    .bind(DB::uuid(server_id.0))
                    .bind(DB::uuid(*id))
                    .bind(owner.node.as_str())
                    .bind(owner.incarnation.as_str())
                    .bind(millis(*lease))
                    .bind(previous_owner.node.as_str())
                    .bind(previous_owner.incarnation.as_str());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "operation {id} of server {server_id} is no longer {}'s, or its lease is live",
                        previous_owner.label()
                    )));
                }
            }
            other => unreachable!("not an operation change: {other:?}"),
        }
        Ok(())
    }

    /// Runs an [`Self::owned`] update that also sets `text` (`$5`) and now
    /// (`$6`); one that touches no row finds the operation not `owner`'s.
    async fn update_owned(
        conn: &mut DB::Connection,
        statement: &'static str,
        server: ServerId,
        id: Uuid,
        owner: &Owner,
        text: &str,
    ) -> Result<()> {
        let query = Self::owned(statement, server, id, owner)
            .bind(text)
            .bind(DB::ts(Utc::now()));
        if Self::run(conn, query).await? == 0 {
            return Err(not_owned(server, id, owner));
        }
        Ok(())
    }

    /// `$1` server, `$2` id, `$3`/`$4` the owner.
    fn owned(statement: &'static str, server: ServerId, id: Uuid, owner: &Owner) -> Q<'static, DB> {
        sqlx::query(statement)
            .bind(DB::uuid(server.0))
            .bind(DB::uuid(id))
            .bind(owner.node.clone())
            .bind(owner.incarnation.clone())
    }

    /// `$1` server, `$2` id, then [`sql::OPERATION_COLUMNS`] in order, the
    /// lease (`$10`) as its length from the database's now.
    fn bind_operation<'q>(query: Q<'q, DB>, o: &Operation, lease: TimeDelta) -> Q<'q, DB> {
        query
            .bind(DB::uuid(o.server_id.0))
            .bind(DB::uuid(o.id))
            .bind(o.kind().as_str())
            .bind(o.params.to_json())
            .bind(o.request_id.as_str())
            .bind(o.project_id.as_str())
            .bind(o.user_id.as_str())
            .bind(o.owner.node.as_str())
            .bind(o.owner.incarnation.as_str())
            .bind(millis(lease))
            .bind(o.step.as_str())
            .bind(o.then_delete.as_ref().map(QueuedDelete::to_json))
            .bind(DB::ts(o.created_at))
            .bind(DB::ts(o.updated_at))
            .bind(i64::from(o.attempts))
            .bind(o.last_error.as_deref())
    }

    pub(super) fn operation(row: &DB::Row) -> Result<Operation> {
        let c = Cols::<DB>(row);
        let attempts: i64 = c.get("attempts")?;
        Ok(Operation {
            server_id: ServerId(c.uuid("server_id")?),
            id: c.uuid("id")?,
            params: c.json("params", OperationParams::from_json)?,
            request_id: c.get("request_id")?,
            project_id: c.get("project_id")?,
            user_id: c.get("user_id")?,
            owner: Owner {
                node: c.get("owner_node")?,
                incarnation: c.get("owner_incarnation")?,
            },
            lease_until: c.ts("lease_until")?,
            step: c.get("step")?,
            attempts: u32::try_from(attempts).map_err(|_| super::corrupt("attempts", attempts))?,
            last_error: c.get("last_error")?,
            then_delete: c.json_opt("then_delete", QueuedDelete::from_json)?,
            created_at: c.ts("created_at")?,
            updated_at: c.ts("updated_at")?,
        })
    }

    pub(super) async fn operation_of(pool: &Pool<DB>, server: ServerId) -> Result<Option<Operation>> {
        let row = sqlx::query(sql::SELECT_OPERATION.as_str())
            .bind(DB::uuid(server.0))
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(Self::operation).transpose()
    }

    pub(super) async fn all_operations(pool: &Pool<DB>) -> Result<Vec<Operation>> {
        let rows = sqlx::query(sql::SELECT_OPERATIONS.as_str()).fetch_all(pool).await?;
        rows.iter().map(Self::operation).collect()
    }

    pub(super) async fn claimable_operations(pool: &Pool<DB>, me: &Owner, limit: i64) -> Result<Vec<Operation>> {
        let rows = sqlx::query(Self::leases().claimable.as_str())
            .bind(me.node.as_str())
            .bind(me.incarnation.as_str())
            .bind(limit)
            .fetch_all(pool)
            .await?;
        rows.iter().map(Self::operation).collect()
    }

    /// Renews `me`'s leases of `servers` (the operations it works on) only.
    pub(super) async fn renew_leases(
        writer: &Pool<DB>,
        me: &Owner,
        servers: &[ServerId],
        lease: TimeDelta,
    ) -> Result<u64> {
        let mut renewed = 0;
        for chunk in servers.chunks(RENEWED_PER_STATEMENT) {
            let ids: Vec<String> = (4..4 + chunk.len()).map(|i| format!("${i}")).collect();
            let text = format!("{}({})", Self::leases().renew_head, ids.join(", "));
            let mut query = sqlx::query(AssertSqlSafe(text))
                .bind(millis(lease))
                .bind(me.node.as_str())
                .bind(me.incarnation.as_str());
            for server in chunk {
                query = query.bind(DB::uuid(server.0));
            }
            renewed += DB::rows_affected(&query.execute(writer).await?);
        }
        Ok(renewed)
    }

    pub(super) async fn database_now(pool: &Pool<DB>) -> Result<DateTime<Utc>> {
        let row = sqlx::query(Self::leases().now.as_str()).fetch_one(pool).await?;
        Cols::<DB>(&row).ts("now")
    }
}

/// A lease's length as bound: whole milliseconds.
fn millis(lease: TimeDelta) -> i64 {
    lease.num_milliseconds()
}

fn not_owned(server: ServerId, id: Uuid, owner: &Owner) -> Error {
    Error::Conflict(format!(
        "operation {id} of server {server} is not owned by {}",
        owner.label()
    ))
}
