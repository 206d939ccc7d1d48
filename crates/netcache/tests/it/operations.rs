//! Durable operations: a crash at every recorded step of build, delete, attach,
//! detach, a power action and a rebuild is finished by the restarted process; events and os-interface do
//! not depend on locks or on a live Neutron.

use crate::common;

use common::TestApp;
use netcache_domain::ServerId;
use netcache_domain::vif::VifState;
use netcache_testenv::json::items;
use neutron_sim::{FaultAction, FaultRule};
use serde_json::{Value, json};

async fn ops_left(t: &TestApp) -> usize {
    t.app().compute.store().operations().await.unwrap().len()
}

macro_rules! crash_at {
    ($point:literal) => {
        |s: &mut netcache_app::settings::Settings| s.compute.crash_at = Some($point.into())
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_interrupted_at_any_step_is_finished_after_a_restart() {
    for (point, tweak) in [
        ("operation-started", crash_at!("operation-started") as fn(&mut _)),
        ("after-intent-recorded", crash_at!("after-intent-recorded")),
        ("after-create-sent", crash_at!("after-create-sent")),
        ("before-spawn", crash_at!("before-spawn")),
    ] {
        let mut t = TestApp::doomed(tweak).await;
        let id = t.boot_on_private().await;
        assert_eq!(t.server(&id).await["status"], "BUILD", "{point}");
        t.restart_clean().await;
        assert_eq!(t.server(&id).await["status"], "ACTIVE", "{point}");
        let ports = t.neutron_ports(&id);
        assert_eq!(ports.len(), 1, "{point}: {ports:?}");
        assert_eq!(
            t.interface_port_ids(&id).await,
            [ports[0]["id"].as_str().unwrap()],
            "{point}"
        );
        assert_eq!(ops_left(&t).await, 0, "{point}");
        // The resumed build kept its request id: one create action, finished.
        let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
        assert_eq!(
            actions["instanceActions"].as_array().unwrap().len(),
            1,
            "{point}: {actions}"
        );
    }
}

/// A stop whose process died after the driver stopped the guest, before the
/// new state was recorded: the new incarnation resumes it (asking the driver
/// again) and the server ends SHUTOFF with one finished stop action.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_interrupted_after_the_driver_acted_is_finished_after_a_restart() {
    let mut t = TestApp::doomed(crash_at!("after-power-changed")).await;
    let id = t.boot_on_private().await;
    let (status, body) = t.post(&format!("/servers/{id}/action"), json!({"os-stop": null})).await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
    let server = t.server(&id).await;
    assert_eq!(server["OS-EXT-STS:task_state"], "powering-off", "{server}");
    t.restart_clean().await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "SHUTOFF", "{server}");
    assert!(server["OS-EXT-STS:task_state"].is_null(), "{server}");
    assert_eq!(ops_left(&t).await, 0);
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    let stops: Vec<&Value> = items(&actions, "instanceActions")
        .iter()
        .filter(|a| a["action"] == "stop")
        .collect();
    assert_eq!(stops.len(), 1, "{actions}");
}

/// A rebuild whose process died before the driver was asked, or after it
/// rebuilt the guest but before the outcome was recorded: the new incarnation
/// resumes it (asking the driver again) and the server ends as a rebuild
/// leaves it — ACTIVE, or SHUTOFF if it was stopped — with the new image, its
/// port and one finished rebuild action.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_interrupted_at_any_step_is_finished_after_a_restart() {
    let image = netcache_api::images::IMAGES[1].id;
    for (point, tweak) in [
        ("operation-started", crash_at!("operation-started") as Tweak),
        ("after-rebuild-spawned", crash_at!("after-rebuild-spawned")),
    ] {
        for (stopped, status) in [(false, "ACTIVE"), (true, "SHUTOFF")] {
            // Booted (and stopped) before the crash point is armed: it is the
            // rebuild's.
            let mut t = TestApp::start().await;
            let id = t.boot_on_private().await;
            let port = t.interface_port_ids(&id).await;
            let action = format!("/servers/{id}/action");
            if stopped {
                assert_eq!(t.post(&action, json!({"os-stop": null})).await.0, 202);
                t.app().compute.settle().await;
            }
            t.restart(tweak).await;
            let (code, body) = t.post(&action, json!({"rebuild": {"imageRef": image}})).await;
            assert_eq!(code, 202, "{point}: {body}");
            t.app().compute.settle().await;
            assert_eq!(t.server(&id).await["status"], "REBUILD", "{point}");
            t.restart_clean().await;
            let server = t.server(&id).await;
            assert_eq!(
                (&server["status"], &server["image"]["id"]),
                (&json!(status), &json!(image)),
                "{point}, stopped {stopped}: {server}"
            );
            assert_eq!(t.interface_port_ids(&id).await, port, "{point}");
            assert_eq!(ops_left(&t).await, 0, "{point}");
            let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
            let rebuilds: Vec<&Value> = items(&actions, "instanceActions")
                .iter()
                .filter(|a| a["action"] == "rebuild")
                .collect();
            assert_eq!(rebuilds.len(), 1, "{point}: {actions}");
        }
    }
}

