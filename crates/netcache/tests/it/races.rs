//! Operations racing GC, heal, Neutron's events and clients that leave: each race
//! is pinned by the fault proxy holding a Neutron call until the test lets it go.

use crate::common;

use std::time::Duration;

use common::proxy::ProxyFault;
use common::{Options, TestApp};
use neutron_sim::{FaultAction, FaultRule, SimConfig};
use reqwest::Method;
use serde_json::json;

/// A service whose Neutron calls go through the fault proxy; the call timeout is
/// long, so a held call fails only if the test never lets it go.
async fn proxied() -> TestApp {
    TestApp::with(Options {
        proxy: true,
        neutron_timeout: Duration::from_secs(60),
        ..Options::default()
    })
    .await
}

/// A server with two ports on the private network; returns its id and ports.
async fn two_port_server(t: &TestApp) -> (String, Vec<String>) {
    let net = &t.topology.private_network_id;
    let id = t.boot(json!([{"uuid": net}, {"uuid": net}])).await;
    let ports = t.interface_port_ids(&id).await;
    assert_eq!(ports.len(), 2);
    (id, ports)
}

async fn ops_left(t: &TestApp) -> usize {
    t.app().compute.store().operations().await.unwrap().len()
}

/// Has the fault proxy hold Neutron's delete of `port` (`fault`: the call, or
/// only its answer) until the test opens the gate.
fn hold_port_delete(t: &TestApp, port: &str, fault: ProxyFault) {
    t.proxy()
        .inject(Method::DELETE, &format!("/v2.0/ports/{port}"), 1, fault);
}

