//! os-hosts (before 2.43): the enabled compute hosts of the zone, a host's
//! capacity and usage by project, `status` as the compute service's, and the
//! 501 of what a fake hypervisor cannot do; Nova's views (checked against
//! `nova_schema::hosts`), its admin-only policy and its 404s. The caller is an
//! admin of `demo` (see `common`).

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::Api;
use netcache_testenv::json::{items, strings};
use nova_schema::assert_satisfies;
use nova_schema::hosts as schema;
use serde_json::{Value, json};

/// A call at 2.42, the last microversion of `os-hosts`, as `roles`.
async fn call(api: &Api, method: Method, uri: &str, roles: &str, body: Option<Value>) -> (StatusCode, Value) {
    api.at_as(42, &[("x-roles", roles)], method, uri, body).await
}

async fn admin(api: &Api, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    call(api, method, uri, "admin,member,reader", body).await
}

fn host_names(listed: &Value) -> Vec<&str> {
    strings(listed, "hosts", "host_name")
}

#[tokio::test]
async fn hosts_are_the_enabled_compute_hosts_of_the_zone_with_their_usage_by_project() {
    let api = Api::start().await;
    let server = api.boot_active_with(json!({"flavorRef": "3"})).await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
    let busy = shown["server"]["OS-EXT-SRV-ATTR:host"].as_str().unwrap().to_owned();

    let (status, listed) = admin(&api, Method::GET, "/v2.1/os-hosts", None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_satisfies("os-hosts", &schema::index(), &listed);
    assert_eq!(host_names(&listed), ["host1", "host2", "host3"]);
    assert_eq!(listed["hosts"][0]["service"], "compute");
    let zone = listed["hosts"][0]["zone"].as_str().unwrap().to_owned();
    for (query, expected) in [(format!("zone={zone}"), 3), ("zone=".into(), 3), ("zone=xxx".into(), 0)] {
        let (_, found) = admin(&api, Method::GET, &format!("/v2.1/os-hosts?{query}"), None).await;
        assert_eq!(host_names(&found).len(), expected, "{query}: {found}");
    }

    let (status, detail) = admin(&api, Method::GET, &format!("/v2.1/os-hosts/{busy}"), None).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_satisfies("os-hosts/{host}", &schema::show(), &detail);
    let resources: Vec<&Value> = items(&detail, "host").iter().map(|r| &r["resource"]).collect();
    let projects: Vec<&str> = resources.iter().map(|r| r["project"].as_str().unwrap()).collect();
    assert_eq!(projects, ["(total)", "(used_now)", "(used_max)", "demo"]);
    assert!(resources.iter().all(|r| r["host"] == busy.as_str()));
    assert_eq!(resources[3]["cpu"], 2, "flavor 3's vcpus");
    assert_eq!(resources[3]["memory_mb"], 4096);
    assert_eq!(resources[1]["memory_mb"], 4096);

    // Disabling the host is disabling its compute service: it leaves the list.
    let (status, updated) = admin(
        &api,
        Method::PUT,
        &format!("/v2.1/os-hosts/{busy}"),
        Some(json!({"status": "Disable"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_satisfies("os-hosts update", &schema::update(), &updated);
    assert_eq!(updated, json!({"host": busy, "status": "disabled"}));
    let (_, services) = api.get(&format!("/v2.1/os-services?host={busy}")).await;
    assert_eq!(services["services"][0]["status"], "disabled");
    let (_, listed) = admin(&api, Method::GET, "/v2.1/os-hosts", None).await;
    assert!(!host_names(&listed).contains(&busy.as_str()), "{listed}");
    let (status, _) = admin(
        &api,
        Method::PUT,
        &format!("/v2.1/os-hosts/{busy}"),
        Some(json!({"status": "enable"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, listed) = admin(&api, Method::GET, "/v2.1/os-hosts", None).await;
    assert_eq!(host_names(&listed).len(), 3);
}

#[tokio::test]
async fn hosts_refuse_what_nova_refuses_and_are_gone_at_2_43() {
    let api = Api::start().await;
    let member = "member,reader";
    for (method, uri, body) in [
        (Method::GET, "/v2.1/os-hosts", None),
        (Method::GET, "/v2.1/os-hosts/host1", None),
        (Method::PUT, "/v2.1/os-hosts/host1", Some(json!({"status": "enable"}))),
        (Method::GET, "/v2.1/os-hosts/host1/reboot", None),
        (Method::GET, "/v2.1/os-hosts/host1/shutdown", None),
        (Method::GET, "/v2.1/os-hosts/host1/startup", None),
    ] {
        let (status, body) = call(&api, method.clone(), uri, member, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {uri}: {body}");
    }
    for (method, uri, body) in [
        (Method::GET, "/v2.1/os-hosts/nonexistent", None),
        (
            Method::PUT,
            "/v2.1/os-hosts/nonexistent",
            Some(json!({"status": "enable"})),
        ),
        (Method::GET, "/v2.1/os-hosts/nonexistent/reboot", None),
        (Method::GET, "/v2.1/os-hosts/nonexistent/shutdown", None),
        (Method::GET, "/v2.1/os-hosts/nonexistent/startup", None),
    ] {
        let (status, body) = admin(&api, method.clone(), uri, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {body}");
        assert_eq!(
            body["itemNotFound"]["message"],
            "Host 'nonexistent' is not mapped to any cell"
        );
    }
    for body in [
        json!({}),
        json!({"status": "invalid"}),
        json!({"maintenance_mode": "invalid"}),
        json!({"status": "enable", "other": 1}),
    ] {
        let (status, answer) = admin(&api, Method::PUT, "/v2.1/os-hosts/host1", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    }
    // What the fake hypervisor has not got: nothing changes.
    for (method, uri, body) in [
        (
            Method::PUT,
            "/v2.1/os-hosts/host1",
            Some(json!({"status": "disable", "maintenance_mode": "enable"})),
        ),
        (Method::GET, "/v2.1/os-hosts/host1/reboot", None),
    ] {
        let (status, answer) = admin(&api, method, uri, body).await;
        assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{uri}: {answer}");
    }
    let (_, services) = api.get("/v2.1/os-services?host=host1").await;
    assert_eq!(services["services"][0]["status"], "enabled");

    let (status, _) = api.at(43, Method::GET, "/v2.1/os-hosts", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_servers_consoles_are_novas_410() {
    let api = Api::start().await;
    for (method, uri) in [
        (Method::GET, "/v2.1/servers/any/consoles"),
        (Method::POST, "/v2.1/servers/any/consoles"),
        (Method::GET, "/v2.1/servers/any/consoles/1"),
        (Method::DELETE, "/v2.1/servers/any/consoles/1"),
    ] {
        let (status, body) = api.call(method.clone(), uri, None).await;
        assert_eq!(status, StatusCode::GONE, "{method} {uri}: {body}");
    }
}
