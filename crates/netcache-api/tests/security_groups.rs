//! Nova's security group proxies (`os-security-groups`,
//! `os-security-group-rules`, until 2.35) over the embedded Neutron: a
//! project's groups and ingress rules made, shown, renamed and deleted in
//! Neutron with Nova's views and refusals, each caller held to its own
//! project's groups (an admin's `all_tenants` to all).

mod common;

use axum::http::{Method, StatusCode};
use common::{Api, error_message};
use netcache_testenv::json::items;
use serde_json::{Value, json};

const MEMBER: &str = "member,reader";

/// Callers: members of `demo` and of `other`, and a reader of `other`.
const DEMO_MEMBER: &[(&str, &str)] = &[("x-project-id", "demo"), ("x-roles", MEMBER)];
const OTHER_MEMBER: &[(&str, &str)] = &[("x-project-id", "other"), ("x-roles", MEMBER)];
const OTHER_READER: &[(&str, &str)] = &[("x-project-id", "other"), ("x-roles", "reader")];

/// `who`'s create of a group `name`.
async fn create_as(api: &Api, who: &[(&str, &str)], name: &str) -> (StatusCode, Value) {
    let body = json!({"security_group": {"name": name, "description": ""}});
    api.at_as(1, who, Method::POST, "/v2.1/os-security-groups", Some(body))
        .await
}