/// The server is gone: Nova's 404 for it, none of its ports left in Neutron
/// and no operation left.
async fn assert_server_gone(t: &TestApp, id: &str) {
    assert_eq!(t.get(&format!("/servers/{id}")).await.0, 404);
    assert!(t.neutron_ports(id).is_empty());
    assert_eq!(ops_left(t).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detach_racing_gc_finishes_and_gc_leaves_its_server_alone() {
    let t = proxied().await;
    let (id, ports) = two_port_server(&t).await;
    // Neutron deletes the port, but the detach does not hear so until released.
    hold_port_delete(&t, &ports[1], ProxyFault::GateAnswer);
    let (status, body) = t
        .call(
            Method::DELETE,
            &format!("/servers/{id}/os-interface/{}", ports[1]),
            None,
        )
        .await;
    assert_eq!(status, 202, "{body}");
    t.proxy().gated(1).await;
    // GC and heal run while the detach's port is `releasing` and its delete is out.
    let report = t.app().compute.gc().await.expect("GC passes");
    assert_eq!(report.released, 0, "the detach's release is the detach's");
    t.app().compute.heal().await.expect("heal passes");
    t.proxy().open_gate();
    t.app().compute.settle().await;
    assert_eq!(t.interface_port_ids(&id).await, [ports[0].clone()]);
    assert_eq!(t.neutron_port(&ports[1]).0, 404);
    assert_eq!(t.proxy().calls()["ports.delete"], 1, "deleted once, by the detach");
    assert_eq!(ops_left(&t).await, 0);
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    assert!(
        actions.to_string().contains("detach_interface"),
        "the detach is in the server's actions: {actions}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_racing_gc_finishes_and_gc_leaves_its_server_alone() {
    let t = proxied().await;
    let (id, ports) = two_port_server(&t).await;
    hold_port_delete(&t, &ports[0], ProxyFault::GateAnswer);
    let (status, body) = t.call(Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(status, 204, "{body}");
    t.proxy().gated(1).await;
    assert_eq!(t.server(&id).await["OS-EXT-STS:task_state"], "deleting");
    let report = t.app().compute.gc().await.expect("GC passes");
    assert_eq!(report.released, 0);
    t.proxy().open_gate();
    t.app().compute.settle().await;
    assert_eq!(t.proxy().calls()["ports.delete"], 2, "each port deleted once");
    assert_server_gone(&t, &id).await;
}

/// Heal read Neutron before a detach deleted the port, and writes after it: the
/// detached port must not come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_racing_a_detach_does_not_bring_the_port_back() {
    let t = proxied().await;
    let (id, ports) = two_port_server(&t).await;
    t.proxy().inject(Method::GET, "/v2.0/ports", 1, ProxyFault::GateAnswer);
    let compute = t.app().compute.clone();
    let heal = tokio::spawn(async move { compute.heal().await });
    t.proxy().gated(1).await;
    let (status, _) = t.delete(&format!("/servers/{id}/os-interface/{}", ports[1])).await;
    assert_eq!(status, 202);
    t.proxy().open_gate();
    heal.await.unwrap().expect("heal passes");
    assert_eq!(t.interface_port_ids(&id).await, [ports[0].clone()]);
    let server = t.server(&id).await;
    let (_, kept) = t.neutron_port(&ports[0]);
    assert_eq!(
        TestApp::macs(&server),
        [kept["port"]["mac_address"].as_str().unwrap()],
        "{server}"
    );
}

/// Heal read the server's records before an attach, and Neutron after it: the
/// new interface stays, and its port is not taken for a ghost.
/// Invariant 18.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_racing_an_attach_keeps_the_interface_and_sees_no_ghost() {
    let t = proxied().await;
    let id = t.boot_on_private().await;
    t.proxy().inject(Method::GET, "/v2.0/ports", 1, ProxyFault::Gate);
    let compute = t.app().compute.clone();
    let heal = tokio::spawn(async move { compute.heal().await });
    t.proxy().gated(1).await;
    let net = t.topology.private_network_id.clone();
    let (status, body) = t.attach_on_network(&id, &net).await;
    assert_eq!(status, 200, "{body}");
    t.proxy().open_gate();
    let report = heal.await.unwrap().expect("heal passes");
    assert!(report.ghosts.is_empty(), "{:?}", report.ghosts);
    assert_eq!(t.interface_port_ids(&id).await.len(), 2);
    assert_eq!(TestApp::macs(&t.server(&id).await).len(), 2);
    let sightings = t.app().compute.store().ghost_sightings().await.unwrap();
    assert!(sightings.is_empty(), "{sightings:?}");
}

/// Both `network-vif-plugged` events arrive in one batch while the build waits
/// for them: the build goes on (it once held a lock the events needed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_waiting_for_plug_events_takes_them_in_one_batch() {
    let t = TestApp::with(Options {
        sim: SimConfig {
            bind_activates: false,
            ..SimConfig::default()
        },
        tweak: |s| s.compute.vif_plugging_timeout = 300.0,
        ..Options::default()
    })
    .await;
    let net = &t.topology.private_network_id;
    let id = t.start_boot("w", json!([{"uuid": net}, {"uuid": net}])).await;
    let ports = common::wait_for_ports(&t, &id, 2).await;
    let events: Vec<_> = ports
        .iter()
        .map(|p| json!({"name": "network-vif-plugged", "server_uuid": id, "tag": p, "status": "completed"}))
        .collect();
    let (status, body) = t.post_events(json!({ "events": events })).await;
    assert_eq!(status, 200, "{body}");
    t.app().compute.settle().await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "ACTIVE", "{server}");
}

