//! Compute services: registered once per host by any number of processes,
//! up while their heartbeat is ahead of the database's now, changed by an
//! admin with compare-and-swap; and the per-host counts os-hypervisors shows.

use netcache_domain::HostName;
use netcache_domain::service::{COMPUTE_BINARY, ServiceUpdate, Status};
use netcache_store::StoredService;

use super::*;

const HOUR: chrono::TimeDelta = chrono::TimeDelta::hours(1);

fn hosts(names: &[&str]) -> Vec<HostName> {
    names.iter().map(|h| HostName::from(*h)).collect()
}

fn by_host<'a>(services: &'a [StoredService], host: &str) -> &'a StoredService {
    services
        .iter()
        .find(|s| s.service.host.as_str() == host)
        .expect("service of host")
}

pub async fn services_are_registered_once_per_host_by_any_process(db: &Db) {
    let (a, b) = (db.store.clone(), db.store.clone());
    let ab = hosts(&["host1", "host2"]);
    let bc = hosts(&["host2", "host3"]);
    let (first, second) = tokio::join!(a.register_services(&ab, HOUR), b.register_services(&bc, HOUR));
    first.unwrap();
    second.unwrap();
    db.store.register_services(&ab, HOUR).await.unwrap();
    let services = db.store.services().await.unwrap();
    let names: Vec<&str> = services.iter().map(|s| s.service.host.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["host1", "host2", "host3"], "one row per host");
    let mut ids: Vec<i64> = services.iter().map(|s| s.service.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    for stored in &services {
        let s = &stored.service;
        assert_eq!(s.binary, COMPUTE_BINARY);
        assert!(!s.disabled && !s.forced_down && s.disabled_reason.is_none());
        assert!(stored.heartbeat_live && s.updated_at.is_some());
    }
    let uuids: std::collections::HashSet<_> = services.iter().map(|s| s.service.uuid).collect();
    assert_eq!(uuids.len(), 3, "a uuid each");
}

pub async fn a_service_is_up_while_its_heartbeat_is_ahead_of_the_databases_clock(db: &Db) {
    let host = hosts(&["host1"]);
    db.store
        .register_services(&host, chrono::TimeDelta::zero())
        .await
        .unwrap();
    assert!(!by_host(&db.store.services().await.unwrap(), "host1").heartbeat_live);
    assert_eq!(db.store.renew_service_heartbeats(&host, HOUR).await.unwrap(), 1);
    assert!(by_host(&db.store.services().await.unwrap(), "host1").heartbeat_live);
    assert_eq!(
        db.store
            .renew_service_heartbeats(&hosts(&["nowhere"]), HOUR)
            .await
            .unwrap(),
        0,
        "a heartbeat registers nothing"
    );
}

pub async fn service_changes_compare_and_swap_and_feed_the_scheduler(db: &Db) {
    db.store
        .register_services(&hosts(&["host1", "host2"]), HOUR)
        .await
        .unwrap();
    assert_eq!(db.store.unschedulable_hosts().await.unwrap(), Vec::<HostName>::new());
    let read = by_host(&db.store.services().await.unwrap(), "host1").service.clone();
    let disable = ServiceUpdate {
        status: Some(Status::Disabled),
        disabled_reason: Some("maintenance".into()),
        forced_down: None,
    };
    let disabled = read.updated(&disable).unwrap();
    db.store.update_service(&disabled).await.unwrap();
    match db.store.update_service(&disabled).await {
        Err(Error::Conflict(_)) => {}
        other => panic!("a second write from the same read must conflict: {other:?}"),
    }
    // A heartbeat leaves the generation (and the admin's change) alone.
    db.store
        .renew_service_heartbeats(&hosts(&["host1"]), HOUR)
        .await
        .unwrap();
    let stored = by_host(&db.store.services().await.unwrap(), "host1").service.clone();
    assert_eq!(stored.generation, read.generation + 1);
    assert!(stored.disabled);
    assert_eq!(stored.disabled_reason.as_deref(), Some("maintenance"));
    assert_eq!(db.store.unschedulable_hosts().await.unwrap(), hosts(&["host1"]));

    let other = by_host(&db.store.services().await.unwrap(), "host2").service.clone();
    let forced = other
        .updated(&ServiceUpdate {
            forced_down: Some(true),
            ..ServiceUpdate::default()
        })
        .unwrap();
    db.store.update_service(&forced).await.unwrap();
    assert_eq!(
        db.store.unschedulable_hosts().await.unwrap(),
        hosts(&["host1", "host2"])
    );

    assert!(db.store.delete_service(stored.id).await.unwrap());
    assert!(!db.store.delete_service(stored.id).await.unwrap());
    assert_eq!(db.store.unschedulable_hosts().await.unwrap(), hosts(&["host2"]));
    assert_conflict(db.store.update_service(&stored).await);
}

pub async fn live_servers_are_counted_per_host_and_flavor(db: &Db) {
    let on = |host: &str, created| {
        let mut s = server("p1", created);
        s.host = Some(HostName::from(host));
        s.vm_state = VmState::Active;
        s
    };
    let (a, b, c) = (on("host1", at(1)), on("host1", at(2)), on("host2", at(3)));
    let mut gone = on("host1", at(4));
    gone.vm_state = VmState::Deleted;
    gone.deleted_at = Some(at(5));
    for s in [&a, &b, &c, &gone] {
        insert_server(&*db.store, s).await;
    }
    let counts = db.store.server_counts_by_host().await.unwrap();
    let seen: Vec<(&str, i64)> = counts.iter().map(|c| (c.host.as_str(), c.servers)).collect();
    assert_eq!(seen, [("host1", 2), ("host2", 1)]);
    assert_eq!(counts[0].flavor_ref, a.flavor_ref);
    let on_host1 = db.store.servers_on_host(&HostName::from("host1")).await.unwrap();
    assert_eq!(on_host1, [(a.id, a.name.clone()), (b.id, b.name.clone())]);
    assert_eq!(db.store.servers_on_host(&HostName::from("host9")).await.unwrap(), []);
}
