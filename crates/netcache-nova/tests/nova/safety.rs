//! What GC must never delete: each case changes the world between the
//! sightings, or between the last sighting and the delete.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use netcache_domain::nova::FindingKind;
use netcache_nova::GcOutcome;
use serde_json::json;

use crate::support::{Cloud, action, built, cached, deleted, uuid, vif};

fn nothing(_: &netcache_nova::Progress<'_>) {}

fn ghost_world(cloud: &Cloud) -> (String, netcache_domain::PortId) {
    let (server, _, ghost) = cloud.case_a();
    (server, ghost)
}

/// Invariant 26.
#[tokio::test]
async fn a_port_that_became_a_users_between_sightings_is_kept() {
    let cloud = Cloud::start().await;
    let (_, ghost) = ghost_world(&cloud);
    let gc = cloud.gc(Duration::ZERO);
    assert_eq!(gc.pass(true, &nothing).await.unwrap().waiting, 1);
    // The user detaches it and attaches it to another server of theirs.
    let other = uuid();
    cloud.update_port(&ghost, json!({"device_id": other}));
    let mut records = built(&other, &[]);
    records.actions.push(action(
        "attach_interface",
        Utc::now() - TimeDelta::seconds(2),
        Some(Utc::now()),
    ));
    records.vifs.push(vif(&ghost, Utc::now() - TimeDelta::seconds(1)));
    records.cache.push(cached(&ghost, true));
    cloud.nova.put(records);
    for _ in 0..2 {
        assert!(gc.pass(true, &nothing).await.unwrap().acted.is_empty());
    }
    assert!(cloud.port_exists(&ghost));
}

#[tokio::test]
async fn a_revision_change_after_the_re_read_is_a_412_and_nothing_is_deleted() {
    let cloud = Cloud::start().await;
    let (_, ghost) = ghost_world(&cloud);
    let gc = cloud.gc(Duration::ZERO);
    gc.pass(true, &nothing).await.unwrap();
    let sim = cloud.sim.handle();
    let port = ghost.clone();
    cloud.meddling.after_show(move || {
        let (status, _) = sim.request(
            "PUT",
            &format!("/v2.0/ports/{port}"),
            Some(json!({"port": {"name": "mine"}})),
        );
        assert_eq!(status, 200);
    });
    let report = gc.pass(true, &nothing).await.unwrap();
    assert_eq!(report.acted.len(), 1);
    assert!(
        matches!(&report.acted[0].outcome, GcOutcome::Skipped { why } if why.contains("412")),
        "{:?}",
        report.acted[0].outcome
    );
    assert!(cloud.port_exists(&ghost));
    assert!(cloud.events.sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_vif_row_written_late_makes_the_port_allocated() {
    let cloud = Cloud::start().await;
    let (server, ghost) = ghost_world(&cloud);
    let gc = cloud.gc(Duration::ZERO);
    gc.pass(true, &nothing).await.unwrap();
    // Right after the second audit read the ports, before GC's re-read: Nova
    // records the port during an interface attach.
    let nova = cloud.nova.clone();
    let uuid = server.as_str().into();
    let port = ghost.clone();
    cloud.meddling.after_list(2, move || {
        nova.update(&uuid, |records| {
            let now = Utc::now();
            records
                .actions
                .push(action("attach_interface", now - TimeDelta::seconds(1), None));
            records.vifs.push(vif(&port, now));
        });
    });
    let report = gc.pass(true, &nothing).await.unwrap();
    assert_eq!(report.acted.len(), 1);
    assert!(
        matches!(report.acted[0].outcome, GcOutcome::Skipped { .. }),
        "{report:?}"
    );
    assert!(cloud.port_exists(&ghost));
    let after = cloud
        .auditor(Cloud::config(Duration::ZERO))
        .run(&nothing)
        .await
        .unwrap();
    assert!(!after.drift(), "{:?}", after.findings);
}

#[tokio::test]
async fn a_deleted_servers_port_a_user_reused_is_kept() {
    let cloud = Cloud::start().await;
    let gone = uuid();
    let leaked = cloud.port(&gone, "", None, true);
    cloud.nova.put(deleted(built(&gone, &[])));
    let gc = cloud.gc(Duration::ZERO);
    let first = gc.pass(true, &nothing).await.unwrap();
    assert_eq!(first.audit.findings[0].kind, FindingKind::Leaked);
    // After the second audit (one port list each: no live instance), before
    // the delete: a user takes the port for a new server.
    let sim = cloud.sim.handle();
    let port = leaked.clone();
    let reused_by = uuid();
    let device = reused_by.clone();
    cloud.meddling.after_list(2, move || {
        let body = json!({"port": {"device_id": device, "device_owner": "compute:nova"}});
        assert_eq!(sim.request("PUT", &format!("/v2.0/ports/{port}"), Some(body)).0, 200);
    });
    let report = gc.pass(true, &nothing).await.unwrap();
    assert_eq!(report.acted.len(), 1);
    assert!(
        matches!(&report.acted[0].outcome, GcOutcome::Skipped { why } if why.contains(&reused_by)),
        "{:?}",
        report.acted[0].outcome
    );
    assert!(cloud.port_exists(&leaked));
}
