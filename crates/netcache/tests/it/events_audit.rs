//! os-server-external-events with Nova's codes and netcache's semantics, the
//! audit command and endpoint, and /metrics.

use crate::common;

use chrono::TimeDelta;
use common::{Options, PROJECT, TestApp};
use netcache_domain::ServerId;
use netcache_domain::vif::VifState;
use netcache_testenv::json::items;
use netcache_testenv::poll::{eventually, until};
use neutron_sim::{FaultAction, FaultRule, SimConfig};
use serde_json::{Value, json};

async fn events(t: &TestApp, events: Value) -> (u16, Value) {
    t.post_events(json!({ "events": events })).await
}

/// Invariant 12.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_changed_never_appends_a_ghost_and_refreshes_a_known_port() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    let ghost = t.user_port(json!({"device_id": id, "device_owner": "compute:nova"}));
    let ghost_id = ghost["id"].as_str().unwrap();

    // Nova would append the ghost here; netcache records a sighting.
    let (status, body) = events(
        &t,
        json!([{"name": "network-changed", "server_uuid": id, "tag": ghost_id}]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["events"][0]["code"], 200);
    assert_eq!(body["events"][0]["status"], "completed");
    assert_eq!(t.interface_port_ids(&id).await, std::slice::from_ref(&port));
    assert!(!common::shows_ip(
        &t.server(&id).await,
        ghost["fixed_ips"][0]["ip_address"].as_str().unwrap()
    ));
    let sightings = t.app().compute.store().ghost_sightings().await.unwrap();
    assert_eq!(sightings.len(), 1);
    assert_eq!(sightings[0].port_id.as_str(), ghost_id);

    // A floating IP associated in Neutron shows after network-changed for the port.
    let (_, fip) = t.neutron().request(
        "POST",
        "/v2.0/floatingips",
        Some(json!({"floatingip": {"floating_network_id": t.topology.public_network_id, "port_id": port, "project_id": PROJECT}})),
    );
    let fip = fip["floatingip"]["floating_ip_address"].as_str().unwrap().to_owned();
    assert!(!common::shows_ip(&t.server(&id).await, &fip));
    let (status, _) = events(&t, json!([{"name": "network-changed", "server_uuid": id, "tag": port}])).await;
    assert_eq!(status, 200);
    let server = t.server(&id).await;
    let floating: Vec<&Value> = items(&server["addresses"], "private")
        .iter()
        .filter(|a| a["OS-EXT-IPS:type"] == "floating")
        .collect();
    assert_eq!(floating.len(), 1, "{server}");
    assert_eq!(floating[0]["addr"], fip.as_str());

    // Tagless: the whole server, still without the ghost.
    let (status, _) = events(&t, json!([{"name": "network-changed", "server_uuid": id}])).await;
    assert_eq!(status, 200);
    assert_eq!(t.interface_port_ids(&id).await, [port]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_vif_deleted_drops_the_port() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    t.neutron().request("DELETE", &format!("/v2.0/ports/{port}"), None);
    let (status, body) = events(
        &t,
        json!([{"name": "network-vif-deleted", "server_uuid": id, "tag": port}]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(t.server(&id).await["addresses"].as_object().unwrap().is_empty());
    let vifs = t.app().compute.vifs(id.parse::<ServerId>().unwrap()).await.unwrap();
    assert_eq!(vifs[0].state, VifState::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_codes_and_overall_status_match_nova() {
    let t = TestApp::with_every_host_failing().await;
    // A server with no host: its build found none.
    let (_, created) = t
        .post(
            "/servers",
            json!({"server": {"name": "nohost", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}}),
        )
        .await;
    let no_host = created["server"]["id"].as_str().unwrap().to_owned();
    t.app().compute.settle().await;
    let missing = "6d3c0c6e-0a9e-4c2a-9e2b-000000000000";

    let mut t = t;
    t.restart(|s| s.compute.failing_hosts.clear()).await;
    let ok = t.boot(json!("none")).await;
    let (status, body) = events(
        &t,
        json!([{"name": "network-vif-plugged", "server_uuid": ok, "status": "completed", "tag": "x"}]),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = events(
        &t,
        json!([
            {"name": "network-changed", "server_uuid": ok},
            {"name": "network-changed", "server_uuid": missing},
            {"name": "network-changed", "server_uuid": "not-a-uuid"},
            {"name": "network-vif-plugged", "server_uuid": no_host, "tag": "p"},
        ]),
    )
    .await;
    assert_eq!(status, 207, "{body}");
    let codes: Vec<u64> = items(&body, "events")
        .iter()
        .map(|e| e["code"].as_u64().unwrap())
        .collect();
    assert_eq!(codes, [200, 404, 404, 422]);
    assert_eq!(body["events"][1]["status"], "failed");
    assert_eq!(body["events"][3]["tag"], "p");

    let (status, body) = events(&t, json!([{"name": "network-changed", "server_uuid": missing}])).await;
    assert_eq!(status, 207, "all failed is still 207 (bug 1855752): {body}");

    for bad in [
        json!([]),
        json!([{"name": "volume-exploded", "server_uuid": ok}]),
        json!([{"name": "network-changed"}]),
        json!([{"name": "network-changed", "server_uuid": ok, "extra": 1}]),
        json!([{"name": "network-changed", "server_uuid": ok, "status": "maybe"}]),
    ] {
        let (status, body) = events(&t, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {body}");
        assert_eq!(body["badRequest"]["code"], 400);
    }
    let response = t
        .http
        .post(t.url("/os-server-external-events"))
        .header("X-Roles", "member,reader")
        .json(&json!({"events": [{"name": "network-changed", "server_uuid": ok}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403, "events are for admins and services");
}

/// With `vif_plugging_timeout`, a build whose port Neutron leaves DOWN waits for
/// `network-vif-plugged`; without the event it fails when the wait is fatal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_waits_for_network_vif_plugged() {
    let down = || SimConfig {
        bind_activates: false,
        ..SimConfig::default()
    };
    let t = TestApp::with(Options {
        sim: down(),
        tweak: |s| s.compute.vif_plugging_timeout = 300.0,
        ..Options::default()
    })
    .await;
    let (_, created) = t
        .post(
            "/servers",
            json!({"server": {"name": "w", "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"uuid": t.topology.private_network_id}]}}),
        )
        .await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    // The build is waiting (its port exists, DOWN); the event releases it.
    let port = eventually("the build's port", async || {
        t.neutron_ports(&id)
            .first()
            .map(|p| p["id"].as_str().unwrap().to_owned())
    })
    .await;
    assert_eq!(t.server(&id).await["status"], "BUILD");
    let (status, _) = events(
        &t,
        json!([{"name": "network-vif-plugged", "server_uuid": id, "tag": port, "status": "completed"}]),
    )
    .await;
    assert_eq!(status, 200);
    t.app().compute.settle().await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");

    let t = TestApp::with(Options {
        sim: down(),
        tweak: |s| {
            s.compute.vif_plugging_timeout = 0.05;
            s.compute.max_attempts = 1;
        },
        ..Options::default()
    })
    .await;
    let id = t.boot_on_private().await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "ERROR", "{server}");
    assert!(
        server["fault"]["message"]
            .as_str()
            .unwrap()
            .contains("network-vif-plugged"),
        "{server}"
    );
    assert!(
        t.neutron_ports(&id).is_empty(),
        "the failed attempt's port was released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neutrons_notifier_brings_a_floating_ip_into_addresses_without_heal() {
    let t = TestApp::with(Options {
        sim: SimConfig {
            notify_interval_ms: 20,
            ..SimConfig::default()
        },
        ..Options::default()
    })
    .await;
    t.neutron().set_nova_url(Some(t.url("")));
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    // Through Neutron's HTTP API, as a user would.
    let response = t
        .http
        .post(format!("{}/v2.0/floatingips", t.sim.url()))
        .json(&json!({"floatingip": {"floating_network_id": t.topology.public_network_id, "port_id": port, "project_id": PROJECT}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let fip: Value = response.json().await.unwrap();
    let fip = fip["floatingip"]["floating_ip_address"].as_str().unwrap().to_owned();
    // Wait for the notifier's event (bounded; no heal runs in this test).
    until("the floating IP in addresses", async || {
        common::shows_ip(&t.server(&id).await["addresses"], &fip)
    })
    .await;
    assert!(t.neutron().stats().nova_events_sent >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_reports_each_drift_and_is_clean_after_heal_and_gc() {
    let t = TestApp::with(Options {
        tweak: |s| s.gc.foreign = netcache_app::settings::ForeignSetting::Unbind,
        ..Options::default()
    })
    .await;
    // Ghost (ours): the seed's late commit.
    t.fault(FaultRule::new("ports.create", FaultAction::commit_on_release(None)).nth(1));
    let seeded = t.boot_on_private().await;
    assert_eq!(t.neutron().release_delayed_commits(), 1);
    // Ghost (foreign), lost port, stale cache.
    let foreign_on = t.boot_on_private().await;
    t.user_port(json!({"device_id": foreign_on, "device_owner": "compute:nova"}));
    let lost_on = t.boot_on_private().await;
    let lost_port = t.interface_port_ids(&lost_on).await.remove(0);
    t.neutron().request("DELETE", &format!("/v2.0/ports/{lost_port}"), None);
    let stale_on = t.boot_on_private().await;
    let stale_port = t.interface_port_ids(&stale_on).await.remove(0);
    t.neutron().request(
        "PUT",
        &format!("/v2.0/ports/{stale_port}"),
        Some(json!({"port": {"fixed_ips": [{"subnet_id": t.topology.private_subnet_id, "ip_address": "10.0.0.200"}]}})),
    );
    // A ghost of a deleted server.
    let deleted = t.boot_on_private().await;
    t.delete(&format!("/servers/{deleted}")).await;
    t.user_port(json!({"device_id": deleted, "device_owner": "compute:nova"}));

    let out = t.run_cli(&["audit", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let totals = &report["audit"]["totals"];
    assert_eq!(report["audit"]["clean"], false);
    assert_eq!(totals["ghosts_ours"], 1, "{report}");
    assert_eq!(totals["ghosts_foreign"], 2, "{report}");
    assert_eq!(totals["deleted_server_ghosts"], 1, "{report}");
    assert_eq!(totals["lost"], 1, "{report}");
    assert_eq!(totals["stale_caches"], 1, "{report}");
    let server = |id: &str| {
        items(&report["audit"], "servers")
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(server(&seeded)["ghosts"][0]["owner"], "ours");
    assert_eq!(server(&lost_on)["lost"][0]["port_id"], lost_port.as_str());
    assert_eq!(server(&stale_on)["stale_cache"], true);
    assert_eq!(server(&deleted)["deleted"], true);

    // The same report over HTTP.
    let response = common::as_admin(t.http.get(format!("{}/netcache/v1/audit", t.app().api_url())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let over_http: Value = response.json().await.unwrap();
    assert_eq!(over_http["audit"]["totals"], *totals);

    // Heal twice (two sightings), past the grace period, GC: clean.
    let compute = &t.app().compute;
    compute.heal().await.unwrap();
    compute.heal().await.unwrap();
    compute.clock().advance(TimeDelta::minutes(11));
    let gc = compute.gc().await.unwrap();
    assert_eq!(gc.deleted.len(), 1, "{gc:?}");
    assert_eq!(gc.unbound.len(), 2, "{gc:?}");
    let out = t.run_cli(&["audit"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("clean"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_expose_the_series() {
    let t = TestApp::start().await;
    t.fault(FaultRule::new("ports.create", FaultAction::CommitThenDrop).nth(1));
    let id = t.boot_on_private().await;
    t.user_port(json!({"device_id": id, "device_owner": "compute:nova"}));
    let port = t.interface_port_ids(&id).await.remove(0);
    t.neutron().request("DELETE", &format!("/v2.0/ports/{port}"), None);
    t.app().compute.heal().await.unwrap();
    t.app().compute.gc().await.unwrap();
    let body = common::as_admin(t.http.get(format!("{}/metrics", t.app().api_url())))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for series in [
        "netcache_neutron_calls_total{operation=\"ports.create\",outcome=\"ambiguous\"}",
        "netcache_neutron_calls_total{operation=\"ports.list\",outcome=\"ok\"}",
        "netcache_neutron_call_duration_seconds_bucket{operation=\"ports.create\"",
        "netcache_heal_passes_total",
        "netcache_heal_servers_total",
        "netcache_heal_pass_duration_seconds_count",
        "netcache_lost_vifs_total",
        "netcache_ghosts{owner=\"foreign\"}",
        "netcache_ghosts{owner=\"ours\"}",
        "netcache_intents{state=\"created\"}",
        "netcache_intents{state=\"pending\"}",
        "netcache_gc_actions_total{action=\"skip\",reason=\"foreign\"}",
        "netcache_cache_writes_total{source=\"heal\"}",
        "netcache_cache_writes_total{source=\"allocate\"}",
        "netcache_store_commits_total{outcome=\"ok\"}",
        "netcache_store_commit_duration_seconds_bucket{le=\"0.001\"}",
        "netcache_store_group_batches_bucket{le=\"64\"}",
        "netcache_store_write_queue",
    ] {
        assert!(body.contains(series), "missing {series} in\n{body}");
    }
}
