//! os-quota-sets and limits past microversion 2.1, each change at its
//! boundary (N-1, N): 2.36 leaves the nova-network resources out (and refuses
//! them in an update), 2.39 `maxImageMeta`, 2.57 the personality ones, 2.75
//! refuses unknown query parameters; views checked against copies of Nova's
//! response schemas of each version.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, error_message as message};
use nova_schema::assert_satisfies;
use nova_schema::quotas as schema;
use serde_json::json;

#[tokio::test]
async fn quota_set_views_leave_out_what_each_version_drops() {
    let api = Api::start().await;
    for minor in [35, 36, 56, 57, 104] {
        let (status, shown) = api.at(minor, Method::GET, "/v2.1/os-quota-sets/demo", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_satisfies("GET /os-quota-sets/{id}", &schema::get_quota_set_at(minor), &shown);
        let (_, defaults) = api
            .at(minor, Method::GET, "/v2.1/os-quota-sets/demo/defaults", None)
            .await;
        assert_satisfies(
            "GET /os-quota-sets/{id}/defaults",
            &schema::get_quota_set_at(minor),
            &defaults,
        );
        let (_, detail) = api
            .at(minor, Method::GET, "/v2.1/os-quota-sets/demo/detail", None)
            .await;
        assert_satisfies(
            "GET /os-quota-sets/{id}/detail",
            &schema::get_quota_set_details_at(minor),
            &detail,
        );
        let (status, updated) = api
            .at(
                minor,
                Method::PUT,
                "/v2.1/os-quota-sets/demo",
                Some(json!({"quota_set": {"instances": 7}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{updated}");
        assert_satisfies("PUT /os-quota-sets/{id}", &schema::update_quota_set_at(minor), &updated);
        let quota_set = shown["quota_set"].as_object().unwrap();
        assert_eq!(quota_set.contains_key("floating_ips"), minor < 36, "2.{minor}: {shown}");
        assert_eq!(
            quota_set.contains_key("injected_files"),
            minor < 57,
            "2.{minor}: {shown}"
        );
    }
}

#[tokio::test]
async fn updates_refuse_what_each_version_drops() {
    let api = Api::start().await;
    let put = |minor: u16, key: &'static str| {
        api.at(
            minor,
            Method::PUT,
            "/v2.1/os-quota-sets/demo",
            Some(json!({"quota_set": {key: 5}})),
        )
    };
    let (status, _) = put(35, "security_groups").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = put(36, "security_groups").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message(&body),
        "Invalid input for field/attribute quota_set. Value: {'security_groups': 5}. Additional properties are not allowed ('security_groups' was unexpected)"
    );
    let (status, _) = put(56, "injected_files").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = put(57, "injected_files").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn limits_leave_out_what_each_version_drops() {
    let api = Api::start().await;
    for minor in [35, 36, 38, 39, 56, 57, 104] {
        let (status, limits) = api.at(minor, Method::GET, "/v2.1/limits", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_satisfies("GET /limits", &schema::get_limit_at(minor), &limits);
        let absolute = limits["limits"]["absolute"].as_object().unwrap();
        assert_eq!(absolute.contains_key("maxTotalFloatingIps"), minor < 36, "2.{minor}");
        assert_eq!(
            absolute.contains_key("totalSecurityGroupsUsed"),
            minor < 36,
            "2.{minor}"
        );
        assert_eq!(absolute.contains_key("maxImageMeta"), minor < 39, "2.{minor}");
        assert_eq!(absolute.contains_key("maxPersonality"), minor < 57, "2.{minor}");
        assert!(absolute.contains_key("maxServerMeta"));
    }
}

#[tokio::test]
async fn from_2_75_unknown_query_parameters_are_refused() {
    let api = Api::start().await;
    for uri in [
        "/v2.1/limits?foo=1",
        "/v2.1/os-quota-sets/demo?foo=1",
        "/v2.1/os-quota-sets/demo/detail?foo=1",
    ] {
        api.assert_unknown_query_refused_from(75, &[], uri).await;
    }
    let (status, _) = api.at(75, Method::GET, "/v2.1/limits?tenant_id=other", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api
        .at(75, Method::GET, "/v2.1/os-quota-sets/demo?user_id=u", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api.at(75, Method::DELETE, "/v2.1/os-quota-sets/demo?foo=1", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = api
        .at(
            75,
            Method::PUT,
            "/v2.1/os-quota-sets/demo?foo=1",
            Some(json!({"quota_set": {}})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Nova 34 never refuses the defaults' parameters.
    let (status, _) = api
        .at(104, Method::GET, "/v2.1/os-quota-sets/demo/defaults?foo=1", None)
        .await;
    assert_eq!(status, StatusCode::OK);
}