async fn create_group(api: &Api, name: &str) -> Value {
    let (status, body) = api
        .call(
            Method::POST,
            "/v2.1/os-security-groups",
            Some(json!({"security_group": {"name": name, "description": "d"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["security_group"].clone()
}

async fn create_rule(api: &Api, rule: Value) -> (StatusCode, Value) {
    api.call(
        Method::POST,
        "/v2.1/os-security-group-rules",
        Some(json!({"security_group_rule": rule})),
    )
    .await
}

fn listed(body: &Value) -> Vec<Value> {
    items(body, "security_groups").to_vec()
}

#[tokio::test]
async fn a_group_is_made_shown_renamed_and_deleted_in_neutron_with_novas_views() {
    let api = Api::start().await;
    let made = create_group(&api, " web -1 ").await;
    assert_eq!(made["name"], " web -1 ", "spaces kept");
    assert_eq!(made["tenant_id"], "demo");
    assert_eq!(made["rules"], json!([]), "a new group's egress rules are not shown");
    let id = made["id"].as_str().unwrap().to_owned();

    let (status, list) = api.get("/v2.1/os-security-groups").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        listed(&list).contains(&made),
        "the list shows the group as made: {list}"
    );
    let default = listed(&list)
        .into_iter()
        .find(|g| g["name"] == "default")
        .expect("the project's default");
    assert_eq!(
        default["rules"][0]["group"],
        json!({"name": "default", "tenant_id": "demo"})
    );
    assert_eq!(default["rules"][0]["ip_range"], json!({}));
    let (_, shown) = api.get(&format!("/v2.1/os-security-groups/{id}")).await;
    assert_eq!(shown["security_group"], made);

    let (status, updated) = api
        .call(
            Method::PUT,
            &format!("/v2.1/os-security-groups/{id}"),
            Some(json!({"security_group": {"name": "web2", "description": "d2"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(
        (
            &updated["security_group"]["name"],
            &updated["security_group"]["description"]
        ),
        (&json!("web2"), &json!("d2"))
    );

    let default_uri = format!("/v2.1/os-security-groups/{}", default["id"].as_str().unwrap());
    let (status, body) = api.at_as(1, DEMO_MEMBER, Method::DELETE, &default_uri, None).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a member's default group stays: {body}"
    );
    assert_eq!(
        error_message(&body),
        "Insufficient rights for removing default security group."
    );
    let (status, _) = api
        .call(Method::DELETE, &format!("/v2.1/os-security-groups/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, body) = api.get(&format!("/v2.1/os-security-groups/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_message(&body), format!("Security group {id} does not exist"));

    // A create of `group`, and the status it is refused with.
    let create = |group: Value, expected| {
        let body = json!({ "security_group": group });
        (Method::POST, "/v2.1/os-security-groups", Some(body), expected)
    };
    for (method, uri, body, expected) in [
        (
            Method::GET,
            "/v2.1/os-security-groups/not-a-uuid",
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::DELETE,
            "/v2.1/os-security-groups/not-a-uuid",
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::PUT,
            &format!("/v2.1/os-security-groups/{id}"),
            Some(json!({"security_group": {"name": "x", "description": "y"}})),
            StatusCode::NOT_FOUND,
        ),
        create(json!({"name": "x"}), StatusCode::BAD_REQUEST),
        create(
            json!({"name": "x".repeat(256), "description": ""}),
            StatusCode::BAD_REQUEST,
        ),
        create(json!({"name": "default", "description": ""}), StatusCode::FORBIDDEN),
    ] {
        let (status, answer) = api.call(method.clone(), uri, body).await;
        assert_eq!(status, expected, "{method} {uri}: {answer}");
    }
    let (status, _) = api.at(36, Method::GET, "/v2.1/os-security-groups", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "gone at 2.36");
}

#[tokio::test]
async fn rules_are_checked_as_nova_checks_them_and_shown_as_nova_shows_them() {
    let api = Api::start().await;
    let group = create_group(&api, "web").await;
    let peer = create_group(&api, "peer").await;
    let parent = group["id"].as_str().unwrap();
    let ssh = json!({"parent_group_id": parent, "ip_protocol": "tcp", "from_port": 22, "to_port": 22});

    let (status, made) = create_rule(&api, ssh.clone()).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    let rule = &made["security_group_rule"];
    assert_eq!(rule["ip_range"], json!({"cidr": "0.0.0.0/0"}));
    assert_eq!(rule["group"], json!({}));
    assert_eq!(
        (&rule["from_port"], &rule["to_port"], &rule["ip_protocol"]),
        (&json!(22), &json!(22), &json!("tcp"))
    );
    let (status, body) = create_rule(&api, ssh.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_message(&body),
        format!("This rule already exists in group {parent}")
    );

    let (_, with_cidr) = create_rule(&api, json!({"parent_group_id": parent, "ip_protocol": "tcp", "from_port": 80, "to_port": 80, "cidr": "10.2.3.124/24"})).await;
    assert_eq!(
        with_cidr["security_group_rule"]["ip_range"],
        json!({"cidr": "10.2.3.124/24"}),
        "host bits kept"
    );
    let (_, icmp) = create_rule(
        &api,
        json!({"parent_group_id": parent, "ip_protocol": "icmp", "from_port": -1, "to_port": -1}),
    )
    .await;
    assert_eq!(
        (
            &icmp["security_group_rule"]["from_port"],
            &icmp["security_group_rule"]["to_port"]
        ),
        (&json!(-1), &json!(-1))
    );
    let (status, from_peer) = create_rule(&api, json!({"parent_group_id": parent, "ip_protocol": "tcp", "from_port": 5432, "to_port": 5432, "group_id": peer["id"]})).await;
    assert_eq!(status, StatusCode::OK, "{from_peer}");
    assert_eq!(
        from_peer["security_group_rule"]["group"],
        json!({"name": "peer", "tenant_id": "demo"})
    );
    assert_eq!(from_peer["security_group_rule"]["ip_range"], json!({}));

    for (rule, message) in [
        (
            json!({"parent_group_id": parent, "ip_protocol": "tempest-999", "from_port": 22, "to_port": 22}),
            "Invalid IP protocol tempest-999.",
        ),
        (
            json!({"parent_group_id": parent, "ip_protocol": "tcp", "from_port": 65536, "to_port": 22}),
            "Invalid port range 65536:22. Former value cannot be greater than the later",
        ),
        (
            json!({"parent_group_id": parent, "ip_protocol": "tcp", "from_port": 22, "to_port": 65536}),
            "Invalid port range 22:65536. Valid TCP ports should be between 1-65535",
        ),
        (
            json!({"parent_group_id": parent, "ip_protocol": "tcp", "from_port": "x", "to_port": 22}),
            "Invalid input received: To and From ports must be integers",
        ),
        (
            json!({"parent_group_id": "tempest-non_int_id"}),
            "Invalid input for field/attribute parent_group_id. Value: tempest-non_int_id. 'tempest-non_int_id' is not a 'uuid'",
        ),
    ] {
        let (status, body) = create_rule(&api, rule.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{rule}: {body}");
        assert_eq!(error_message(&body), message);
    }
    let (status, _) = create_rule(&api, json!({"parent_group_id": uuid::Uuid::new_v4().to_string(), "ip_protocol": "tcp", "from_port": 1, "to_port": 2})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, shown) = api.get(&format!("/v2.1/os-security-groups/{parent}")).await;
    assert_eq!(shown["security_group"]["rules"].as_array().unwrap().len(), 4, "{shown}");
    // Neutron drops the rules from a group that is deleted.
    let (status, _) = api
        .call(
            Method::DELETE,
            &format!("/v2.1/os-security-groups/{}", peer["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, shown) = api.get(&format!("/v2.1/os-security-groups/{parent}")).await;
    assert_eq!(shown["security_group"]["rules"].as_array().unwrap().len(), 3, "{shown}");

    let rule_id = made["security_group_rule"]["id"].as_str().unwrap();
    let uri = format!("/v2.1/os-security-group-rules/{rule_id}");
    assert_eq!(api.call(Method::DELETE, &uri, None).await.0, StatusCode::ACCEPTED);
    assert_eq!(api.call(Method::DELETE, &uri, None).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_caller_sees_their_projects_groups_and_an_admin_all_of_them() {
    let api = Api::start().await;
    let mine = create_group(&api, "mine").await;
    let (status, theirs) = create_as(&api, OTHER_MEMBER, "theirs").await;
    assert_eq!(status, StatusCode::OK, "{theirs}");
    let theirs = &theirs["security_group"];
    assert_eq!(theirs["tenant_id"], "other");

    let ids = |body: &Value| {
        listed(body)
            .iter()
            .map(|g| g["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let (_, all) = api.get("/v2.1/os-security-groups?all_tenants=1").await;
    assert!(ids(&all).contains(&mine["id"].as_str().unwrap().to_owned()));
    assert!(ids(&all).contains(&theirs["id"].as_str().unwrap().to_owned()));
    let (_, own) = api
        .at_as(
            1,
            OTHER_MEMBER,
            Method::GET,
            "/v2.1/os-security-groups?all_tenants=1",
            None,
        )
        .await;
    assert!(
        !ids(&own).contains(&mine["id"].as_str().unwrap().to_owned()),
        "a member's all_tenants is ignored"
    );
    assert!(listed(&own).iter().all(|g| g["tenant_id"] == "other"));

    let uri = format!("/v2.1/os-security-groups/{}", mine["id"].as_str().unwrap());
    for method in [Method::GET, Method::DELETE] {
        let (status, _) = api.at_as(1, OTHER_MEMBER, method.clone(), &uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method}: another project's group");
    }
    let (status, _) = api.at_as(1, OTHER_MEMBER, Method::POST, "/v2.1/os-security-group-rules", Some(json!({"security_group_rule": {"parent_group_id": mine["id"], "ip_protocol": "tcp", "from_port": 1, "to_port": 2}}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = create_as(&api, OTHER_READER, "x").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a reader makes nothing");

    let (_, limited) = api.get("/v2.1/os-security-groups?limit=1").await;
    assert_eq!(listed(&limited).len(), 1);
    let (status, _) = api.get("/v2.1/os-security-groups?limit=-9").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_group_a_server_is_in_cannot_be_deleted_until_the_server_is_gone() {
    let api = Api::start().await;
    let group = create_group(&api, "web").await;
    let server = api.boot_active_with(json!({"networks": "auto"})).await;
    let (status, body) = api
        .call(
            Method::POST,
            &format!("/v2.1/servers/{server}/action"),
            Some(json!({"addSecurityGroup": {"name": "web"}})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let in_group = |body: &Value| listed(body).iter().any(|g| g["name"] == "web");
    api.poll(&format!("/v2.1/servers/{server}/os-security-groups"), in_group)
        .await;
    let uri = format!("/v2.1/os-security-groups/{}", group["id"].as_str().unwrap());
    let (status, body) = api.call(Method::DELETE, &uri, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        api.call(Method::DELETE, &format!("/v2.1/servers/{server}"), None)
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    api.gone(&server).await;
    assert_eq!(api.call(Method::DELETE, &uri, None).await.0, StatusCode::ACCEPTED);
}
