//! Plans the store depends on. The keyset pages each seek their index to the
//! page's marker on both databases, so a page deep in 100,000 servers costs
//! what the first does (PostgreSQL only filters by an `OR` of the marker's
//! columns, walking every row before it; it seeks to a row value). A heal
//! batch's VIF records are read by their key on PostgreSQL at 10,000 servers.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, Connection, Database, Executor, PgConnection, Pool, Row};
use uuid::Uuid;

use crate::dialect::Dialect;
use crate::engine::{Q, placeholders};
use crate::{PgStore, SqliteStore, sql};

/// Each page after a marker, its binds, and how its index is sought, as
/// `explain` asks for its plan.
fn pages<'q, DB: Dialect>(explain: &str) -> Vec<(&'static str, Q<'q, DB>, &'static str)>
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
        ),
        (
            "watched",
            explain(sql::SELECT_WATCHED_SERVERS_AFTER)
                .bind(time())
                .bind(false)
                .bind(time())
                .bind(id())
                .bind(1000_i64),
            ">",
        ),
    ]
}

#[tokio::test]
async fn sqlite_seeks_each_page_to_its_marker() {
    let store = SqliteStore::open("sqlite::memory:").await.unwrap();
    for (page, query, op) in pages::<sqlx::Sqlite>("EXPLAIN QUERY PLAN") {
        let plan = explain(store.pool(), query, "detail").await;
        assert!(plan.contains(&format!("(created_at,id){op}(?,?)")), "{page}: {plan}");
    }
}

/// A scratch PostgreSQL database, when `NETCACHE_TEST_PG_URL` names a server
/// (CI's PostgreSQL tier): the admin connection, its name, and its URL.
async fn scratch_postgres() -> Option<(PgConnection, String, url::Url)> {
    let admin_url = std::env::var("NETCACHE_TEST_PG_URL").ok()?;
    let name = format!("netcache_plans_{}", &Uuid::new_v4().simple().to_string()[..16]);
    let mut admin = PgConnection::connect(&admin_url).await.unwrap();
    admin
        .execute(AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    Some((admin, name, url))
}

async fn drop_database(mut admin: PgConnection, name: &str) {
    admin
        .execute(AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
        .await
        .unwrap();
}

/// Sequential and bitmap scans are off so that the plan is the index's
/// whatever the table's size: the test is what the index is sought by.
#[tokio::test]
async fn postgres_seeks_each_page_to_its_marker() {
    let Some((admin, name, url)) = scratch_postgres().await else {
        return;
    };
    let store = PgStore::open(url.as_str()).await.unwrap();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
                    .await
                    .map(drop)
            })
        })
        .connect(url.as_str())
        .await
        .unwrap();
    let mut plans = Vec::new();
    for (page, query, op) in pages::<sqlx::Postgres>("EXPLAIN") {
        plans.push((page, op, explain(&pool, query, "QUERY PLAN").await));
    }
    pool.close().await;
    store.pool().close().await;
    drop_database(admin, &name).await;
    for (page, op, plan) in plans {
        let sought = plan
            .lines()
            .any(|line| line.contains("Index Cond") && line.contains(&format!("ROW(created_at, id) {op} ROW(")));
        assert!(sought, "{page}: {plan}");
    }
}

/// A heal batch reads the VIF records of 100 servers in one statement. At
/// 10,000 servers (analysed), on a connection the store opened, PostgreSQL
/// reads them by the table's key; with its default page costs it scanned the
/// whole table (see `postgres::SSD_PAGE_COST`).
#[tokio::test]
async fn postgres_reads_a_batch_of_vif_records_by_their_key() {
    let Some((admin, name, url)) = scratch_postgres().await else {
        return;
    };
    let store = PgStore::open(url.as_str()).await.unwrap();
    let fill = "INSERT INTO servers (id, name, project_id, user_id, availability_zone, vm_state, flavor_ref, \
         image_ref, metadata, requested_networks, tried_hosts, created_at, updated_at, generation) \
         SELECT gen_random_uuid(), 'vm', 'p', 'u', 'nova', 'active', '1', 'img', '{}', '[]', '[]', now(), now(), 0 \
         FROM generate_series(1, 10000); \
         INSERT INTO vifs (server_id, port_id, position, origin, state, network_id) \
         SELECT id, id::text, 0, 'created', 'attached', 'net' FROM servers; ANALYZE";
    store.pool().execute(fill).await.unwrap();
    let ids: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM servers LIMIT 100")
        .fetch_all(store.pool())
        .await
        .unwrap();
    let (head, tail) = sql::SELECT_VIFS_OF_SERVERS;
    // Bound as the store binds a batch: a power of two, the last id repeated.
    let mut query = sqlx::query(AssertSqlSafe(format!("EXPLAIN {head}{}{tail}", placeholders(128))));
    for i in 0..128 {
        query = query.bind(ids[i.min(ids.len() - 1)]);
    }
    let plan = explain(store.pool(), query, "QUERY PLAN").await;
    store.pool().close().await;
    drop_database(admin, &name).await;
    assert!(!plan.contains("Seq Scan"), "{plan}");
    assert!(plan.contains("vifs_pkey"), "{plan}");
}

/// The plan's text, one line per row of `column`.
async fn explain<'q, DB: Database>(pool: &Pool<DB>, query: Q<'q, DB>, column: &str) -> String
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: sqlx::IntoArguments<DB>,
    for<'r> String: sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    for<'a> &'a str: sqlx::ColumnIndex<DB::Row>,
{
    let rows = query.fetch_all(pool).await.unwrap();
    rows.iter()
        .map(|row| row.get::<String, _>(column))
        .collect::<Vec<_>>()
        .join("\n")
}
