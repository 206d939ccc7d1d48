//! The shared backend: PostgreSQL, used by several netcache processes on several
//! hosts at once.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::Executor;
use sqlx::Postgres;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions, PgQueryResult};
use uuid::Uuid;

use crate::dialect::{Dialect, to_micros};
use crate::engine::{Backend, QueryCount, Sql};
use crate::operation_sql::LeaseSql;
use crate::{Error, HeldLock, NodeLock, Result};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

/// PostgreSQL prices a random page read at four sequential ones by default, a
/// spinning disk's cost. netcache reads its tables by key and hot; at 10,000
/// servers the planner scanned every VIF record for a heal batch's 100
/// servers (1.9 ms) where their index takes 0.8 ms. A connection whose
/// setting is still the server's default takes 1.1, the usual figure for
/// SSDs and cached data; one the operator set (server, database, role, or the
/// URL's `options`) stands.
const SSD_PAGE_COST: &str = "SELECT set_config('random_page_cost', '1.1', false) \
     FROM pg_settings WHERE name = 'random_page_cost' AND source = 'default'";

/// The store in PostgreSQL.
///
/// Durability is the server's: with the default `synchronous_commit = on`, a
/// returned [`commit`](crate::Store::commit) is flushed to the server's WAL.
/// Batches run at READ COMMITTED; every precondition is a single statement's
/// `WHERE` clause or a key, which PostgreSQL re-checks against the latest row
/// version, so concurrent writers on other hosts get [`Conflict`](crate::Error::Conflict).
#[derive(Clone, Debug)]
pub struct PgStore(PgPool, QueryCount);

impl PgStore {
    /// Opens `postgres://…` / `postgresql://…` and migrates it (sqlx serialises
    /// concurrent migrations with an advisory lock).
    pub async fn open(url: &str) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .after_connect(|conn, _| Box::pin(async move { conn.execute(SSD_PAGE_COST).await.map(drop) }))
            .connect(url)
            .await?;
        Self::from_pool(pool).await
    }

    /// Migrates a pool the caller configured, and stamps the deployment id.
    pub async fn from_pool(pool: PgPool) -> Result<Self> {
        MIGRATOR.run(&pool).await?;
        Sql::<Postgres>::ensure_deployment(&pool).await?;
        Ok(Self(pool, QueryCount::default()))
    }

    /// The pool, e.g. for advisory locks between hosts.
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.0
    }
}

impl Backend for PgStore {
    type Db = Postgres;

    fn pool(&self) -> &PgPool {
        self.1.add();
        &self.0
    }

    fn writer(&self) -> &PgPool {
        Backend::pool(self)
    }

    fn counts(&self) -> &QueryCount {
        &self.1
    }

    /// A session advisory lock on a connection of its own, kept while the lock
    /// lives: PostgreSQL releases it the moment the process's session ends.
    async fn lock_node_exclusively(&self, node: &str) -> Result<NodeLock> {
        let mut conn = self.0.acquire().await?.detach();
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
            .bind(format!("netcache-node:{node}"))
            .fetch_one(&mut conn)
            .await?;
        if !locked {
            return Err(Error::NodeBusy(format!(
                "another live netcache process runs node {node:?} (it holds its PostgreSQL advisory lock); \
                 give each process its own compute.hosts"
            )));
        }
        Ok(NodeLock::new(AdvisoryLock(tokio::sync::Mutex::new(conn))))
    }
}

/// A session advisory lock: held exactly as long as its connection's session.
struct AdvisoryLock(tokio::sync::Mutex<sqlx::PgConnection>);

#[async_trait::async_trait]
impl HeldLock for AdvisoryLock {
    async fn is_held(&self) -> bool {
        let mut conn = self.0.lock().await;
        let alive = tokio::time::timeout(LOCK_CHECK_TIMEOUT, sqlx::query("SELECT 1").execute(&mut *conn)).await;
        matches!(alive, Ok(Ok(_)))
    }
}

/// How long a check of the node lock's session may take before it counts as lost.
const LOCK_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Dialect for Postgres {
    type Ts = DateTime<Utc>;
    type Uuid = Uuid;

    const BEGIN_WRITE: &'static str = "BEGIN";
    /// The database's collation may order by language rules.
    const BYTE_ORDER: &'static str = " COLLATE \"C\"";
    /// The statement's start, not the transaction's (`now()`): a lease taken late
    /// in a transaction is as long as asked.
    const NOW: &'static str = "statement_timestamp()";

    fn now_plus_millis(param: &str) -> String {
        format!("(statement_timestamp() + {param} * interval '1 millisecond')")
    }

    fn service_sql() -> &'static crate::service_sql::ServiceSql {
        static SQL: LazyLock<crate::service_sql::ServiceSql> =
            LazyLock::new(|| crate::service_sql::ServiceSql::new(Postgres::NOW, Postgres::now_plus_millis));
        &SQL
    }

    fn lease_sql() -> &'static LeaseSql {
        static SQL: LazyLock<LeaseSql> = LazyLock::new(|| LeaseSql::new(Postgres::NOW, Postgres::now_plus_millis));
        &SQL
    }
    // `now()` is the statement's transaction's start: one instant for the
    // comparison and the new expiry, and a single statement starts its own.
    const LEASES: crate::sql::LeaseSql = crate::sql::lease_sql!(
        now: "now()",
        expiry: "(now() + $3 * interval '1 millisecond')"
    );

    fn ts(t: DateTime<Utc>) -> DateTime<Utc> {
        to_micros(t)
    }

    fn from_ts(v: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
        Ok(v)
    }

    fn uuid(u: Uuid) -> Uuid {
        u
    }

    fn from_uuid(v: Uuid) -> Result<Uuid, String> {
        Ok(v)
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }
}
