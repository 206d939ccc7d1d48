//! Nova's network proxies before 2.36 (`os-networks`, `os-tenant-networks`)
//! over the embedded Neutron, their nova-network writes as Nova's 410, and
//! the instance usage audit log of a cloud that runs no audit. The caller is
//! an admin of `demo` unless a test names other roles.

mod common;

use axum::http::{Method, StatusCode};
use common::{Api, error_message};
use serde_json::{Value, json};

const MEMBER: &str = "member,reader";

async fn as_project(api: &Api, project: &str, roles: &str, uri: &str) -> (StatusCode, Value) {
    let headers = [("x-project-id", project), ("x-roles", roles)];
    let (status, _, body) = api.call_with_headers(Method::GET, uri, &headers, None).await;
    (status, body)
}

fn labels(body: &Value) -> Vec<&str> {
    body["networks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["label"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn networks_are_the_neutron_networks_the_caller_sees_in_novas_views() {
    let api = Api::start().await;
    let (status, mine) = as_project(&api, "demo", MEMBER, "/v2.1/os-networks").await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    assert!(!labels(&mine).is_empty(), "demo's own network: {mine}");
    let network = &mine["networks"][0];
    assert_eq!(
        network.as_object().unwrap().len(),
        11,
        "id, label and nine nulls: {network}"
    );
    assert_eq!(network["cidr"], Value::Null);
    let (_, theirs) = as_project(&api, "other", MEMBER, "/v2.1/os-networks").await;
    assert!(
        !theirs["networks"].as_array().unwrap().contains(network),
        "another project does not see demo's network: {theirs}"
    );
    let (_, all) = api.get("/v2.1/os-networks").await;
    assert_eq!(
        all["networks"][0].as_object().unwrap().len(),
        32,
        "an admin sees 21 more fields"
    );

    let id = network["id"].as_str().unwrap();
    let (status, shown) = as_project(&api, "demo", MEMBER, &format!("/v2.1/os-networks/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&shown["network"], network);
    let (status, body) = as_project(&api, "other", MEMBER, &format!("/v2.1/os-networks/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_message(&body), "Network not found");

    let (status, tenant) = as_project(&api, "demo", MEMBER, "/v2.1/os-tenant-networks").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        tenant["networks"]
            .as_array()
            .unwrap()
            .contains(&json!({"id": id, "cidr": "None", "label": network["label"]}))
    );
    let (_, one) = as_project(&api, "demo", MEMBER, &format!("/v2.1/os-tenant-networks/{id}")).await;
    assert_eq!(one["network"]["id"], id);

    for uri in ["/v2.1/os-networks", "/v2.1/os-tenant-networks"] {
        assert_eq!(
            api.call_at(36, Method::GET, uri, None).await.0,
            StatusCode::NOT_FOUND,
            "{uri} at 2.36"
        );
    }
    for (method, uri) in [
        (Method::POST, "/v2.1/os-networks"),
        (Method::POST, "/v2.1/os-networks/add"),
        (Method::DELETE, &format!("/v2.1/os-networks/{id}")),
        (Method::POST, &format!("/v2.1/os-networks/{id}/action")),
        (Method::POST, "/v2.1/os-tenant-networks"),
        (Method::DELETE, &format!("/v2.1/os-tenant-networks/{id}")),
    ] {
        let (status, _) = api.call(method.clone(), uri, Some(json!({}))).await;
        assert_eq!(status, StatusCode::GONE, "{method} {uri}");
    }
}

#[tokio::test]
async fn the_usage_audit_log_shows_every_compute_host_not_run() {
    let api = Api::start().await;
    let (status, list) = api.get("/v2.1/os-instance_usage_audit_log").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let log = &list["instance_usage_audit_logs"];
    assert_eq!(log.as_object().unwrap().len(), 11, "{log}");
    assert_eq!(log["num_hosts"], 3);
    assert_eq!(log["num_hosts_not_run"], 3);
    assert_eq!(log["hosts_not_run"], json!(["host1", "host2", "host3"]));
    assert_eq!(log["overall_status"], "0 of 3 hosts done. 0 errors.");
    assert_eq!(log["log"], json!({}));

    let (status, one) = api
        .get("/v2.1/os-instance_usage_audit_log/2025-06-15%2010%3A11%3A12")
        .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    let log = &one["instance_usage_audit_log"];
    assert_eq!(log["period_beginning"], "2025-05-01 00:00:00");
    assert_eq!(log["period_ending"], "2025-06-01 00:00:00");
    let (status, body) = api.get("/v2.1/os-instance_usage_audit_log/invalid_time").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_message(&body), "Invalid timestamp for date invalid_time");
    for uri in [
        "/v2.1/os-instance_usage_audit_log",
        "/v2.1/os-instance_usage_audit_log/invalid_time",
    ] {
        assert_eq!(
            as_project(&api, "demo", MEMBER, uri).await.0,
            StatusCode::FORBIDDEN,
            "{uri}"
        );
    }
}
