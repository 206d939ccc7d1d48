//! os-server-external-events' names of each microversion, the multinic
//! actions removed at 2.44 and os-interface's tag (2.49, 2.70) and query
//! (2.102), `trigger_crash_dump` (2.17), each at its boundary (N-1, N); and
//! os-server-password, which has nothing to show without a metadata service.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, error_message as message};
use netcache_testenv::json::strings;
use nova_schema::assert_satisfies;
use serde_json::{Value, json};

#[tokio::test]
async fn each_event_name_is_accepted_from_its_version() {
    let api = Api::start().await;
    let id = api.boot_active("vm").await;
    for (name, since) in [
        ("volume-extended", 51),
        ("power-update", 76),
        ("accelerator-request-bound", 82),
        ("volume-reimaged", 93),
    ] {
        let event = json!({"events": [{"name": name, "server_uuid": id, "tag": "t"}]});
        let (status, body) = api
            .at(
                since - 1,
                Method::POST,
                "/v2.1/os-server-external-events",
                Some(event.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} at 2.{}: {body}", since - 1);
        assert!(
            message(&body).starts_with(&format!(
                "Invalid input for field/attribute name. Value: {name}. '{name}' is not one of ['network-changed', "
            )),
            "{body}"
        );
        let (status, body) = api
            .at(since, Method::POST, "/v2.1/os-server-external-events", Some(event))
            .await;
        assert_eq!(status, StatusCode::OK, "{name} at 2.{since}: {body}");
        assert_eq!(body["events"][0]["code"], 200);
    }
    // Nova drops these without a tag: 400 for the event, 207 for the request.
    let untagged = json!({"events": [
        {"name": "power-update", "server_uuid": id},
        {"name": "network-changed", "server_uuid": id},
    ]});
    let (status, body) = api
        .at(76, Method::POST, "/v2.1/os-server-external-events", Some(untagged))
        .await;
    assert_eq!(status, StatusCode::MULTI_STATUS, "{body}");
    assert_eq!(
        (body["events"][0]["code"].clone(), body["events"][0]["status"].clone()),
        (json!(400), json!("failed"))
    );
    assert_eq!(body["events"][1]["code"], 200);
    let (_, shown) = api.at(76, Method::GET, &format!("/v2.1/servers/{id}"), None).await;
    assert_eq!(shown["server"]["status"], "ACTIVE", "power-update changes nothing here");
}

#[tokio::test]
async fn fixed_ip_actions_are_gone_from_2_44() {
    let api = Api::start().await;
    let id = api.boot("vm").await;
    let uri = format!("/v2.1/servers/{id}/action");
    for action in ["addFixedIp", "removeFixedIp"] {
        let (status, body) = api.at(43, Method::POST, &uri, Some(json!({action: {}}))).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{action} at 2.43 reads its body: {body}"
        );
        let (status, body) = api.at(44, Method::POST, &uri, Some(json!({action: {}}))).await;
        assert_eq!(
            (status, message(&body)),
            (StatusCode::NOT_FOUND, "The resource could not be found."),
            "{action}"
        );
    }
}

#[tokio::test]
async fn interfaces_take_a_tag_from_2_49_and_show_it_from_2_70() {
    let api = Api::start().await;
    let id = api.boot_active("vm").await;
    let uri = format!("/v2.1/servers/{id}/os-interface");
    let tagged = json!({"interfaceAttachment": {"tag": "nic1"}});
    let (status, body) = api.at(48, Method::POST, &uri, Some(tagged.clone())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        message(&body),
        "Invalid input for field/attribute interfaceAttachment. Value: {'tag': 'nic1'}. Additional properties are not allowed ('tag' was unexpected)"
    );
    let (status, body) = api
        .at(
            49,
            Method::POST,
            &uri,
            Some(json!({"interfaceAttachment": {"tag": "a/b"}})),
        )
        .await;
    assert_eq!(
        (status, message(&body)),
        (
            StatusCode::BAD_REQUEST,
            "Invalid input for field/attribute tag. Value: a/b. 'a/b' does not match '^[^,/]*$'"
        )
    );
    let (status, attached) = api.at(49, Method::POST, &uri, Some(tagged)).await;
    assert_eq!(status, StatusCode::OK, "{attached}");
    assert_satisfies(
        "POST /servers/{id}/os-interface 2.49",
        &nova_schema::get_interface_at(49),
        &attached,
    );
    let port = attached["interfaceAttachment"]["port_id"].as_str().unwrap().to_owned();

    let (_, listed) = api.at(69, Method::GET, &uri, None).await;
    assert_satisfies(
        "GET /servers/{id}/os-interface 2.69",
        &nova_schema::list_interfaces_at(69),
        &listed,
    );
    let (_, listed) = api.at(70, Method::GET, &uri, None).await;
    assert_satisfies(
        "GET /servers/{id}/os-interface 2.70",
        &nova_schema::list_interfaces_at(70),
        &listed,
    );
    assert_eq!(listed["interfaceAttachments"][0]["tag"], "nic1", "{listed}");
    let (_, shown) = api.at(70, Method::GET, &format!("{uri}/{port}"), None).await;
    assert_satisfies(
        "GET /servers/{id}/os-interface/{port} 2.70",
        &nova_schema::get_interface_at(70),
        &shown,
    );
    assert_eq!(shown["interfaceAttachment"]["tag"], "nic1");

    for path in [uri.clone(), format!("{uri}/{port}")] {
        api.assert_unknown_query_refused_from(102, &[], &format!("{path}?foo=1"))
            .await;
    }
}

