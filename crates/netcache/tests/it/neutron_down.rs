//! `serve` starts while Neutron does not answer: it serves what needs no
//! Neutron, a boot answers 503 with `Retry-After` (no port is created before
//! Neutron says how the ownership marker rides in the request), and boots work
//! once Neutron answers.

use neutron_sim::{FaultAction, FaultRule, SimConfig};
use serde_json::json;

use crate::common::{IMAGE, Options, TestApp};

/// Invariant 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_starts_without_neutron_and_boots_once_it_answers() {
    let t = TestApp::with(Options {
        sim: SimConfig {
            faults: vec![FaultRule::new("extensions.list", FaultAction::Error { status: 503 })],
            ..SimConfig::default()
        },
        ..Options::default()
    })
    .await;
    let (status, body) = t.get("/servers/detail").await;
    assert_eq!(
        (status, body["servers"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{body}"
    );
    let boot = json!({"server": {"name": "vm", "flavorRef": "1", "imageRef": IMAGE,
        "networks": [{"uuid": t.topology.private_network_id}]}});
    let refused = reqwest::Client::new()
        .post(t.url("/servers"))
        .json(&boot)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(t.neutron().stats().calls("ports.create"), 0);
    t.neutron().clear_faults();
    let id = t.boot_on_private().await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
}
