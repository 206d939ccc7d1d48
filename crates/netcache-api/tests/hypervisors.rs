//! os-hypervisors: one fake hypervisor per host, its state and status its
//! service's, its figures from its servers' flavors before 2.88; Nova's views
//! per microversion (checked against `nova_schema::hypervisors`) and its
//! admin-only policy. The caller is an admin of `demo` (see `common`).

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::Api;
use netcache_testenv::json::{items, strings};
use nova_schema::assert_satisfies;
use nova_schema::hypervisors as schema;
use serde_json::{Value, json};

async fn checked(api: &Api, version: u16, uri: &str, schema: &Value) -> Value {
    let (status, body) = api.at(version, Method::GET, uri, None).await;
    assert_eq!(status, StatusCode::OK, "{uri} at 2.{version}: {body}");
    assert_satisfies(&format!("{uri} at 2.{version}"), schema, &body);
    body
}

#[tokio::test]
async fn hypervisors_are_the_hosts_with_novas_views_per_microversion() {
    let api = Api::start().await;
    let server = api.boot_active_with(json!({"flavorRef": "3"})).await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
    let busy = shown["server"]["OS-EXT-SRV-ATTR:host"].as_str().unwrap().to_owned();

    let listed = checked(&api, 1, "/v2.1/os-hypervisors", &schema::index(1)).await;
    let names = strings(&listed, "hypervisors", "hypervisor_hostname");
    assert_eq!(names, ["host1", "host2", "host3"]);

    for version in [1, 28, 53, 88] {
        checked(&api, version, "/v2.1/os-hypervisors/detail", &schema::detail(version)).await;
    }
    let detail = checked(&api, 1, "/v2.1/os-hypervisors/detail", &schema::detail(1)).await;
    let on_busy = items(&detail, "hypervisors")
        .iter()
        .find(|h| h["hypervisor_hostname"] == busy.as_str())
        .unwrap()
        .clone();
    assert_eq!(on_busy["running_vms"], 1);
    assert_eq!(on_busy["vcpus_used"], 2, "flavor 3's vcpus");
    assert_eq!(on_busy["memory_mb_used"], 4096);
    assert_eq!(on_busy["hypervisor_type"], "fake");

    let id = on_busy["id"].as_i64().unwrap();
    let one = checked(&api, 1, &format!("/v2.1/os-hypervisors/{id}"), &schema::show(1)).await;
    assert_eq!(one["hypervisor"]["hypervisor_hostname"], busy.as_str());

    let with_servers = checked(
        &api,
        53,
        &format!("/v2.1/os-hypervisors?with_servers=true&hypervisor_hostname_pattern={busy}"),
        &schema::index(53),
    )
    .await;
    let hypervisor = &with_servers["hypervisors"][0];
    assert_eq!(hypervisor["servers"], json!([{"uuid": server, "name": "vm"}]));
    let uuid = hypervisor["id"].as_str().unwrap().to_owned();
    let one = checked(&api, 88, &format!("/v2.1/os-hypervisors/{uuid}"), &schema::show(88)).await;
    assert!(one["hypervisor"].get("vcpus").is_none(), "2.88 drops the figures");

    let stats = checked(&api, 1, "/v2.1/os-hypervisors/statistics", &schema::statistics()).await;
    assert_eq!(stats["hypervisor_statistics"]["count"], 3);
    assert_eq!(stats["hypervisor_statistics"]["running_vms"], 1);
    assert_eq!(
        api.at(88, Method::GET, "/v2.1/os-hypervisors/statistics", None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.at(1, Method::GET, "/v2.1/os-hypervisors/999", None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.at(53, Method::GET, "/v2.1/os-hypervisors/999", None).await.0,
        StatusCode::BAD_REQUEST
    );
    let (status, body) = api
        .at(
            53,
            Method::GET,
            "/v2.1/os-hypervisors?hypervisor_hostname_pattern=nothing",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body["itemNotFound"]["message"],
        "No hypervisor matching 'nothing' could be found."
    );
}

#[tokio::test]
async fn before_2_53_search_and_servers_have_routes_and_uptime_is_the_fake_drivers_501() {
    let api = Api::start().await;
    let server = api.boot_active_with(json!({})).await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
    let busy = shown["server"]["OS-EXT-SRV-ATTR:host"].as_str().unwrap().to_owned();

    let found = checked(&api, 52, "/v2.1/os-hypervisors/host/search", &schema::index(1)).await;
    assert_eq!(
        found["hypervisors"].as_array().unwrap().len(),
        3,
        "a substring of each host"
    );
    let found = checked(
        &api,
        52,
        &format!("/v2.1/os-hypervisors/{busy}/servers"),
        &schema::servers_by_pattern(),
    )
    .await;
    assert_eq!(found["hypervisors"][0]["hypervisor_hostname"], busy.as_str());
    assert_eq!(
        found["hypervisors"][0]["servers"],
        json!([{"uuid": server, "name": "vm"}])
    );
    let idle = if busy == "host1" { "host2" } else { "host1" };
    let found = checked(
        &api,
        1,
        &format!("/v2.1/os-hypervisors/{idle}/servers"),
        &schema::servers_by_pattern(),
    )
    .await;
    assert!(
        found["hypervisors"][0].get("servers").is_none(),
        "Nova leaves an empty list out"
    );
    for uri in [
        "/v2.1/os-hypervisors/nothing/search",
        "/v2.1/os-hypervisors/nothing/servers",
    ] {
        let (status, body) = api.at(52, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(
            body["itemNotFound"]["message"],
            "No hypervisor matching 'nothing' could be found."
        );
        let (status, body) = api.at(53, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri} is gone at 2.53");
        assert_eq!(body["itemNotFound"]["message"], "The resource could not be found.");
    }

    let listed = checked(&api, 1, "/v2.1/os-hypervisors", &schema::index(1)).await;
    let id = listed["hypervisors"][0]["id"].as_i64().unwrap();
    let (status, body) = api
        .at(1, Method::GET, &format!("/v2.1/os-hypervisors/{id}/uptime"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    assert_eq!(body["notImplemented"]["message"], "Feature not supported");
    assert_eq!(
        api.at(1, Method::GET, "/v2.1/os-hypervisors/999/uptime", None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.at(88, Method::GET, &format!("/v2.1/os-hypervisors/{id}/uptime"), None)
            .await
            .0,
        StatusCode::NOT_FOUND,
        "uptime is in the detail from 2.88"
    );
}

#[tokio::test]
async fn a_disabled_host_shows_a_disabled_hypervisor() {
    let api = Api::start().await;
    let body = json!({"host": "host2", "binary": "nova-compute"});
    let (status, _) = api.call(Method::PUT, "/v2.1/os-services/disable", Some(body)).await;
    assert_eq!(status, StatusCode::OK);
    let listed = checked(&api, 1, "/v2.1/os-hypervisors", &schema::index(1)).await;
    let status = strings(&listed, "hypervisors", "status");
    assert_eq!(status, ["enabled", "disabled", "enabled"]);
}

#[tokio::test]
async fn hypervisors_are_admins_only() {
    let api = Api::start().await;
    let member = [("x-roles", "member,reader")];
    for uri in [
        "/v2.1/os-hypervisors",
        "/v2.1/os-hypervisors/detail",
        "/v2.1/os-hypervisors/statistics",
        "/v2.1/os-hypervisors/1",
        "/v2.1/os-hypervisors/1/uptime",
        "/v2.1/os-hypervisors/host/search",
        "/v2.1/os-hypervisors/host/servers",
    ] {
        let (status, _, body) = api.call_with_headers(Method::GET, uri, &member, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
    }
}
