//! os-instance-actions past microversion 2.1, each change at its boundary
//! (N-1, N), with views checked against copies of Nova's response schemas.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, error_message as message};
use netcache_testenv::json::items;
use nova_schema::assert_satisfies;
use nova_schema::instance_actions as schema;
use serde_json::Value;

/// A GET at `2.minor` as an admin, or as a member of the project.
async fn get(api: &Api, minor: u16, admin: bool, uri: &str) -> (StatusCode, Value) {
    let roles = if admin { "admin,member,reader" } else { "member,reader" };
    api.at_as(minor, &[("x-roles", roles)], Method::GET, uri, None).await
}

/// A built server and the request id of its create action.
async fn server_with_actions(api: &Api) -> (String, String) {
    let id = api.boot_active("vm").await;
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2.1/servers/{id}/action"),
            Some(serde_json::json!({"os-stop": null})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, list) = get(api, 1, true, &format!("/v2.1/servers/{id}/os-instance-actions")).await;
    let create = items(&list, "instanceActions")
        .iter()
        .find(|a| a["action"] == "create")
        .unwrap();
    (id, create["request_id"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn events_are_shown_by_version_and_policy() {
    let api = Api::start().await;
    let (id, create) = server_with_actions(&api).await;
    let uri = format!("/v2.1/servers/{id}/os-instance-actions/{create}");
    let (_, member) = get(&api, 50, false, &uri).await;
    assert!(
        member["instanceAction"].get("events").is_none(),
        "2.50 member: {member}"
    );
    let (_, member) = get(&api, 51, false, &uri).await;
    assert_satisfies("show 2.51", &schema::show_at(51), &member);
    let event = &member["instanceAction"]["events"][0];
    assert!(
        event.get("traceback").is_none() && event.get("hostId").is_none(),
        "{member}"
    );
    let (_, admin) = get(&api, 51, true, &uri).await;
    assert!(
        admin["instanceAction"]["events"][0].get("traceback").is_some(),
        "{admin}"
    );

    let (_, member) = get(&api, 61, false, &uri).await;
    assert!(member["instanceAction"]["events"][0].get("hostId").is_none());
    let (_, member) = get(&api, 62, false, &uri).await;
    assert_satisfies("show 2.62", &schema::show_at(62), &member);
    let event = &member["instanceAction"]["events"][0];
    assert!(event["hostId"].is_string() && event.get("host").is_none(), "{member}");
    let (_, admin) = get(&api, 62, true, &uri).await;
    assert_satisfies("show 2.62", &schema::show_at(62), &admin);
    assert!(admin["instanceAction"]["events"][0].get("host").is_some(), "{admin}");

    let (_, admin) = get(&api, 83, true, &uri).await;
    assert!(admin["instanceAction"]["events"][0].get("details").is_none());
    let (_, admin) = get(&api, 84, true, &uri).await;
    assert_satisfies("show 2.84", &schema::show_at(84), &admin);
    assert!(admin["instanceAction"]["events"][0].get("details").is_some(), "{admin}");
    let (_, member) = get(&api, 84, false, &uri).await;
    assert!(
        member["instanceAction"]["events"][0].get("details").is_none(),
        "{member}"
    );

    let (status, body) = get(
        &api,
        84,
        true,
        &format!("/v2.1/servers/{id}/os-instance-actions/req-nope"),
    )
    .await;
    assert_eq!(
        (status, message(&body)),
        (StatusCode::NOT_FOUND, "Action req-nope not found")
    );
    let (status, _) = get(&api, 101, true, &format!("{uri}?foo=1")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(&api, 102, true, &format!("{uri}?foo=1")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn from_2_58_lists_page_and_filter_by_time() {
    let api = Api::start().await;
    let (id, _) = server_with_actions(&api).await;
    let uri = format!("/v2.1/servers/{id}/os-instance-actions");
    let (_, all) = get(&api, 57, true, &format!("{uri}?limit=1&foo=1")).await;
    assert_satisfies("list 2.57", &schema::list_at(57), &all);
    assert_eq!(
        all["instanceActions"].as_array().unwrap().len(),
        2,
        "2.57 ignores paging: {all}"
    );
    let (status, _) = get(&api, 58, true, &format!("{uri}?foo=1")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (_, first) = get(&api, 58, true, &format!("{uri}?limit=1")).await;
    assert_satisfies("list 2.58", &schema::list_at(58), &first);
    let newest = first["instanceActions"][0]["request_id"].as_str().unwrap().to_owned();
    assert_eq!(first["instanceActions"][0]["action"], "stop", "newest first: {first}");
    assert!(
        first["links"][0]["href"]
            .as_str()
            .unwrap()
            .ends_with(&format!("?limit=1&marker={newest}")),
        "{first}"
    );
    let (_, rest) = get(&api, 58, true, &format!("{uri}?limit=1&marker={newest}")).await;
    assert_eq!(rest["instanceActions"][0]["action"], "create", "{rest}");
    let (status, body) = get(&api, 58, true, &format!("{uri}?marker=req-nope")).await;
    assert_eq!(
        (status, message(&body)),
        (StatusCode::BAD_REQUEST, "Marker req-nope could not be found.")
    );

    let (_, none) = get(&api, 58, true, &format!("{uri}?changes-since=2999-01-01T00:00:00Z")).await;
    assert_eq!(none["instanceActions"].as_array().unwrap().len(), 0, "{none}");
    let (_, some) = get(&api, 58, true, &format!("{uri}?changes-since=2000-01-01T00:00:00Z")).await;
    assert_eq!(some["instanceActions"].as_array().unwrap().len(), 2, "{some}");

    let before = format!("{uri}?changes-before=2000-01-01T00:00:00Z");
    let (status, _) = get(&api, 65, true, &before).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no changes-before at 2.65");
    let (status, none) = get(&api, 66, true, &before).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(none["instanceActions"].as_array().unwrap().len(), 0, "{none}");
    let (status, body) = get(
        &api,
        66,
        true,
        &format!("{uri}?changes-since=2001-01-01T00:00:00Z&changes-before=2000-01-01T00:00:00Z"),
    )
    .await;
    assert_eq!(
        (status, message(&body)),
        (
            StatusCode::BAD_REQUEST,
            "The value of changes-since must be less than or equal to changes-before."
        )
    );
}

#[tokio::test]
async fn from_2_21_a_deleted_servers_actions_are_readable() {
    let api = Api::start().await;
    let (id, _) = server_with_actions(&api).await;
    let (status, _) = api.call(Method::DELETE, &format!("/v2.1/servers/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    api.gone(&id).await;
    let uri = format!("/v2.1/servers/{id}/os-instance-actions");
    let (status, _) = get(&api, 20, true, &uri).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = get(&api, 21, true, &uri).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        items(&body, "instanceActions").iter().any(|a| a["action"] == "delete"),
        "{body}"
    );
}
