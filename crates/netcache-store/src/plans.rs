//! Plans the store depends on, as its tests read them (feature `testing`; the
//! conformance suite's `plans.rs` asserts on them, on PostgreSQL only when
//! `NETCACHE_TEST_PG_URL` names a server). The keyset pages each seek their
//! index to the page's marker on both databases, so a page deep in 100,000
//! servers costs what the first does (PostgreSQL only filters by an `OR` of the
//! marker's columns, walking every row before it; it seeks to a row value). A
//! heal batch's VIF records are read by their key on PostgreSQL at 10,000 servers.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, Connection, Database, Executor, Pool, Row};
use uuid::Uuid;

use crate::dialect::Dialect;
use crate::engine::{Q, placeholders};
use crate::{PgStore, Result, SqliteStore, sql};

/// Each page after a marker, its binds, and how its index is sought, as
/// `explain` asks for its plan.
fn pages<'q, DB: Dialect>(explain: &str) -> Vec<(&'static str, Q<'q, DB>, &'static str, PageKey)>
where
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let time = || DB::ts(DateTime::<Utc>::UNIX_EPOCH);
    let id = || DB::uuid(Uuid::nil());
    let explain = |sql: &str| sqlx::query(AssertSqlSafe(format!("{explain} {sql}")));
    vec![
        (
            "newest",
            explain(sql::SELECT_SERVERS_NEWEST_AFTER)
                .bind(false)
                .bind(time())
                .bind(id())
                .bind(1000_i64),
            "<",
            PageKey::CreatedAtAndId,
        ),
        (
            "newest of a project",
            explain(sql::SELECT_PROJECT_SERVERS_NEWEST_AFTER)
                .bind(false)
                .bind("p")
                .bind(time())
                .bind(id())
                .bind(1000_i64),
            "<",
            PageKey::CreatedAtAndId,
        ),
        (
            "watched",
            explain(sql::SELECT_WATCHED_SERVERS_AFTER)
                .bind(time())
                .bind(false)
                .bind(id())
                .bind(id())
                .bind(1000_i64),
            ">",
            PageKey::Id,
        ),
    ]
}

/// What a page's marker is sought by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKey {
    /// `(created_at, id)`, a row value (the server lists).
    CreatedAtAndId,
    /// The primary key (heal's pages, a shard's range at a time).
    Id,
}

/// How one page after a marker is planned: the page, the comparison its marker
/// is sought by (`<` newest first, `>` oldest or lowest first), the key it is
/// sought on, and the plan's text.
#[derive(Clone, Debug)]
pub struct PagePlan {
    pub page: &'static str,
    pub op: &'static str,
    pub key: PageKey,
    pub plan: String,
}

/// SQLite's plan (`EXPLAIN QUERY PLAN`'s detail column) of each page after a marker.
pub async fn sqlite_page_plans(store: &SqliteStore) -> Result<Vec<PagePlan>> {
    let mut plans = Vec::new();
    for (page, query, op, key) in pages::<sqlx::Sqlite>("EXPLAIN QUERY PLAN") {
        let plan = explain(store.pool(), query, "detail").await?;
        plans.push(PagePlan { page, op, key, plan });
    }
    Ok(plans)
}

/// PostgreSQL's plan of each page after a marker on the (migrated) database of
/// `store`, with sequential and bitmap scans off so that the plan is the index's
/// whatever the table's size: what is tested is what the index is sought by.
pub async fn postgres_page_plans(store: &PgStore) -> Result<Vec<PagePlan>> {
    let mut conn = store.pool().acquire().await?;
    conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        .await?;
    let mut plans = Vec::new();
    for (page, query, op, key) in pages::<sqlx::Postgres>("EXPLAIN") {
        let plan = lines(query.fetch_all(&mut *conn).await?, "QUERY PLAN");
        plans.push(PagePlan { page, op, key, plan });
    }
    // The connection goes back to the pool with its settings: close it instead.
    conn.detach().close().await?;
    Ok(plans)
}

/// PostgreSQL's plan of a heal batch's read of 100 servers' VIF records, in one
/// statement, on a connection the store opened, after filling the (empty,
/// migrated) database of `store` with 10,000 servers and analysing it.
pub async fn postgres_vif_batch_plan(store: &PgStore) -> Result<String> {
    let fill = "INSERT INTO servers (id, name, project_id, user_id, availability_zone, vm_state, flavor_ref, \
         image_ref, metadata, requested_networks, tried_hosts, created_at, updated_at, generation) \
         SELECT gen_random_uuid(), 'vm', 'p', 'u', 'nova', 'active', '1', 'img', '{}', '[]', '[]', now(), now(), 0 \
         FROM generate_series(1, 10000); \
         INSERT INTO vifs (server_id, port_id, position, origin, state, network_id) \
         SELECT id, id::text, 0, 'created', 'attached', 'net' FROM servers; ANALYZE";
    store.pool().execute(fill).await?;
    let ids: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM servers LIMIT 100")
        .fetch_all(store.pool())
        .await?;
    let (head, tail) = sql::SELECT_VIFS_OF_SERVERS;
    // Bound as the store binds a batch: a power of two, the last id repeated.
    let mut query = sqlx::query(AssertSqlSafe(format!("EXPLAIN {head}{}{tail}", placeholders(128))));
    for i in 0..128 {
        query = query.bind(ids[i.min(ids.len() - 1)]);
    }
    explain(store.pool(), query, "QUERY PLAN").await
}

/// The plan's text, one line per row of `column`.
async fn explain<'q, DB: Database>(pool: &Pool<DB>, query: Q<'q, DB>, column: &str) -> Result<String>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: sqlx::IntoArguments<DB>,
    for<'r> String: sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    for<'a> &'a str: sqlx::ColumnIndex<DB::Row>,
{
    Ok(lines(query.fetch_all(pool).await?, column))
}

fn lines<R: Row>(rows: Vec<R>, column: &str) -> String
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    rows.iter()
        .map(|row| row.get::<String, _>(column))
        .collect::<Vec<_>>()
        .join("\n")
}
