//! The garbage collector: only provably-ours garbage, only after the grace
//! period and a second sighting, never across a legitimate attach, with If-Match.

use crate::support;

use chrono::TimeDelta;
use netcache_compute::prelude::*;
use netcache_compute::{AttachRequest, CrashPoint, GcReport};
use netcache_domain::gc::ForeignPolicy;
use netcache_domain::intent::IntentState;
use netcache_domain::{PortId, ServerId};
use neutron_sim::{FaultAction, FaultRule, SimConfig};
use serde_json::json;
use support::{Harness, config, crashing_at};

const PAST_GRACE: TimeDelta = TimeDelta::minutes(11);

/// The seed scenario's late commit: returns the server and the ghost port.
async fn late_commit_ghost(h: &Harness) -> (ServerId, String) {
    h.sim()
        .add_fault(FaultRule::new("ports.create", FaultAction::commit_on_release(None)).nth(1));
    let server = h.boot().await;
    assert_eq!(h.sim().release_delayed_commits(), 1);
    let attached = h.cached_port_ids(server).await;
    let ghost = h
        .ports_of(server)
        .into_iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .find(|p| !attached.contains(p))
        .expect("the late port");
    (server, ghost)
}

/// Two heal passes sight the ghosts twice, then `wait` passes: past the grace,
/// the next GC pass judges them.
async fn sight_twice_then_wait(h: &Harness, wait: TimeDelta) {
    h.compute.heal().await.unwrap();
    h.compute.heal().await.unwrap();
    h.compute.clock().advance(wait);
}

/// The pass deleted nothing and skipped `ghost` once, for `reason`: it is still in Neutron.
fn assert_kept(h: &Harness, r: &GcReport, ghost: &str, reason: &str) {
    assert!(r.deleted.is_empty(), "{r:?}");
    assert_eq!(r.skipped.get(reason), Some(&1), "{r:?}");
    assert_eq!(h.port(ghost).0, 200);
}