type Tweak = fn(&mut netcache_app::settings::Settings);

/// The steps of a release (delete, detach) a process can die at.
const RELEASE_CRASH_POINTS: [(&str, Tweak); 2] = [
    ("after-release-recorded", crash_at!("after-release-recorded")),
    ("after-release-sent", crash_at!("after-release-sent")),
];

/// A doomed service with a server of two ports on the private network.
async fn doomed_with_two_ports(tweak: Tweak) -> (TestApp, String) {
    let t = TestApp::doomed(tweak).await;
    let net = &t.topology.private_network_id;
    let id = t.boot(json!([{"uuid": net}, {"uuid": net}])).await;
    (t, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_interrupted_at_any_step_is_finished_after_a_restart() {
    for (point, tweak) in RELEASE_CRASH_POINTS {
        let (mut t, id) = doomed_with_two_ports(tweak).await;
        assert_eq!(t.server(&id).await["status"], "ACTIVE");
        let (status, _) = t.delete(&format!("/servers/{id}")).await;
        assert_eq!(status, 204, "{point}");
        t.restart_clean().await;
        assert_eq!(t.get(&format!("/servers/{id}")).await.0, 404, "{point}");
        assert!(t.neutron_ports(&id).is_empty(), "{point}: ports left");
        assert_eq!(ops_left(&t).await, 0, "{point}");
        let server_id: ServerId = id.parse().unwrap();
        assert!(
            t.app().compute.store().vifs(server_id).await.unwrap().is_empty(),
            "{point}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detach_interrupted_at_any_step_is_finished_after_a_restart() {
    for (point, tweak) in RELEASE_CRASH_POINTS {
        let (mut t, id) = doomed_with_two_ports(tweak).await;
        let ports = t.interface_port_ids(&id).await;
        let (status, _) = t.delete(&format!("/servers/{id}/os-interface/{}", ports[1])).await;
        assert_eq!(status, 202, "{point}");
        // Released from the cache in the commit that recorded the release.
        assert_eq!(t.interface_port_ids(&id).await, [ports[0].clone()], "{point}");
        t.restart_clean().await;
        assert_eq!(t.interface_port_ids(&id).await, [ports[0].clone()], "{point}");
        assert_eq!(
            t.neutron_port(&ports[1]).0,
            404,
            "{point}: the detached port was deleted"
        );
        assert_eq!(ops_left(&t).await, 0, "{point}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attach_interrupted_at_any_step_is_finished_after_a_restart() {
    for (point, tweak) in [
        (
            "after-intent-recorded",
            crash_at!("after-intent-recorded") as fn(&mut _),
        ),
        ("after-create-sent", crash_at!("after-create-sent")),
    ] {
        let mut t = TestApp::doomed(tweak).await;
        // A user port: the boot creates no port, so the crash point is the attach's.
        let user = t.user_port(json!({"network_id": t.topology.private_network_id}));
        let user_id = user["id"].as_str().unwrap().to_owned();
        let id = t.boot(json!([{"port": user_id}])).await;
        let path = format!("/servers/{id}/os-interface");
        let net = t.topology.private_network_id.clone();
        let (status, body) = t.post(&path, json!({"interfaceAttachment": {"net_id": net}})).await;
        assert_eq!(status, 503, "{point}: the process died before the outcome: {body}");
        t.restart_clean().await;
        let attached = t.interface_port_ids(&id).await;
        assert_eq!(attached.len(), 2, "{point}: {attached:?}");
        assert_eq!(t.neutron_ports(&id).len(), 2, "{point}: nothing duplicated");
        assert_eq!(ops_left(&t).await, 0, "{point}");
    }
}

/// Invariant 17.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bogus_network_vif_deleted_changes_nothing() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    let event = json!({"events": [{"name": "network-vif-deleted", "server_uuid": id, "tag": port}]});
    let (status, body) = t.post_events(event).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(t.interface_port_ids(&id).await, std::slice::from_ref(&port));
    let vifs = t.app().compute.store().vifs(id.parse().unwrap()).await.unwrap();
    assert_eq!(vifs[0].state, VifState::Attached);
    assert!(t.server(&id).await["addresses"].to_string().contains("10."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn os_interface_answers_from_records_with_neutron_down() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    t.neutron().reset_stats();
    t.fault(FaultRule::new("*", FaultAction::Error { status: 503 }));
    let (status, list) = t.get(&format!("/servers/{id}/os-interface")).await;
    assert_eq!(status, 200, "{list}");
    let attachment = &list["interfaceAttachments"][0];
    assert_eq!(attachment["port_id"], port.as_str());
    assert!(
        attachment["mac_addr"].as_str().is_some_and(|m| m.len() == 17),
        "{attachment}"
    );
    assert!(attachment["fixed_ips"][0]["subnet_id"].is_string(), "{attachment}");
    assert_eq!(attachment["port_state"], "ACTIVE");
    let (status, one) = t.get(&format!("/servers/{id}/os-interface/{port}")).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["interfaceAttachment"], *attachment);
    assert_eq!(t.neutron().stats().total(), 0, "no Neutron call");
}

/// Neutron's refusals keep their meaning in Nova's codes (a quota's 409, a 404, a
/// 400), never a bare 500; the failed attach leaves nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neutron_refusals_of_an_attach_keep_their_meaning() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let net = t.topology.private_network_id.clone();
    for (status, key) in [(409, "conflictingRequest"), (404, "itemNotFound"), (400, "badRequest")] {
        t.fault(FaultRule::new("ports.create", FaultAction::Error { status }).times(1));
        let (code, body) = t.attach_on_network(&id, &net).await;
        assert_eq!(code, status, "{body}");
        assert!(body[key]["message"].is_string(), "{body}");
        assert_eq!(t.interface_port_ids(&id).await.len(), 1);
        assert_eq!(t.neutron_ports(&id).len(), 1);
        assert_eq!(ops_left(&t).await, 0);
    }
}

/// A port heal found given away is lost; once Neutron gives it back to the
/// server, heal restores it (it would otherwise be neither shown nor a ghost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_port_that_comes_back_is_restored_by_heal() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    let bind = |device_id: &str| json!({"port": {"device_id": device_id}});
    let (status, body) = t
        .neutron()
        .request("PUT", &format!("/v2.0/ports/{port}"), Some(bind("")));
    assert_eq!(status, 200, "{body}");
    t.app().compute.heal().await.unwrap();
    assert!(t.interface_port_ids(&id).await.is_empty());
    let vifs = t.app().compute.store().vifs(id.parse().unwrap()).await.unwrap();
    assert_eq!(vifs[0].state, VifState::Lost);

    let (status, body) = t
        .neutron()
        .request("PUT", &format!("/v2.0/ports/{port}"), Some(bind(&id)));
    assert_eq!(status, 200, "{body}");
    t.app().compute.heal().await.unwrap();
    assert_eq!(t.interface_port_ids(&id).await, [port]);
    assert_eq!(TestApp::macs(&t.server(&id).await).len(), 1);
    let vifs = t.app().compute.store().vifs(id.parse().unwrap()).await.unwrap();
    assert_eq!(vifs[0].state, VifState::Attached);
    let report = t.app().compute.heal().await.unwrap();
    assert!(report.ghosts.is_empty());
}
