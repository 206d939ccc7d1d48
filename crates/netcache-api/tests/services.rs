//! os-services and os-availability-zone's detail: Nova's views per
//! microversion (checked against the project's copies of Nova's response
//! schemas, `nova_schema::services`), its request checks and messages, its
//! admin-only policy, and a disabled host that the next boot avoids. The
//! caller is an admin of `demo` (see `common`) unless it says otherwise.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::Api;
use nova_schema::assert_satisfies;
use nova_schema::services as schema;
use serde_json::{Value, json};

async fn services_at(api: &Api, version: u16, query: &str) -> Vec<Value> {
    let (status, body) = api
        .at(version, Method::GET, &format!("/v2.1/os-services{query}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies(
        &format!("GET /os-services at 2.{version}"),
        &schema::index(version),
        &body,
    );
    body["services"].as_array().unwrap().clone()
}

#[track_caller]
fn assert_error(got: (StatusCode, Value), status: StatusCode, message: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_satisfies("an error", &nova_schema::nova_error(), &got.1);
    let fault = got.1.as_object().unwrap().values().next().unwrap();
    assert_eq!(fault["message"], message, "{}", got.1);
}

#[tokio::test]
async fn services_are_one_nova_compute_per_host_with_novas_ids_per_microversion() {
    let api = Api::start().await;
    let old = services_at(&api, 1, "").await;
    assert_eq!(old.len(), 3);
    let hosts: Vec<&str> = old.iter().map(|s| s["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["host1", "host2", "host3"]);
    for service in &old {
        assert_eq!(service["binary"], "nova-compute");
        assert_eq!(service["state"], "up");
        assert_eq!(service["status"], "enabled");
        assert_eq!(service["zone"], "nova");
        assert!(service["id"].is_i64() && service.get("forced_down").is_none());
    }
    let forced = services_at(&api, 11, "").await;
    assert!(forced.iter().all(|s| s["forced_down"] == false));
    let by_uuid = services_at(&api, 53, "").await;
    assert!(by_uuid.iter().all(|s| s["id"].is_string()));

    let host2 = services_at(&api, 53, "?host=host2&binary=nova-compute").await;
    assert_eq!(host2.len(), 1);
    assert_eq!(host2[0]["host"], "host2");
    assert!(services_at(&api, 53, "?binary=nova-scheduler").await.is_empty());
    assert_eq!(
        services_at(&api, 53, "?unknown=1").await.len(),
        3,
        "ignored before 2.75"
    );
    assert_error(
        api.at(75, Method::GET, "/v2.1/os-services?unknown=1", None).await,
        StatusCode::BAD_REQUEST,
        "Additional properties are not allowed ('unknown' was unexpected)",
    );
}

#[tokio::test]
async fn before_2_53_a_service_is_changed_by_host_and_binary() {
    let api = Api::start().await;
    let put = |action: &'static str, body: Value| {
        let api = &api;
        async move {
            api.at(11, Method::PUT, &format!("/v2.1/os-services/{action}"), Some(body))
                .await
        }
    };
    let host1 = json!({"host": "host1", "binary": "nova-compute"});
    let (status, body) = put(
        "disable-log-reason",
        json!({"host": "host1", "binary": "nova-compute", "disabled_reason": "maintenance"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies("disable-log-reason", &schema::legacy_update(), &body);
    assert_eq!(
        body,
        json!({"service": {"host": "host1", "binary": "nova-compute", "status": "disabled", "disabled_reason": "maintenance"}})
    );
    let shown = services_at(&api, 11, "?host=host1").await;
    assert_eq!(shown[0]["status"], "disabled");
    assert_eq!(shown[0]["disabled_reason"], "maintenance");

    let (status, body) = put("enable", host1.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies("enable", &schema::legacy_update(), &body);
    assert_eq!(
        services_at(&api, 11, "?host=host1").await[0]["disabled_reason"],
        Value::Null
    );

    let (status, body) = put(
        "force-down",
        json!({"host": "host1", "binary": "nova-compute", "forced_down": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies("force-down", &schema::legacy_update(), &body);
    assert_eq!(body["service"]["forced_down"], true);
    let shown = services_at(&api, 11, "?host=host1").await;
    assert_eq!(
        (shown[0]["state"].as_str(), shown[0]["forced_down"].as_bool()),
        (Some("down"), Some(true))
    );

    assert_error(
        put("disable-log-reason", host1.clone()).await,
        StatusCode::BAD_REQUEST,
        "Missing disabled reason field",
    );
    assert_error(
        put("force-down", host1.clone()).await,
        StatusCode::BAD_REQUEST,
        "Missing forced_down field",
    );
    assert_error(
        put("reboot", host1.clone()).await,
        StatusCode::NOT_FOUND,
        "Unknown action",
    );
    assert_error(
        api.at(10, Method::PUT, "/v2.1/os-services/force-down", Some(host1.clone()))
            .await,
        StatusCode::NOT_FOUND,
        "Unknown action",
    );
    assert_error(
        put("disable", json!({"host": "host1", "binary": "nova-scheduler"})).await,
        StatusCode::BAD_REQUEST,
        "Updating a nova-scheduler service is not supported. Only nova-compute services can be updated.",
    );
    assert_error(
        put("disable", json!({"host": "host9", "binary": "nova-compute"})).await,
        StatusCode::NOT_FOUND,
        "Host 'host9' is not mapped to any cell",
    );
    assert_error(
        put("disable", json!({"host": "host1"})).await,
        StatusCode::BAD_REQUEST,
        "'binary' is a required property",
    );
}

#[tokio::test]
async fn from_2_53_a_service_is_changed_by_uuid() {
    let api = Api::start().await;
    let id = services_at(&api, 53, "?host=host3").await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let uri = format!("/v2.1/os-services/{id}");
    let (status, body) = api
        .at(
            53,
            Method::PUT,
            &uri,
            Some(json!({"status": "disabled", "disabled_reason": "rack 4", "forced_down": "yes"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies("PUT /os-services/{uuid}", &schema::update_v253(), &body);
    let service = &body["service"];
    assert_eq!(
        (service["id"].as_str(), service["status"].as_str()),
        (Some(id.as_str()), Some("disabled"))
    );
    assert_eq!(
        (service["forced_down"].as_bool(), service["state"].as_str()),
        (Some(true), Some("down"))
    );
    assert_eq!(service["disabled_reason"], "rack 4");

    assert_error(
        api.at(
            53,
            Method::PUT,
            &uri,
            Some(json!({"status": "enabled", "disabled_reason": "x"})),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "Specifying 'disabled_reason' with status 'enabled' is invalid.",
    );
    assert_error(
        api.at(53, Method::PUT, &uri, Some(json!({}))).await,
        StatusCode::BAD_REQUEST,
        "No updates were requested. Fields 'status' or 'forced_down' should be specified.",
    );
    assert_error(
        api.at(
            53,
            Method::PUT,
            "/v2.1/os-services/42",
            Some(json!({"status": "enabled"})),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "Invalid uuid 42",
    );
    let missing = uuid::Uuid::new_v4();
    assert_error(
        api.at(
            53,
            Method::PUT,
            &format!("/v2.1/os-services/{missing}"),
            Some(json!({"status": "enabled"})),
        )
        .await,
        StatusCode::NOT_FOUND,
        &format!("Service {missing} could not be found."),
    );
}

#[tokio::test]
async fn a_compute_service_with_servers_is_not_deleted() {
    let api = Api::start().await;
    let server = api.boot_active("vm").await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
    let busy = shown["server"]["OS-EXT-SRV-ATTR:host"].as_str().unwrap().to_owned();
    let services = services_at(&api, 1, "").await;
    let id_of = |host: &str| {
        services.iter().find(|s| s["host"] == host).unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    assert_error(
        api.at(1, Method::DELETE, &format!("/v2.1/os-services/{}", id_of(&busy)), None)
            .await,
        StatusCode::CONFLICT,
        "Unable to delete compute service that is hosting instances. Migrate or delete the instances first.",
    );
    let idle = ["host1", "host2", "host3"].into_iter().find(|h| *h != busy).unwrap();
    let (status, body) = api
        .at(1, Method::DELETE, &format!("/v2.1/os-services/{}", id_of(idle)), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(services_at(&api, 1, "").await.len(), 2);
    assert_error(
        api.at(1, Method::DELETE, &format!("/v2.1/os-services/{}", id_of(idle)), None)
            .await,
        StatusCode::NOT_FOUND,
        &format!("Service {} not found.", id_of(idle)),
    );
    assert_error(
        api.at(1, Method::DELETE, "/v2.1/os-services/abc", None).await,
        StatusCode::BAD_REQUEST,
        "Invalid input received: id must be an integer",
    );
    assert_error(
        api.at(53, Method::DELETE, "/v2.1/os-services/abc", None).await,
        StatusCode::BAD_REQUEST,
        "Invalid uuid abc",
    );
}

#[tokio::test]
async fn a_disabled_host_gets_no_new_server_and_with_none_left_a_boot_fails_as_novas() {
    let api = Api::start().await;
    for host in ["host1", "host2"] {
        let body = json!({"host": host, "binary": "nova-compute"});
        let (status, _) = api.at(1, Method::PUT, "/v2.1/os-services/disable", Some(body)).await;
        assert_eq!(status, StatusCode::OK);
    }
    for _ in 0..2 {
        let server = api.boot_active("vm").await;
        let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
        assert_eq!(shown["server"]["OS-EXT-SRV-ATTR:host"], "host3");
    }
    let body = json!({"host": "host3", "binary": "nova-compute"});
    api.at(1, Method::PUT, "/v2.1/os-services/disable", Some(body)).await;
    let server = api.boot("vm").await;
    assert_eq!(api.built(&server).await, "ERROR");
    let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
    assert_eq!(
        shown["server"]["fault"]["message"],
        "No valid host was found. There are not enough hosts available."
    );

    // Every host disabled: Nova's zone is unavailable and lists none.
    let (status, detail) = api.get("/v2.1/os-availability-zone/detail").await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("os-availability-zone/detail", &schema::zone_detail(), &detail);
    assert_eq!(
        detail,
        json!({"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": false}, "hosts": null}]})
    );
}

#[tokio::test]
async fn the_zone_detail_lists_enabled_hosts_with_their_service() {
    let api = Api::start().await;
    let body = json!({"host": "host2", "binary": "nova-compute"});
    api.at(1, Method::PUT, "/v2.1/os-services/disable", Some(body)).await;
    let (status, detail) = api.get("/v2.1/os-availability-zone/detail").await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("os-availability-zone/detail", &schema::zone_detail(), &detail);
    let hosts = detail["availabilityZoneInfo"][0]["hosts"].as_object().unwrap();
    assert_eq!(hosts.keys().collect::<Vec<_>>(), ["host1", "host3"]);
    let service = &hosts["host1"]["nova-compute"];
    assert_eq!(
        (service["available"].as_bool(), service["active"].as_bool()),
        (Some(true), Some(true))
    );
    assert!(service["updated_at"].is_string());
}

#[tokio::test]
async fn services_and_the_zone_detail_are_admins_only() {
    let api = Api::start().await;
    let member = [("x-roles", "member,reader")];
    for (method, uri, body) in [
        (Method::GET, "/v2.1/os-services", None),
        (
            Method::PUT,
            "/v2.1/os-services/enable",
            Some(json!({"host": "host1", "binary": "nova-compute"})),
        ),
        (Method::DELETE, "/v2.1/os-services/1", None),
        (Method::GET, "/v2.1/os-availability-zone/detail", None),
    ] {
        let (status, _, body) = api.call_with_headers(method, uri, &member, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
    }
}
