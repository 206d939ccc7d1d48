//! Plans the store depends on (`netcache_store::plans`): each keyset page seeks
//! its index to the page's marker, on SQLite and on PostgreSQL; PostgreSQL reads
//! a heal batch's VIF records by their key at 10,000 servers (with its default
//! page costs it scanned the whole table; see `postgres::SSD_PAGE_COST`).

use netcache_store::plans::{self, PageKey, PagePlan};
use netcache_store::{PgStore, SqliteStore};
use netcache_testenv::{PG_URL, Trial, block_on, needs, plain};

use crate::harness::{Db, Target};

pub fn trials() -> Vec<Trial> {
    vec![
        plain("plans::sqlite_seeks_each_page_to_its_marker", || {
            block_on(sqlite_seeks_each_page_to_its_marker());
        }),
        needs("plans::postgres_seeks_each_page_to_its_marker", PG_URL, |admin_url| {
            block_on(postgres_seeks_each_page_to_its_marker(admin_url));
        }),
        needs(
            "plans::postgres_reads_a_batch_of_vif_records_by_their_key",
            PG_URL,
            |admin_url| {
                block_on(postgres_reads_a_batch_of_vif_records_by_their_key(admin_url));
            },
        ),
    ]
}

async fn sqlite_seeks_each_page_to_its_marker() {
    let store = SqliteStore::open("sqlite::memory:").await.unwrap();
    for PagePlan { page, op, key, plan } in plans::sqlite_page_plans(&store).await.unwrap() {
        let sought = match key {
            PageKey::CreatedAtAndId => format!("(created_at,id){op}(?,?)"),
            PageKey::Id => format!("(id{op}? AND id<?)"),
        };
        assert!(plan.contains(&sought), "{page}: {plan}");
    }
}

/// A store of its own on a scratch database of the server.
async fn postgres(admin_url: String) -> (Db, PgStore) {
    let db = Db::create(&Target::Postgres { admin_url }).await;
    let store = PgStore::open(db.url().expect("a PostgreSQL URL")).await.unwrap();
    (db, store)
}

async fn postgres_seeks_each_page_to_its_marker(admin_url: String) {
    let (_db, store) = postgres(admin_url).await;
    let plans = plans::postgres_page_plans(&store).await.unwrap();
    store.pool().close().await;
    for PagePlan { page, op, key, plan } in plans {
        let condition = match key {
            PageKey::CreatedAtAndId => format!("ROW(created_at, id) {op} ROW("),
            PageKey::Id => format!("(id {op} "),
        };
        let sought = plan
            .lines()
            .any(|line| line.contains("Index Cond") && line.contains(&condition));
        assert!(sought, "{page}: {plan}");
    }
}

async fn postgres_reads_a_batch_of_vif_records_by_their_key(admin_url: String) {
    let (_db, store) = postgres(admin_url).await;
    let plan = plans::postgres_vif_batch_plan(&store).await.unwrap();
    store.pool().close().await;
    assert!(!plan.contains("Seq Scan"), "{plan}");
    assert!(plan.contains("vifs_pkey"), "{plan}");
}
