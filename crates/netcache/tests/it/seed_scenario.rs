//! The seed scenario (Nova bugs 1258620/1272195), both paths, with and without
//! Neutron's `tag-ports-during-bulk-creation` extension.

use crate::common;

use std::process::Command;

use common::{Options, TestApp, sim_without_tag_extension};
use netcache_domain::ServerId;
use netcache_domain::intent::IntentState;
use netcache_testenv::json::strings;
use neutron_sim::{FaultAction, FaultRule, SimConfig};
use serde_json::Value;

/// Tags and name of a Neutron port, where a marker can ride.
fn marker_text(port: &Value) -> String {
    format!("{} {}", port["name"], port["tags"])
}

/// Path 1: Neutron commits the first create-port but its answer is lost. netcache
/// finds the port by its marker and adopts it: one port, one intent, no reschedule.
async fn adopt_path(sim: SimConfig) {
    let t = TestApp::with(Options {
        sim,
        ..Options::default()
    })
    .await;
    t.fault(FaultRule::new("ports.create", FaultAction::CommitThenDrop).nth(1));

    let id = t.boot_on_private().await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "ACTIVE", "{server}");

    let port = t.the_one_port(&id).await;
    assert_eq!(TestApp::macs(&server), [port["mac_address"].as_str().unwrap()]);

    let intents = t.intents(&id).await;
    assert_eq!(intents.len(), 1, "{intents:?}");
    assert_eq!(intents[0].state, IntentState::Created);
    assert!(
        intents[0].adopted,
        "the port was found by its marker, not by the lost answer"
    );
    assert_eq!(
        intents[0].port_id.as_ref().unwrap().as_str(),
        port["id"].as_str().unwrap()
    );
    assert!(marker_text(&port).contains(&intents[0].id.to_string()));
    // One create, never re-POSTed.
    assert_eq!(t.neutron().stats().calls("ports.create"), 1);
}

/// Path 2: Neutron commits the first create only after netcache gave up; the
/// lookup finds nothing, the intent is abandoned and the build is rescheduled.
/// The late port is a ghost: Neutron lists two ports, netcache shows one.
async fn late_commit_path(sim: SimConfig) {
    let t = TestApp::with(Options {
        sim,
        ..Options::default()
    })
    .await;
    t.fault(FaultRule::new("ports.create", FaultAction::commit_on_release(None)).nth(1));

    let id = t.boot_on_private().await;
    let server_id: ServerId = id.parse().unwrap();
    // The held create commits now, after netcache moved on.
    assert_eq!(t.neutron().release_delayed_commits(), 1);

    let server = t.admin_server(&id).await;
    assert_eq!(server["status"], "ACTIVE", "{server}");
    let intents = t.app().compute.store().intents(server_id).await.unwrap();
    assert_eq!(intents.len(), 2, "{intents:?}");
    let (abandoned, created) = (&intents[0], &intents[1]);
    assert_eq!(abandoned.state, IntentState::Abandoned);
    assert_eq!(created.state, IntentState::Created);
    assert!(!created.adopted);
    assert_ne!(
        abandoned.host, created.host,
        "the build was rescheduled to another host"
    );
    assert_eq!(server["OS-EXT-SRV-ATTR:host"], created.host.as_str());

    let ports = t.neutron_ports(&id);
    assert_eq!(
        ports.len(),
        2,
        "Neutron holds the attached port and the ghost: {ports:?}"
    );
    let attached = created.port_id.as_ref().unwrap().as_str();
    let ghost = ports.iter().find(|p| p["id"] != attached).unwrap();
    assert!(
        marker_text(ghost).contains(&abandoned.id.to_string()),
        "the ghost carries the abandoned intent's marker: {ghost}"
    );
    let attached_port = ports.iter().find(|p| p["id"] == attached).unwrap();

    // Exactly one port everywhere netcache shows ports.
    assert_eq!(TestApp::macs(&server), [attached_port["mac_address"].as_str().unwrap()]);
    let (_, ips) = t.get(&format!("/servers/{id}/ips")).await;
    let shown: usize = ips["addresses"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_array().unwrap().len())
        .sum();
    let ghost_ips = strings(ghost, "fixed_ips", "ip_address");
    assert_eq!(shown, attached_port["fixed_ips"].as_array().unwrap().len(), "{ips}");
    assert!(!common::shows_ip(&ips, ghost_ips[0]), "ghost IP in /ips: {ips}");
    assert_eq!(t.interface_port_ids(&id).await, [attached]);
    let (status, _) = t
        .get(&format!("/servers/{id}/os-interface/{}", ghost["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);

    // And in the CLI.
    let output = Command::new(env!("CARGO_BIN_EXE_netcache"))
        .args(["server", "show", &id, "--output", "json", "--url", &t.app().api_url()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(TestApp::macs(&shown), [attached_port["mac_address"].as_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&output.stdout).contains(ghost_ips[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_adopt_path_with_tags_in_post() {
    adopt_path(SimConfig::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_late_commit_path_with_tags_in_post() {
    late_commit_path(SimConfig::default()).await;
}

/// Invariant 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_adopt_path_without_tag_extension() {
    adopt_path(sim_without_tag_extension()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_late_commit_path_without_tag_extension() {
    late_commit_path(sim_without_tag_extension()).await;
}
