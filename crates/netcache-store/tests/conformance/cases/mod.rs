//! The cases: each takes a fresh database and runs against every backend.

use std::collections::HashMap;

use chrono::Duration;
use netcache_domain::action::ActionEvent;
use netcache_domain::cache::FoundRight;
use netcache_domain::change::Change;
use netcache_domain::ghost::GhostOwner;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::operation::{Operation, OperationParams, Owner, QueuedDelete};
use netcache_domain::server::{NetworkRequests, Server, VmState, WatchedServer};
use netcache_domain::vif::{VifRecord, VifState};
use netcache_domain::{IntentId, PortId, ProjectId, ServerId};
use netcache_store::{CacheGeneration, DeletedWatch, Error, ServerFilter, Store, StoredCache};

use crate::fixtures::*;
use crate::harness::Db;

mod aggregates;
mod batches;
mod flavors;
mod intents;
mod keypairs;
mod operations;
mod quotas;
mod records;
mod retention;
mod server_groups;
mod servers;
mod services;
mod sorted_pages;
mod usage;
mod vifs;

pub use aggregates::*;
pub use batches::*;
pub use flavors::*;
pub use intents::*;
pub use keypairs::*;
pub use operations::*;
pub use quotas::*;
pub use records::*;
pub use retention::*;
pub use server_groups::*;
pub use servers::*;
pub use services::*;
pub use sorted_pages::*;
pub use usage::*;
pub use vifs::*;

async fn commit(store: &dyn Store, changes: Vec<Change>) {
    store.commit(changes).await.expect("commit");
}

async fn insert_server(store: &dyn Store, server: &Server) {
    insert_servers_with(store, &[server], vec![]).await;
}

/// Inserts `servers` and then applies `rows` (theirs, typically) in the same batch.
async fn insert_servers_with(store: &dyn Store, servers: &[&Server], rows: Vec<Change>) {
    let inserts = servers.iter().map(|s| Change::InsertServer((*s).clone()));
    commit(store, inserts.chain(rows).collect()).await;
}

/// Two bare servers of project `p`, created a second apart (not yet inserted).
fn two_servers() -> [Server; 2] {
    [bare_server("p", at(0)), bare_server("p", at(1))]
}

fn write_cache(server_id: ServerId, info: NetworkInfo, expected_generation: i64) -> Change {
    Change::WriteCache {
        server_id,
        info,
        expected_generation,
    }
}

fn delete_vif(server_id: ServerId, port_id: PortId) -> Change {
    Change::DeleteVif { server_id, port_id }
}

/// Records `intent`'s new state, provided the stored one is still pending.
fn resolve_pending(intent: PortIntent) -> Change {
    Change::UpdateIntent {
        intent,
        expected: IntentState::Pending,
    }
}

fn add_event(server_id: ServerId, request_id: &str, event: ActionEvent) -> Change {
    Change::AddActionEvent {
        server_id,
        request_id: request_id.into(),
        event,
    }
}

/// Commits `batches` all at once, alternating between this store and a second
/// process on the same database (when the backend allows one), and counts those
/// that applied; every other one must have failed with an error `lost` accepts.
async fn race(db: &Db, batches: impl IntoIterator<Item = Vec<Change>>, lost: fn(&Error) -> bool) -> usize {
    let other = db.reopen().await.unwrap_or_else(|| db.store.clone());
    let tasks: Vec<_> = batches
        .into_iter()
        .enumerate()
        .map(|(i, batch)| {
            let store = if i % 2 == 0 { db.store.clone() } else { other.clone() };
            tokio::spawn(async move { store.commit(batch).await })
        })
        .collect();
    let mut applied = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => applied += 1,
            Err(error) if lost(&error) => {}
            Err(error) => panic!("a racer failed other than by losing the race: {error}"),
        }
    }
    applied
}

#[track_caller]
fn assert_conflict(result: Result<(), Error>) {
    match result {
        Err(Error::Conflict(_)) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[track_caller]
fn assert_not_found(result: Result<(), Error>) {
    match result {
        Err(Error::NotFound(_)) => {}
        other => panic!("expected not found, got {other:?}"),
    }
}

fn all_servers() -> ServerFilter {
    ServerFilter {
        project_id: None,
        include_deleted: true,
    }
}

fn owner(node: &str, incarnation: &str) -> Owner {
    Owner {
        node: node.into(),
        incarnation: incarnation.into(),
    }
}

fn operation(
    server: ServerId,
    params: OperationParams,
    owner: &Owner,
    lease_until: chrono::DateTime<chrono::Utc>,
) -> Operation {
    Operation {
        server_id: server,
        id: uuid::Uuid::new_v4(),
        params,
        request_id: "req-op".into(),
        project_id: "p1".into(),
        user_id: "u1".into(),
        owner: owner.clone(),
        lease_until,
        step: "queued".into(),
        attempts: 0,
        last_error: None,
        then_delete: None,
        created_at: at(1),
        updated_at: at(1),
    }
}

/// Records `op` with a lease of `secs` seconds from the database's now (a
/// negative one has run out already).
fn insert_op(op: &Operation, secs: i64) -> Change {
    Change::InsertOperation {
        op: op.clone(),
        lease: chrono::TimeDelta::seconds(secs),
    }
}

/// `op` as stored: the lease is the database's.
fn as_stored(op: &Operation, stored: &Operation) -> Operation {
    Operation {
        lease_until: stored.lease_until,
        ..op.clone()
    }
}
