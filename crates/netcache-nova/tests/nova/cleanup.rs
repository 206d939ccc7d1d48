use std::time::Duration;

use netcache_domain::nova::FindingKind;
use netcache_nova::{GcOutcome, VifDeleted};

use crate::support::{Cloud, built, deleted, uuid};

fn nothing(_: &netcache_nova::Progress<'_>) {}

/// Cases A and E2 beside a clean server and a server with a user's port.
struct World {
    cloud: Cloud,
    ghost_server: String,
    kept: Vec<netcache_domain::PortId>,
    ghost: netcache_domain::PortId,
    leaked: netcache_domain::PortId,
}

async fn world() -> World {
    let cloud = Cloud::start().await;
    let clean = uuid();
    let p = cloud.port(&clean, "compute:nova", Some("compute1"), true);
    cloud.nova.put(built(&clean, &[&p]));
    let with_users = uuid();
    let users = cloud.port(&with_users, "compute:nova", Some("compute1"), true);
    let mut records = built(&with_users, &[&users]);
    records.cache[0].preserve_on_delete = true;
    cloud.nova.put(records);
    let (ghost_server, allocated, ghost) = cloud.case_a();
    // Case E2: the create landed after the delete.
    let gone = uuid();
    let was = cloud.port(&gone, "compute:nova", Some("compute1"), true);
    cloud
        .sim
        .handle()
        .request("DELETE", &format!("/v2.0/ports/{was}"), None);
    let leaked = cloud.port(&gone, "", None, true);
    cloud.nova.put(deleted(built(&gone, &[&was])));
    World {
        cloud,
        ghost_server,
        kept: vec![p, users, allocated],
        ghost,
        leaked,
    }
}

#[tokio::test]
async fn the_audit_names_exactly_the_ghost_and_the_leak() {
    let w = world().await;
    let report = w
        .cloud
        .auditor(Cloud::config(Duration::ZERO))
        .run(&nothing)
        .await
        .unwrap();
    let found: Vec<_> = report
        .findings
        .iter()
        .map(|f| (f.kind, f.instance.to_string(), f.port.clone().unwrap()))
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.contains(&(FindingKind::GhostShown, w.ghost_server.clone(), w.ghost.clone())));
    assert!(
        found
            .iter()
            .any(|(k, _, p)| *k == FindingKind::Leaked && *p == w.leaked)
    );
    assert!(report.drift());
    assert_eq!(report.totals.instances, 3);
    assert_eq!(report.totals.deleted_instances, 1);
}

/// Invariant 25.
#[tokio::test]
async fn a_dry_run_changes_nothing() {
    let w = world().await;
    let gc = w.cloud.gc(Duration::ZERO);
    let before = w.cloud.sim.handle().port_count();
    for _ in 0..3 {
        let report = gc.pass(false, &nothing).await.unwrap();
        assert!(report.acted.iter().all(|a| a.outcome == GcOutcome::WouldAct));
    }
    assert_eq!(w.cloud.sim.handle().port_count(), before);
    assert!(w.cloud.port_exists(&w.ghost) && w.cloud.port_exists(&w.leaked));
    assert!(w.cloud.events.sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn gc_deletes_the_ghost_and_the_leak_on_the_second_sighting_and_tells_nova() {
    let w = world().await;
    let gc = w.cloud.gc(Duration::ZERO);
    let first = gc.pass(true, &nothing).await.unwrap();
    assert!(first.acted.is_empty(), "seen once: nothing done");
    assert_eq!(first.waiting, 2);
    let second = gc.pass(true, &nothing).await.unwrap();
    let outcomes: Vec<_> = second.acted.iter().map(|a| a.outcome.clone()).collect();
    assert_eq!(outcomes, vec![GcOutcome::Deleted, GcOutcome::Deleted], "{second:?}");
    assert!(!w.cloud.port_exists(&w.ghost) && !w.cloud.port_exists(&w.leaked));
    for kept in &w.kept {
        assert!(w.cloud.port_exists(kept), "{kept} must stay");
    }
    assert_eq!(
        *w.cloud.events.sent.lock().unwrap(),
        vec![VifDeleted {
            instance: w.ghost_server.as_str().into(),
            port: w.ghost.clone(),
        }],
        "only the ghost Nova shows is reported to Nova"
    );
}

#[tokio::test]
async fn nothing_is_done_within_grace() {
    let w = world().await;
    let gc = w.cloud.gc(Duration::from_secs(3600));
    for _ in 0..3 {
        assert!(gc.pass(true, &nothing).await.unwrap().acted.is_empty());
    }
    assert!(w.cloud.port_exists(&w.ghost) && w.cloud.port_exists(&w.leaked));
}