/// Attaches the existing port `port` to `server`, as a user would.
async fn attach_port(h: &Harness, server: ServerId, port: &str) {
    let request = AttachRequest::Port {
        port_id: PortId::from(port),
        tag: None,
    };
    h.compute
        .attach_interface(&Harness::ctx(), server, request)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_late_commit_ghost_is_deleted_only_after_grace_and_a_second_sighting() {
    let h = Harness::start(config()).await;
    let (server, ghost) = late_commit_ghost(&h).await;
    let attached = h.cached_port_ids(server).await;

    h.compute.heal().await.unwrap();
    let r = h.compute.gc().await.unwrap();
    assert_kept(&h, &r, &ghost, "too_young");

    h.compute.clock().advance(PAST_GRACE);
    let r = h.compute.gc().await.unwrap();
    // Past the grace, but seen in one sweep only.
    assert_kept(&h, &r, &ghost, "too_few_sightings");

    h.compute.heal().await.unwrap();
    let r = h.compute.gc().await.unwrap();
    assert_eq!(r.deleted, [PortId::from(ghost.as_str())], "{r:?}");
    assert_eq!(h.port(&ghost).0, 404);
    assert_eq!(
        h.cached_port_ids(server).await,
        attached,
        "the attached port is untouched"
    );
    assert_eq!(h.ports_of(server).len(), 1);
    assert!(h.compute.store().ghost_sightings().await.unwrap().is_empty());
    let actions = h.compute.actions(server).await.unwrap();
    assert!(
        actions.iter().any(|a| a.action == "netcache_gc"),
        "GC is in the action log"
    );
    // Sent with If-Match: the revision read just before.
    let deletes = h.recorded.deletes.lock().unwrap().clone();
    let (_, revision) = deletes.iter().find(|(p, _)| p.as_str() == ghost).unwrap();
    assert!(revision.is_some(), "delete without If-Match: {deletes:?}");
}

/// Invariant 11.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_412_on_delete_skips_the_ghost_until_the_next_pass() {
    let h = Harness::start(config()).await;
    let (_, ghost) = late_commit_ghost(&h).await;
    sight_twice_then_wait(&h, PAST_GRACE).await;
    h.sim()
        .add_fault(FaultRule::new("ports.delete", FaultAction::Error { status: 412 }).nth(1));
    let r = h.compute.gc().await.unwrap();
    assert_kept(&h, &r, &ghost, "changed");
    let r = h.compute.gc().await.unwrap();
    assert_eq!(r.deleted.len(), 1, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghost_attached_between_sighting_and_recheck_is_kept() {
    let h = Harness::start(config()).await;
    let (server, ghost) = late_commit_ghost(&h).await;
    sight_twice_then_wait(&h, PAST_GRACE).await;
    // A user attaches the port legitimately before GC runs.
    attach_port(&h, server, &ghost).await;
    let r = h.compute.gc().await.unwrap();
    assert_kept(&h, &r, &ghost, "attached");
    assert!(h.cached_port_ids(server).await.contains(&ghost));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghost_that_changed_after_its_sighting_is_kept() {
    let h = Harness::start(config()).await;
    let (_, ghost) = late_commit_ghost(&h).await;
    sight_twice_then_wait(&h, PAST_GRACE).await;
    h.sim().request(
        "PUT",
        &format!("/v2.0/ports/{ghost}"),
        Some(json!({"port": {"description": "touched"}})),
    );
    let r = h.compute.gc().await.unwrap();
    assert_kept(&h, &r, &ghost, "changed");
}

/// Invariant 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_ghosts_and_user_ports_are_never_deleted() {
    for foreign in [ForeignPolicy::Report, ForeignPolicy::Unbind] {
        let mut c = config();
        c.gc.policy.foreign = foreign;
        let h = Harness::start(c).await;
        let server = h.boot().await;
        let stranger = h.neutron_port(json!({"device_id": server.to_string(), "device_owner": "compute:nova"}));
        let stranger = stranger["id"].as_str().unwrap().to_owned();
        let user = h.neutron_port(json!({}));
        let user_id = user["id"].as_str().unwrap().to_owned();
        attach_port(&h, server, &user_id).await;
        sight_twice_then_wait(&h, TimeDelta::hours(2)).await;
        let r = h.compute.gc().await.unwrap();
        assert!(r.deleted.is_empty(), "{r:?}");
        let (status, port) = h.port(&stranger);
        assert_eq!(status, 200, "a foreign ghost is never deleted");
        match foreign {
            ForeignPolicy::Report => {
                assert_eq!(r.skipped.get("foreign"), Some(&1));
                assert_eq!(port["port"]["device_id"], server.to_string());
            }
            ForeignPolicy::Unbind => {
                assert_eq!(r.unbound, [PortId::from(stranger.as_str())]);
                assert_eq!(port["port"]["device_id"], "");
            }
        }
        assert_eq!(h.port(&user_id).0, 200);
        assert!(h.cached_port_ids(server).await.contains(&user_id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_reports_and_touches_nothing() {
    let mut c = config();
    c.gc.dry_run = true;
    let h = Harness::start(c).await;
    let (_, ghost) = late_commit_ghost(&h).await;
    sight_twice_then_wait(&h, PAST_GRACE).await;
    let r = h.compute.gc().await.unwrap();
    assert_eq!(r.would_delete, [PortId::from(ghost.as_str())]);
    assert!(r.deleted.is_empty());
    assert_eq!(h.port(&ghost).0, 200);
    assert!(h.recorded.deletes.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghost_whose_intent_is_pending_is_kept() {
    let h = Harness::start(crashing_at(CrashPoint::AfterCreateSent, config())).await;
    let server = h.boot().await;
    assert!(h.compute.has_crashed());
    let intents = h.compute.store().intents(server).await.unwrap();
    assert_eq!(intents[0].state, IntentState::Pending);
    sight_twice_then_wait(&h, PAST_GRACE).await;
    let r = h.compute.gc().await.unwrap();
    assert!(r.deleted.is_empty(), "{r:?}");
    // The crashed build still owns the server: heal leaves it alone, so its
    // mid-create port is not even sighted (gc::judge's intent_pending rule is the
    // second line of defence, covered by the domain's tests).
    assert!(h.compute.store().ghost_sightings().await.unwrap().is_empty());
    assert_eq!(h.ports_of(server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ghosts_of_a_deleted_server_are_collected() {
    let h = Harness::with_sim(config(), SimConfig::default()).await;
    let (server, ghost) = late_commit_ghost(&h).await;
    h.compute.delete_server(&Harness::ctx(), server).await.unwrap();
    h.compute.settle().await;
    // Server delete releases only recorded ports; the ghost remains for GC.
    assert_eq!(h.ports_of(server).len(), 1);
    sight_twice_then_wait(&h, PAST_GRACE).await;
    let r = h.compute.gc().await.unwrap();
    assert_eq!(r.deleted, [PortId::from(ghost.as_str())], "{r:?}");
    assert!(h.ports_of(server).is_empty());
}