#[tokio::test]
async fn extensions_refuse_query_parameters_from_2_102() {
    let api = Api::start().await;
    for uri in ["/v2.1/extensions?foo=1", "/v2.1/extensions/os-keypairs?foo=1"] {
        api.assert_unknown_query_refused_from(102, &[], uri).await;
    }
}

#[tokio::test]
async fn trigger_crash_dump_from_2_17_records_its_action_and_refuses_as_nova() {
    let api = Api::start().await;
    let id = api.boot_active("vm").await;
    let action = format!("/v2.1/servers/{id}/action");
    let dump = json!({"trigger_crash_dump": null});

    let (status, body) = api.at(16, Method::POST, &action, Some(dump.clone())).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "not before 2.17: {body}");
    let (status, body) = api
        .at(17, Method::POST, &action, Some(json!({"trigger_crash_dump": {}})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = api.at(17, Method::POST, &action, Some(dump.clone())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (_, actions) = api.get(&format!("/v2.1/servers/{id}/os-instance-actions")).await;
    let names = strings(&actions, "instanceActions", "action");
    assert!(names.contains(&"trigger_crash_dump"), "{names:?}");

    // A member's lock refuses a member's dump (an admin's goes through locks).
    let member = [("x-roles", "member,reader")];
    let (status, body) = api
        .at_as(17, &member, Method::POST, &action, Some(json!({"lock": null})))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = api.at_as(17, &member, Method::POST, &action, Some(dump)).await;
    assert_eq!(status, StatusCode::CONFLICT, "a locked server: {body}");
    assert_eq!(message(&body), format!("Instance {id} is locked"));
}

#[tokio::test]
async fn the_server_password_is_empty_without_a_metadata_service() {
    let api = Api::start().await;
    let id = api.boot_active("vm").await;
    let uri = format!("/v2.1/servers/{id}/os-server-password");
    let (status, body) = api.get(&uri).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"password": ""}));
    let (status, _) = api.call(Method::DELETE, &uri, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = api.at(102, Method::GET, &format!("{uri}?foo=1"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no query from 2.102: {body}");
    let missing = "/v2.1/servers/3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01/os-server-password";
    assert_eq!(api.get(missing).await.0, StatusCode::NOT_FOUND);
}

/// `"networks": "auto"` for a project with no network: Neutron's
/// auto-allocated topology gives one (Nova from 2.37); a Neutron without the
/// plugin is Nova's 400. Without the keyword (2.1) such a boot has no network.
#[tokio::test]
async fn auto_with_no_network_asks_neutron_to_allocate_one() {
    let other = [("x-project-id", "other")];
    let boot = |networks: Value| {
        let mut server = json!({"name": "auto", "flavorRef": "1", "imageRef": common::IMAGE});
        if !networks.is_null() {
            server["networks"] = networks;
        }
        json!({ "server": server })
    };

    let api = Api::start_with(neutron_sim::SimConfig::default().with_extension("auto-allocated-topology")).await;
    let (status, body) = api
        .at_as(37, &other, Method::POST, "/v2.1/servers", Some(boot(json!("auto"))))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.built(&id).await, "ACTIVE", "(an admin's look)");
    let (_, shown) = api
        .at_as(37, &other, Method::GET, &format!("/v2.1/servers/{id}"), None)
        .await;
    assert!(
        shown["server"]["addresses"].get("auto_allocated_network").is_some(),
        "{shown}"
    );

    let api = Api::start().await;
    let (status, body) = api
        .at_as(37, &other, Method::POST, "/v2.1/servers", Some(boot(json!("auto"))))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        message(&body),
        "Unable to automatically allocate a network for project other"
    );
    let (status, body) = api
        .at_as(1, &other, Method::POST, "/v2.1/servers", Some(boot(Value::Null)))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "no networks at 2.1: {body}");
}
