//! os-server-groups per microversion: create, list, show and delete checked
//! against copies of Nova's response schemas (`nova_schema::server_groups`),
//! Nova's request checks and messages, the quotas (`server_groups` in
//! os-quota-sets and /limits), a boot's `group` hint, and 2.71's
//! `server_groups` of a server. The caller is an admin of `demo` (`common`).

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::Api;
use netcache_testenv::json::strings;
use netcache_testenv::poll::until;
use nova_schema::assert_satisfies;
use nova_schema::server_groups as schema;
use serde_json::{Value, json};

async fn create(api: &Api, minor: u16, group: Value) -> (StatusCode, Value) {
    api.at(
        minor,
        Method::POST,
        "/v2.1/os-server-groups",
        Some(json!({"server_group": group})),
    )
    .await
}

/// A boot request body (no networks) with these scheduler hints.
fn boot(hint: Value) -> Value {
    json!({
        "server": {"name": "vm", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"},
        "os:scheduler_hints": hint,
    })
}

#[track_caller]
fn assert_error(got: (StatusCode, Value), status: StatusCode, kind: &str, message: &str) {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "{body}");
    assert_eq!(body[kind]["message"], message, "{body}");
}

#[track_caller]
fn assert_bad_request(got: (StatusCode, Value), message: &str) {
    assert_error(got, StatusCode::BAD_REQUEST, "badRequest", message);
}

