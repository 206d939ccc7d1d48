//! Nova's proxies before 2.36: networks (`os-networks`,
//! `os-tenant-networks`) over the embedded Neutron with their nova-network
//! writes as Nova's 410, and images (`/v2.1/images`) over the fixed catalog;
//! the instance usage audit log of a cloud that runs no audit, and the
//! migrations of one that never migrates. The caller is an admin of `demo`
//! unless a test names other roles.

mod common;

use axum::http::{Method, StatusCode};
use common::{Api, error_message};
use netcache_testenv::json::strings;
use serde_json::{Value, json};

const MEMBER: &str = "member,reader";

async fn as_project(api: &Api, project: &str, roles: &str, uri: &str) -> (StatusCode, Value) {
    let headers = [("x-project-id", project), ("x-roles", roles)];
    let (status, _, body) = api.call_with_headers(Method::GET, uri, &headers, None).await;
    (status, body)
}

fn labels(body: &Value) -> Vec<&str> {
    strings(body, "networks", "label")
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
            api.at(36, Method::GET, uri, None).await.0,
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

#[tokio::test]
async fn images_are_the_catalogs_in_novas_views_until_2_35() {
    let api = Api::start().await;
    let (status, list) = api.get("/v2.1/images").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let first = &list["images"][0];
    assert_eq!(first["id"], common::IMAGE);
    assert_eq!(first.as_object().unwrap().len(), 3, "id, name and links: {first}");
    assert_eq!(first["links"].as_array().unwrap().len(), 3);
    let (_, detail) = api.get("/v2.1/images/detail").await;
    assert_eq!(detail["images"].as_array().unwrap().len(), 2);
    assert_eq!(detail["images"][0]["status"], "ACTIVE");
    let (status, one) = api.get(&format!("/v2.1/images/{}", common::IMAGE)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["image"], detail["images"][0]);
    let (_, named) = api
        .get(&format!("/v2.1/images?name={}", first["name"].as_str().unwrap()))
        .await;
    assert_eq!(named["images"].as_array().unwrap().len(), 1);
    let (_, after) = api.get(&format!("/v2.1/images?marker={}", common::IMAGE)).await;
    assert_eq!(after["images"].as_array().unwrap().len(), 1);

    let (status, body) = api.get("/v2.1/images/nope").await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "Image not found.")
    );
    let (status, _) = api
        .call(Method::DELETE, &format!("/v2.1/images/{}", common::IMAGE), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the catalog is read-only");
    assert_eq!(
        api.at(36, Method::GET, "/v2.1/images", None).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn there_are_no_migrations_and_a_migrate_finds_the_server_first() {
    let api = Api::start().await;
    let (status, list) = api.get("/v2.1/os-migrations").await;
    assert_eq!((status, list), (StatusCode::OK, json!({"migrations": []})));
    let (status, _) = api.at(59, Method::GET, "/v2.1/os-migrations?marker=x", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        as_project(&api, "demo", MEMBER, "/v2.1/os-migrations").await.0,
        StatusCode::FORBIDDEN
    );

    let missing = uuid::Uuid::new_v4();
    let migrate = Some(json!({"migrate": null}));
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2.1/servers/{missing}/action"),
            migrate.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let server = api.boot("vm").await;
    let (status, body) = api
        .call(Method::POST, &format!("/v2.1/servers/{server}/action"), migrate)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}
