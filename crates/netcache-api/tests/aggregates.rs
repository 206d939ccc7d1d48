//! os-aggregates: an admin's aggregates in Nova's views (checked against
//! `nova_schema::aggregates`, `uuid` from 2.41), Nova's refusals in its order
//! and words, its admin-only policy, and the zones aggregates give hosts: in
//! os-availability-zone and os-services, where a boot asking for a zone is
//! placed, the zone a server shows, and the changes Nova refuses because a
//! server would change zone. The caller is an admin of `demo` (see `common`).

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, IMAGE, error_message};
use netcache_testenv::json::items;
use nova_schema::aggregates as schema;
use nova_schema::assert_satisfies;
use serde_json::{Value, json};

async fn admin(api: &Api, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    api.at_as(41, &[("x-roles", "admin,member,reader")], method, uri, body)
        .await
}

async fn create(api: &Api, body: Value) -> (StatusCode, Value) {
    admin(
        api,
        Method::POST,
        "/v2.1/os-aggregates",
        Some(json!({"aggregate": body})),
    )
    .await
}

/// Creates an aggregate; answers its id.
async fn made(api: &Api, name: &str, zone: Option<&str>) -> i64 {
    let (status, body) = create(api, json!({"name": name, "availability_zone": zone})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["aggregate"]["id"].as_i64().unwrap()
}

async fn act(api: &Api, id: i64, body: Value) -> (StatusCode, Value) {
    admin(
        api,
        Method::POST,
        &format!("/v2.1/os-aggregates/{id}/action"),
        Some(body),
    )
    .await
}

#[tokio::test]
async fn an_admin_makes_shows_changes_and_deletes_aggregates_in_novas_views() {
    let api = Api::start().await;
    let (status, created) = create(&api, json!({"name": "rack1"})).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_satisfies("create", &schema::create(41), &created);
    let id = created["aggregate"]["id"].as_i64().unwrap();
    assert_eq!(created["aggregate"]["availability_zone"], Value::Null);
    assert_eq!(created["aggregate"]["deleted"], false);

    let (status, old) = api
        .at_as(
            40,
            &[("x-roles", "admin")],
            Method::GET,
            &format!("/v2.1/os-aggregates/{id}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{old}");
    assert_satisfies("show 2.40", &schema::show(40), &old);
    assert!(old["aggregate"].get("uuid").is_none());
    assert_eq!(old["aggregate"]["hosts"], json!([]));
    assert_eq!(old["aggregate"]["metadata"], json!({}));

    let uri = format!("/v2.1/os-aggregates/{id}");
    let (status, updated) = admin(
        &api,
        Method::PUT,
        &uri,
        Some(json!({"aggregate": {"name": "  rack2 ", "availability_zone": "az1"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_satisfies("update", &schema::show(41), &updated);
    assert_eq!(
        updated["aggregate"]["name"], "rack2",
        "stripped, as Nova's normalize_name"
    );
    assert_eq!(updated["aggregate"]["availability_zone"], "az1");
    assert_eq!(updated["aggregate"]["metadata"], json!({"availability_zone": "az1"}));
    assert!(updated["aggregate"]["updated_at"].is_string());

    let (status, set) = act(
        &api,
        id,
        json!({"set_metadata": {"metadata": {"ssd": "true", "gone": null}}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    let (_, set) = act(
        &api,
        id,
        json!({"set_metadata": {"metadata": {"ssd": null, "rack": "r2"}}}),
    )
    .await;
    assert_eq!(
        set["aggregate"]["metadata"],
        json!({"availability_zone": "az1", "rack": "r2"})
    );

    for host in ["host2", "host1"] {
        let (status, added) = act(&api, id, json!({"add_host": {"host": host}})).await;
        assert_eq!(status, StatusCode::OK, "{added}");
        assert_satisfies("add_host", &schema::show(41), &added);
    }
    let (status, removed) = act(&api, id, json!({"remove_host": {"host": "host2"}})).await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["aggregate"]["hosts"], json!(["host1"]));

    let other = made(&api, "other", None).await;
    let (status, listed) = admin(&api, Method::GET, "/v2.1/os-aggregates", None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_satisfies("index", &schema::index(41), &listed);
    let ids: Vec<i64> = items(&listed, "aggregates")
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [id, other]);

    act(&api, id, json!({"remove_host": {"host": "host1"}})).await;
    let (status, body) = admin(&api, Method::DELETE, &uri, None).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, Value::Null),
        "200 without a body, as Nova's"
    );
    let (status, _) = admin(&api, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn novas_refusals_come_in_its_order_and_words() {
    let api = Api::start().await;
    let id = made(&api, "agg", None).await;
    let cases: Vec<(StatusCode, Value)> = vec![
        create(&api, json!({"name": ""})).await,
        create(&api, json!({"name": "a".repeat(256)})).await,
        create(&api, json!({"name": "x", "availability_zone": "a:b"})).await,
        create(&api, json!({"name": "x", "extra": 1})).await,
        admin(
            &api,
            Method::PUT,
            &format!("/v2.1/os-aggregates/{id}"),
            Some(json!({"aggregate": {}})),
        )
        .await,
        admin(&api, Method::GET, "/v2.1/os-aggregates/abc", None).await,
        act(&api, id, json!({"add_host": {"host": "bad host"}})).await,
        act(&api, id, json!({"set_metadata": {"metadata": {"k": 1}}})).await,
        act(&api, id, json!({"explode": {}})).await,
    ];
    for (status, body) in &cases {
        assert_eq!(*status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["badRequest"]["message"].is_string(), "{body}");
    }
    assert_eq!(
        error_message(&cases[5].1),
        "Invalid input received: id must be an integer"
    );

    let (status, body) = create(&api, json!({"name": "agg"})).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::CONFLICT, "Aggregate agg already exists.")
    );
    let (status, body) = admin(&api, Method::GET, "/v2.1/os-aggregates/-1", None).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "Aggregate -1 could not be found.")
    );
    let (status, _) = admin(&api, Method::DELETE, "/v2.1/os-aggregates/-1", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = admin(&api, Method::GET, "/v2.1/os-aggregates/99999999999999999999999", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = act(&api, id, json!({"add_host": {"host": "nonexist_host"}})).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "Compute host nonexist_host could not be found.")
    );
    let (status, _) = act(&api, id, json!({"add_host": {"host": "host1"}})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = act(&api, id, json!({"add_host": {"host": "host1"}})).await;
    assert_eq!(
        (status, error_message(&body)),
        (
            StatusCode::CONFLICT,
            format!("Aggregate {id} already has host host1.").as_str()
        )
    );
    for host in ["nonexist_host", "host2"] {
        let (status, body) = act(&api, id, json!({"remove_host": {"host": host}})).await;
        let expected = format!("Cannot remove host {host} in aggregate {id}");
        assert_eq!(
            (status, error_message(&body)),
            (StatusCode::NOT_FOUND, expected.as_str())
        );
    }
    let (status, body) = admin(&api, Method::DELETE, &format!("/v2.1/os-aggregates/{id}"), None).await;
    let expected = format!("Cannot remove host from aggregate {id}. Reason: Host aggregate is not empty.");
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::BAD_REQUEST, expected.as_str())
    );
    let other = made(&api, "other", None).await;
    let (status, body) = admin(
        &api,
        Method::PUT,
        &format!("/v2.1/os-aggregates/{other}"),
        Some(json!({"aggregate": {"name": "agg"}})),
    )
    .await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::CONFLICT, "Aggregate agg already exists.")
    );
}

#[tokio::test]
async fn only_an_admin_may_touch_aggregates() {
    let api = Api::start().await;
    let id = made(&api, "agg", None).await;
    // An action of the aggregate and the rule it is refused by.
    let action = |body: Value, rule| {
        let uri = format!("/v2.1/os-aggregates/{id}/action");
        (Method::POST, uri, Some(body), rule)
    };
    let calls: Vec<(Method, String, Option<Value>, &str)> = vec![
        (Method::GET, "/v2.1/os-aggregates".into(), None, "index"),
        (
            Method::POST,
            "/v2.1/os-aggregates".into(),
            Some(json!({"aggregate": {"name": "n"}})),
            "create",
        ),
        (Method::GET, format!("/v2.1/os-aggregates/{id}"), None, "show"),
        (
            Method::PUT,
            format!("/v2.1/os-aggregates/{id}"),
            Some(json!({"aggregate": {"name": "n"}})),
            "update",
        ),
        (Method::DELETE, format!("/v2.1/os-aggregates/{id}"), None, "delete"),
        action(json!({"add_host": {"host": "host1"}}), "add_host"),
        action(json!({"remove_host": {"host": "host1"}}), "remove_host"),
        action(json!({"set_metadata": {"metadata": {}}}), "set_metadata"),
    ];
    for (method, uri, body, rule) in calls {
        let (status, answer) = api.at_as(41, &[("x-roles", "member,reader")], method, &uri, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{rule}: {answer}");
        assert_eq!(
            error_message(&answer),
            format!("Policy doesn't allow os_compute_api:os-aggregates:{rule} to be performed.")
        );
    }
    let (_, shown) = admin(&api, Method::GET, &format!("/v2.1/os-aggregates/{id}"), None).await;
    assert_eq!(shown["aggregate"]["name"], "agg", "nothing changed");
}

#[tokio::test]
async fn an_image_cache_request_is_accepted_for_known_images_only() {
    let api = Api::start().await;
    let id = made(&api, "agg", None).await;
    let uri = format!("/v2.1/os-aggregates/{id}/images");
    let at_81 = |body: Value| {
        let api = &api;
        let uri = uri.clone();
        async move {
            api.at_as(81, &[("x-roles", "admin")], Method::POST, &uri, Some(body))
                .await
        }
    };
    let (status, body) = at_81(json!({"cache": [{"id": IMAGE}]})).await;
    assert_eq!((status, body), (StatusCode::ACCEPTED, Value::Null));
    let unknown = "6f1b7d7a-4f0e-4a4e-9a55-1d2c3b4a5f60";
    let (status, body) = at_81(json!({"cache": [{"id": unknown}]})).await;
    assert_eq!(
        (status, error_message(&body)),
        (
            StatusCode::BAD_REQUEST,
            format!("Image {unknown} could not be found.").as_str()
        )
    );
    let (status, body) = at_81(json!({"cache": [{"id": IMAGE}, {"id": IMAGE}]})).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::BAD_REQUEST, "Duplicate images in request")
    );
    let (status, _) = at_81(json!({"cache": []})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // An unknown aggregate, a member, and a version before the API.
    for (minor, roles, uri, expected) in [
        (81, "admin", "/v2.1/os-aggregates/-1/images", StatusCode::NOT_FOUND),
        (81, "member", uri.as_str(), StatusCode::FORBIDDEN),
        (80, "admin", uri.as_str(), StatusCode::NOT_FOUND),
    ] {
        let cache = Some(json!({"cache": [{"id": IMAGE}]}));
        let (status, _) = api.at_as(minor, &[("x-roles", roles)], Method::POST, uri, cache).await;
        assert_eq!(status, expected, "2.{minor} as {roles}: {uri}");
    }
}

fn zone_names(zones: &Value) -> Vec<(&str, bool)> {
    items(zones, "availabilityZoneInfo")
        .iter()
        .map(|z| {
            (
                z["zoneName"].as_str().unwrap(),
                z["zoneState"]["available"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_aggregates_zone_holds_its_hosts_and_the_servers_placed_there() {
    let api = Api::start().await;
    let az1 = made(&api, "zone-1", Some("az1")).await;
    act(&api, az1, json!({"add_host": {"host": "host2"}})).await;

    let (_, zones) = api.get("/v2.1/os-availability-zone").await;
    assert_eq!(zone_names(&zones), [("az1", true), ("nova", true)]);
    let (_, detail) = admin(&api, Method::GET, "/v2.1/os-availability-zone/detail", None).await;
    let az1_hosts: Vec<&String> = detail["availabilityZoneInfo"][0]["hosts"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(az1_hosts, ["host2"]);
    let (_, services) = admin(&api, Method::GET, "/v2.1/os-services?host=host2", None).await;
    assert_eq!(services["services"][0]["zone"], "az1");
    let (_, hosts) = api
        .at_as(
            42,
            &[("x-roles", "admin")],
            Method::GET,
            "/v2.1/os-hosts?zone=az1",
            None,
        )
        .await;
    assert_eq!(hosts["hosts"].as_array().unwrap().len(), 1, "{hosts}");

    // A boot asking for the zone lands on its one host, and shows the zone.
    for _ in 0..3 {
        let server = api.boot_active_with(json!({"availability_zone": "az1"})).await;
        let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
        assert_eq!(shown["server"]["OS-EXT-SRV-ATTR:host"], "host2");
        assert_eq!(shown["server"]["OS-EXT-AZ:availability_zone"], "az1");
    }
    // Else a server is in its host's zone.
    for _ in 0..3 {
        let server = api.boot_active("plain").await;
        let (_, shown) = api.get(&format!("/v2.1/servers/{server}")).await;
        let zone = if shown["server"]["OS-EXT-SRV-ATTR:host"] == "host2" {
            "az1"
        } else {
            "nova"
        };
        assert_eq!(shown["server"]["OS-EXT-AZ:availability_zone"], zone);
    }
    let (status, body) = api
        .post_boot(json!({"server": {"name": "x", "flavorRef": "1", "imageRef": IMAGE, "networks": "none", "availability_zone": "az9"}}))
        .await;
    assert_eq!(
        (status, error_message(&body)),
        (
            StatusCode::BAD_REQUEST,
            "The requested availability zone is not available"
        )
    );

    // Nova keeps every server in its zone and every host in one zone.
    let az2 = made(&api, "zone-2", Some("az2")).await;
    let (status, body) = act(&api, az2, json!({"add_host": {"host": "host2"}})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        error_message(&body).contains("One or more hosts already in availability zone(s) ['az1']"),
        "{body}"
    );
    let (status, body) = act(&api, az1, json!({"remove_host": {"host": "host2"}})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        error_message(&body).contains("would change from 'az1' to 'None'"),
        "{body}"
    );
    let (status, body) = admin(
        &api,
        Method::PUT,
        &format!("/v2.1/os-aggregates/{az1}"),
        Some(json!({"aggregate": {"availability_zone": "az3"}})),
    )
    .await;
    assert_eq!(
        (status, error_message(&body)),
        (
            StatusCode::BAD_REQUEST,
            format!("Cannot update aggregate {az1}. Reason: One or more hosts contain instances in this zone.")
                .as_str()
        )
    );
    let (status, body) = act(
        &api,
        az1,
        json!({"set_metadata": {"metadata": {"availability_zone": null}}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        error_message(&body).ends_with("does not support empty named availability zone."),
        "{body}"
    );
    let (_, zones) = api.get("/v2.1/os-availability-zone").await;
    assert_eq!(zone_names(&zones), [("az1", true), ("nova", true)], "az2 has no host");
}
