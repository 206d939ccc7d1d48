//! Retention's effect on size (SQLite, whose pages can be counted): after 3,000
//! create/delete cycles and a purge, the database holds about what it held with
//! only the live servers.

use netcache_domain::change::Change;
use netcache_domain::server::{Server, VmState};
use netcache_store::{SqliteStore, Store};

use crate::fixtures::*;

/// Pages in use (the file's pages less the free list, which new rows reuse).
async fn used_pages(store: &SqliteStore) -> i64 {
    let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let (free,): (i64,) = sqlx::query_as("PRAGMA freelist_count")
        .fetch_one(store.pool())
        .await
        .unwrap();
    pages - free
}

/// A server's rows as a boot leaves them: intent, VIF, cache, action with events.
fn booted(n: i64) -> (Server, Vec<Change>) {
    let s = bare_server("p", at(n));
    let port = format!("port-{}", s.id);
    let changes = vec![
        Change::InsertServer(s.clone()),
        Change::WriteCache {
            server_id: s.id,
            info: network_info(),
            expected_generation: 0,
        },
        Change::InsertIntent(intent(s.id, 0, at(n))),
        Change::InsertVif(vif(s.id, &port, 0)),
        Change::StartAction(action(
            s.id,
            "req-create",
            at(n),
            vec![event("build", at(n)), event("spawn", at(n))],
        )),
    ];
    (s, changes)
}

pub async fn a_purge_after_3000_cycles_brings_the_database_back_within_10_percent() {
    const LIVE: i64 = 100;
    const CYCLES: i64 = 3000;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&format!("sqlite:{}", dir.path().join("size.db").display()))
        .await
        .unwrap();
    for n in 0..LIVE {
        store.commit(booted(n).1).await.unwrap();
    }
    let baseline = used_pages(&store).await;

    for chunk in (0..CYCLES).collect::<Vec<_>>().chunks(100) {
        let mut changes = Vec::new();
        let mut gone = Vec::new();
        for &n in chunk {
            let (s, boot) = booted(LIVE + n);
            changes.extend(boot);
            gone.push(s);
        }
        store.commit(changes).await.unwrap();
        let mut deletes = Vec::new();
        for s in gone {
            deletes.push(Change::DeleteVif {
                server_id: s.id,
                port_id: format!("port-{}", s.id).into(),
            });
            deletes.push(Change::UpdateServer(Server {
                vm_state: VmState::Deleted,
                deleted_at: Some(at(10_000)),
                generation: s.generation,
                ..s
            }));
        }
        store.commit(deletes).await.unwrap();
    }
    let grown = used_pages(&store).await;
    let purged = purge_all(&store).await;
    let after = used_pages(&store).await;
    println!(
        "used pages: {baseline} with {LIVE} live servers; {grown} after {CYCLES} cycles; {after} after purging {purged}"
    );
    assert_eq!(purged, CYCLES as u64);
    assert!(
        grown > 5 * baseline,
        "the cycles grew the database: {grown} vs {baseline}"
    );
    assert!(
        after * 10 <= baseline * 11,
        "{after} pages after the purge, {baseline} with the live servers only"
    );
}

/// Purges every deleted server, a batch at a time, as `netcache purge` does.
async fn purge_all(store: &SqliteStore) -> u64 {
    let mut total = 0;
    loop {
        let batch = store.purgeable_servers(at(20_000), 128).await.unwrap();
        if batch.is_empty() {
            return total;
        }
        total += store.purge_servers(&batch).await.unwrap().servers;
    }
}