/// Sends a request and drops the connection once Neutron holds the call it made.
async fn leave_while_neutron_holds(t: &TestApp, method: Method, path: &str, body: Option<serde_json::Value>) {
    let (http, url) = (t.http.clone(), t.url(path));
    let request = tokio::spawn(async move { common::send_json(&http, method, &url, body).await });
    t.proxy().gated(1).await;
    request.abort();
    let _ = request.await;
    t.proxy().open_gate();
    t.app().compute.settle().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_attach_still_gets_the_interface_attached() {
    let t = proxied().await;
    let id = t.boot_on_private().await;
    t.proxy().inject(Method::POST, "/v2.0/ports", 1, ProxyFault::Gate);
    let net = t.topology.private_network_id.clone();
    let body = json!({"interfaceAttachment": {"net_id": net}});
    leave_while_neutron_holds(&t, Method::POST, &format!("/servers/{id}/os-interface"), Some(body)).await;
    assert_eq!(t.interface_port_ids(&id).await.len(), 2);
    assert_eq!(t.neutron_ports(&id).len(), 2);
    assert_eq!(ops_left(&t).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_detach_still_gets_the_port_detached() {
    let t = proxied().await;
    let (id, ports) = two_port_server(&t).await;
    hold_port_delete(&t, &ports[1], ProxyFault::Gate);
    let path = format!("/servers/{id}/os-interface/{}", ports[1]);
    leave_while_neutron_holds(&t, Method::DELETE, &path, None).await;
    assert_eq!(t.interface_port_ids(&id).await, [ports[0].clone()]);
    assert_eq!(t.neutron_port(&ports[1]).0, 404);
    assert_eq!(ops_left(&t).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_delete_still_gets_the_server_deleted() {
    let t = proxied().await;
    let (id, ports) = two_port_server(&t).await;
    hold_port_delete(&t, &ports[0], ProxyFault::Gate);
    leave_while_neutron_holds(&t, Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_server_gone(&t, &id).await;
}

/// Neutron binds the user's port but the answer is lost; the retry's revision
/// guard then refuses. A lookup settles it: the port is bound to the server, so
/// the attach succeeded (it once answered 504 and left the port bound to the
/// server after its delete).
/// Invariant 19.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attach_whose_bind_answer_was_lost_is_settled_by_a_lookup() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let user = t.user_port(json!({}));
    let port = user["id"].as_str().unwrap().to_owned();
    t.fault(FaultRule::new("ports.update", FaultAction::CommitThenDrop).nth(1));
    let (status, body) = t
        .post(
            &format!("/servers/{id}/os-interface"),
            json!({"interfaceAttachment": {"port_id": port}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(t.interface_port_ids(&id).await.len(), 2);
    let (status, _) = t.delete(&format!("/servers/{id}")).await;
    assert_eq!(status, 204);
    let (_, left) = t.neutron_port(&port);
    assert_eq!(left["port"]["device_id"], "", "the user's port is unbound: {left}");
}

/// With Neutron down, a boot fails saying so (not "No valid host"), an attach is
/// 503 with `Retry-After`, and the records still answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_neutron_down_a_boot_says_so_and_an_attach_is_503() {
    let t = TestApp::with(Options {
        proxy: true,
        tweak: |s| s.compute.max_attempts = 3,
        ..Options::default()
    })
    .await;
    let up = t.boot_on_private().await;
    t.proxy().refuse_connections();
    let down = t.boot_on_private().await;
    let server = t.server(&down).await;
    assert_eq!(server["status"], "ERROR", "{server}");
    let fault = server["fault"]["message"].as_str().unwrap();
    assert!(fault.contains("unreachable"), "{fault}");
    assert!(!fault.contains("No valid host"), "{fault}");
    let net = t.topology.private_network_id.clone();
    let response = t
        .http
        .post(t.url(&format!("/servers/{up}/os-interface")))
        .json(&json!({"interfaceAttachment": {"net_id": net}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert!(response.headers().contains_key("retry-after"));
    assert_eq!(t.interface_port_ids(&up).await.len(), 1);
}

/// A delete that arrives while an attach waits on Neutron is queued on it (204 at
/// once) and runs when the attach is done: the attach's port goes with the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_during_an_attach_runs_after_it() {
    let t = proxied().await;
    let id = t.boot_on_private().await;
    let attach = t.attach_held_at_create(&id).await;
    let (status, body) = t.call(Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(status, 204, "{body}");
    let (status, _) = t.attach_on_network(&id, &t.topology.private_network_id).await;
    assert_eq!(status, 409, "one operation at a time");
    t.proxy().open_gate();
    let (status, body) = attach.await.unwrap();
    assert_eq!(status, 200, "{body}");
    t.app().compute.settle().await;
    assert_server_gone(&t, &id).await;
}