#[tokio::test]
async fn groups_are_created_listed_shown_and_deleted_in_each_versions_view() {
    let api = Api::start().await;
    for minor in [1, 13, 15, 64] {
        let group = if minor >= 64 {
            json!({"name": "web", "policy": "anti-affinity", "rules": {"max_server_per_host": 2}})
        } else if minor >= 15 {
            json!({"name": "web", "policies": ["soft-affinity"]})
        } else {
            json!({"name": "web", "policies": ["affinity"]})
        };
        let (status, created) = create(&api, minor, group).await;
        assert_eq!(status, StatusCode::OK, "2.{minor}: {created}");
        assert_satisfies("POST /os-server-groups", &schema::show(minor), &created);
        let id = created["server_group"]["id"].as_str().unwrap().to_owned();
        let uri = format!("/v2.1/os-server-groups/{id}");
        let (status, shown) = api.at(minor, Method::GET, &uri, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_satisfies("GET /os-server-groups/{id}", &schema::show(minor), &shown);
        assert_eq!(shown, created);
        let (_, listed) = api.at(minor, Method::GET, "/v2.1/os-server-groups", None).await;
        assert_satisfies("GET /os-server-groups", &schema::index(minor), &listed);
        assert_eq!(listed["server_groups"].as_array().unwrap().len(), 1);
        if minor >= 64 {
            assert_eq!(shown["server_group"]["rules"], json!({"max_server_per_host": 2}));
        }
        if minor >= 13 {
            assert_eq!(shown["server_group"]["project_id"], "demo");
        }
        let (status, _) = api.at(minor, Method::DELETE, &uri, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_error(
            api.at(minor, Method::GET, &uri, None).await,
            StatusCode::NOT_FOUND,
            "itemNotFound",
            &format!("Instance group {id} could not be found."),
        );
    }
}

#[tokio::test]
async fn bad_requests_get_novas_words() {
    let api = Api::start().await;
    assert_bad_request(
        create(&api, 1, json!({"name": "g", "policies": ["soft-affinity"]})).await,
        "Invalid input for field/attribute 0. Value: soft-affinity. 'soft-affinity' is not one of ['anti-affinity', 'affinity']",
    );
    assert_bad_request(
        create(&api, 1, json!({"name": "g", "policy": "affinity"})).await,
        "Invalid input for field/attribute server_group. Value: {'name': 'g', 'policy': 'affinity'}. 'policies' is a required property",
    );
    assert_bad_request(
        create(
            &api,
            64,
            json!({"name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}}),
        )
        .await,
        "Only anti-affinity policy supports rules.",
    );
    assert_bad_request(
        create(
            &api,
            64,
            json!({"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}}),
        )
        .await,
        "Invalid input for field/attribute max_server_per_host. Value: 0. 0 is less than the minimum of 1",
    );
    assert_bad_request(
        api.at(75, Method::GET, "/v2.1/os-server-groups?foo=1", None).await,
        "Additional properties are not allowed ('foo' was unexpected)",
    );
    let (status, _) = api.at(74, Method::GET, "/v2.1/os-server-groups?foo=1", None).await;
    assert_eq!(status, StatusCode::OK, "before 2.75 other parameters are allowed");
    assert_error(
        api.at(1, Method::DELETE, "/v2.1/os-server-groups/nope", None).await,
        StatusCode::NOT_FOUND,
        "itemNotFound",
        "Instance group nope could not be found.",
    );
}

#[tokio::test]
async fn lists_page_with_limit_and_offset_and_an_admin_sees_all_projects() {
    let api = Api::start().await;
    for name in ["a", "b", "c"] {
        create(&api, 1, json!({"name": name, "policies": ["affinity"]})).await;
    }
    let (_, page) = api.get("/v2.1/os-server-groups?limit=1&offset=1").await;
    assert_eq!(strings(&page, "server_groups", "name"), ["b"]);
    let (_, all) = api.get("/v2.1/os-server-groups?all_projects=True").await;
    assert_eq!(strings(&all, "server_groups", "name"), ["a", "b", "c"]);
    assert_bad_request(
        api.get("/v2.1/os-server-groups?limit=x").await,
        "Invalid input for query parameters limit. Value: x. 'x' does not match '^[0-9]*$'",
    );
}

#[tokio::test]
async fn quotas_count_groups_and_refuse_past_the_limit() {
    let api = Api::start().await;
    let (status, body) = api
        .call(
            Method::PUT,
            "/v2.1/os-quota-sets/demo",
            Some(json!({"quota_set": {"server_groups": 1, "server_group_members": 1}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, group) = create(&api, 1, json!({"name": "a", "policies": ["anti-affinity"]})).await;
    assert_error(
        create(&api, 1, json!({"name": "b", "policies": ["affinity"]})).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        "Quota exceeded, too many server groups.",
    );
    let (_, detail) = api.get("/v2.1/os-quota-sets/demo/detail").await;
    assert_eq!(detail["quota_set"]["server_groups"]["in_use"], 1, "{detail}");
    let (_, limits) = api.get("/v2.1/limits").await;
    assert_eq!(limits["limits"]["absolute"]["totalServerGroupsUsed"], 1);

    let id = group["server_group"]["id"].as_str().unwrap();
    let hint = json!({"group": id});
    let (status, body) = api.call(Method::POST, "/v2.1/servers", Some(boot(hint.clone()))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_error(
        api.call(Method::POST, "/v2.1/servers", Some(boot(hint))).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        "Quota exceeded, too many servers in group",
    );
}

#[tokio::test]
async fn a_boot_joins_its_group_and_shows_it_from_2_71_on_show_only() {
    let api = Api::start().await;
    let unknown = "8f6a2a5e-6a65-4f8c-9f2e-1b1c0a7f6d11";
    assert_bad_request(
        api.call(Method::POST, "/v2.1/servers", Some(boot(json!({"group": unknown}))))
            .await,
        &format!("Instance group {unknown} could not be found."),
    );
    assert_bad_request(
        api.call(Method::POST, "/v2.1/servers", Some(boot(json!({"group": "x"}))))
            .await,
        "Invalid input for field/attribute group. Value: x. 'x' is not valid under any of the given schemas",
    );
    let (_, group) = create(&api, 1, json!({"name": "g", "policies": ["affinity"]})).await;
    let group_id = group["server_group"]["id"].as_str().unwrap().to_owned();
    let (status, body) = api
        .call(Method::POST, "/v2.1/servers", Some(boot(json!({"group": group_id}))))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let server = body["server"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.built(&server).await, "ACTIVE");
    let (_, shown) = api.get(&format!("/v2.1/os-server-groups/{group_id}")).await;
    assert_eq!(shown["server_group"]["members"], json!([server]));

    let uri = format!("/v2.1/servers/{server}");
    let (_, old) = api.at(70, Method::GET, &uri, None).await;
    assert!(old["server"].get("server_groups").is_none(), "{old}");
    let (_, new) = api.at(71, Method::GET, &uri, None).await;
    assert_eq!(new["server"]["server_groups"], json!([group_id]));
    let (_, updated) = api
        .at(71, Method::PUT, &uri, Some(json!({"server": {"name": "renamed"}})))
        .await;
    assert_eq!(updated["server"]["server_groups"], json!([group_id]));
    let (_, listed) = api.at(71, Method::GET, "/v2.1/servers/detail", None).await;
    assert!(listed["servers"][0].get("server_groups").is_none(), "not on list");

    // A deleted member leaves the group's members.
    let (status, _) = api.call(Method::DELETE, &uri, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    until("the member's delete", async || {
        api.get(&uri).await.0 == StatusCode::NOT_FOUND
    })
    .await;
    let (_, shown) = api.get(&format!("/v2.1/os-server-groups/{group_id}")).await;
    assert_eq!(shown["server_group"]["members"], json!([]));
}

/// The host a server was placed on (admins see it).
async fn host_of(api: &Api, id: &str) -> String {
    api.built(id).await;
    let (_, body) = api.get(&format!("/v2.1/servers/{id}")).await;
    body["server"]["OS-EXT-SRV-ATTR:host"].as_str().unwrap().to_owned()
}

/// Nova's SameHostFilter and DifferentHostFilter: a `same_host` boot lands on
/// the host of one of the servers it names, a `different_host` one on a host
/// of none of them (one id or a list); a hint that no host can honour is a
/// server in ERROR (no valid host); a bad hint is Nova's 400.
#[tokio::test]
async fn same_host_and_different_host_hints_are_honoured() {
    let api = Api::start().await;
    let first = api.boot("first").await;
    let host = host_of(&api, &first).await;
    let boot = |hints: Value| {
        json!({"server": {"name": "hinted", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"},
            "os:scheduler_hints": hints})
    };
    for _ in 0..3 {
        let (status, body) = api.post_boot(boot(json!({"same_host": first}))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let id = body["server"]["id"].as_str().unwrap();
        assert_eq!(host_of(&api, id).await, host, "same_host");
    }
    let mut others = Vec::new();
    for hint in [json!(first), json!([first])] {
        let (_, body) = api.post_boot(boot(json!({"different_host": hint}))).await;
        let id = body["server"]["id"].as_str().unwrap().to_owned();
        let other = host_of(&api, &id).await;
        assert_ne!(other, host, "different_host");
        others.push(id);
    }
    // Every host but one is excluded: the last one takes it.
    let (_, body) = api.post_boot(boot(json!({"different_host": [first, others[0]]}))).await;
    let last = body["server"]["id"].as_str().unwrap().to_owned();
    let placed = host_of(&api, &last).await;
    assert!(placed != host && placed != host_of(&api, &others[0]).await);
    let (_, body) = api
        .post_boot(boot(json!({"different_host": [first, others[0], last]})))
        .await;
    let nowhere = body["server"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.built(&nowhere).await, "ERROR", "every host has one of them");

    for (hints, want) in [
        (
            json!({"different_host": "x"}),
            "'x' is not valid under any of the given schemas",
        ),
        (json!({"same_host": ["x"]}), "'x' is not a 'uuid'"),
        (json!({"same_host": 5}), "5 is not of type 'string', 'array'"),
    ] {
        let (status, body) = api.post_boot(boot(hints.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{hints}");
        assert!(common::error_message(&body).contains(want), "{hints}: {body}");
    }
}
