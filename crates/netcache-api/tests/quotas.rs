//! os-quota-sets, limits and the extensions list at microversion 2.1: Nova's
//! views (checked against the project's copies of Nova's response schemas,
//! `nova_schema::quotas`), its request checks and messages, users' limits and
//! the key pair quota. The caller is an admin of `demo` (see `common`).

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::Api;
use netcache_testenv::json::strings;
use nova_schema::assert_satisfies;
use nova_schema::quotas as schema;
use serde_json::{Value, json};

async fn get_checked(api: &Api, uri: &str, schema: &Value) -> Value {
    let (status, body) = api.get(uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    assert_satisfies(uri, schema, &body);
    body
}

async fn put_quotas(api: &Api, uri: &str, quota_set: Value) -> (StatusCode, Value) {
    let (status, body) = api.call(Method::PUT, uri, Some(json!({"quota_set": quota_set}))).await;
    if status == StatusCode::OK {
        assert_satisfies("PUT /os-quota-sets/{id}", &schema::update_quota_set(), &body);
    }
    (status, body)
}

#[track_caller]
fn assert_bad_request(got: (StatusCode, Value), message: &str) {
    let (status, body) = got;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_satisfies("an error", &nova_schema::nova_error(), &body);
    assert_eq!(body["badRequest"]["message"], message, "{body}");
}

#[tokio::test]
async fn quota_sets_show_novas_2_1_resources_with_usage_in_the_detail() {
    let api = Api::start().await;
    let shown = get_checked(&api, "/v2.1/os-quota-sets/demo", &schema::get_quota_set()).await;
    let defaults = get_checked(&api, "/v2.1/os-quota-sets/demo/defaults", &schema::get_quota_set()).await;
    assert_eq!(shown, defaults, "a project without limits of its own has the defaults");
    assert_eq!(
        shown,
        json!({"quota_set": {
            "id": "demo", "cores": 20, "fixed_ips": -1, "floating_ips": -1,
            "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255, "injected_files": 5,
            "instances": 10, "key_pairs": 100, "metadata_items": 128, "ram": 51200,
            "security_group_rules": -1, "security_groups": -1, "server_group_members": 10, "server_groups": 10,
        }})
    );

    let id = api.boot_with(json!({"flavorRef": "3"})).await;
    api.built(&id).await;
    let detail = get_checked(
        &api,
        "/v2.1/os-quota-sets/demo/detail",
        &schema::get_quota_set_details(),
    )
    .await;
    let quota_set = &detail["quota_set"];
    assert_eq!(quota_set["id"], "demo");
    assert_eq!(quota_set["instances"], json!({"in_use": 1, "limit": 10, "reserved": 0}));
    assert_eq!(quota_set["cores"], json!({"in_use": 2, "limit": 20, "reserved": 0}));
    assert_eq!(quota_set["ram"], json!({"in_use": 4096, "limit": 51200, "reserved": 0}));
    assert_eq!(quota_set["key_pairs"]["in_use"], 0);
    let other = get_checked(
        &api,
        "/v2.1/os-quota-sets/demo/detail?user_id=someone-else",
        &schema::get_quota_set_details(),
    )
    .await;
    assert_eq!(other["quota_set"]["instances"]["in_use"], 0, "a user's own usage");
}

#[tokio::test]
async fn an_update_sets_limits_and_a_delete_puts_the_defaults_back() {
    let api = Api::start().await;
    let (status, updated) = put_quotas(&api, "/v2.1/os-quota-sets/p1", json!({"ram": "5120", "cores": 4})).await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert!(
        updated["quota_set"].get("id").is_none(),
        "no id in the answer: {updated}"
    );
    assert_eq!(
        (&updated["quota_set"]["ram"], &updated["quota_set"]["cores"]),
        (&json!(5120), &json!(4))
    );

    // A user's limit, within the project's (Tempest's test_get_updated_quotas).
    let (status, body) = put_quotas(&api, "/v2.1/os-quota-sets/p1?user_id=u1", json!({"ram": "2048"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let users = get_checked(&api, "/v2.1/os-quota-sets/p1?user_id=u1", &schema::get_quota_set()).await;
    assert_eq!(
        (&users["quota_set"]["ram"], &users["quota_set"]["cores"]),
        (&json!(2048), &json!(4))
    );
    let project = get_checked(&api, "/v2.1/os-quota-sets/p1", &schema::get_quota_set()).await;
    assert_eq!(project["quota_set"]["ram"], 5120);
    assert_bad_request(
        put_quotas(&api, "/v2.1/os-quota-sets/p1?user_id=u2", json!({"ram": 4000})).await,
        "Quota limit 4000 for ram must be less than or equal to 3072.",
    );
    assert_bad_request(
        put_quotas(&api, "/v2.1/os-quota-sets/p1", json!({"ram": 1024})).await,
        "Quota limit 1024 for ram must be greater than or equal to already used and reserved 2048.",
    );

    let (status, body) = api
        .call(Method::DELETE, "/v2.1/os-quota-sets/p1?user_id=u1", None)
        .await;
    assert_eq!((status, body), (StatusCode::ACCEPTED, Value::Null));
    let users = get_checked(&api, "/v2.1/os-quota-sets/p1?user_id=u1", &schema::get_quota_set()).await;
    assert_eq!(users["quota_set"]["ram"], 5120, "back to the project's");
    let (status, _) = api.call(Method::DELETE, "/v2.1/os-quota-sets/p1", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let project = get_checked(&api, "/v2.1/os-quota-sets/p1", &schema::get_quota_set()).await;
    let defaults = get_checked(&api, "/v2.1/os-quota-sets/p1/defaults", &schema::get_quota_set()).await;
    assert_eq!(project, defaults);
    let (status, _) = api.call(Method::DELETE, "/v2.1/os-quota-sets/p1", None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "deleting no limits is no error");
}

#[tokio::test]
async fn a_limit_below_usage_is_refused_unless_forced() {
    let api = Api::start().await;
    for _ in 0..2 {
        api.boot("vm").await;
    }
    let uri = "/v2.1/os-quota-sets/demo";
    assert_bad_request(
        put_quotas(&api, uri, json!({"instances": 1, "cores": 10})).await,
        "Quota limit 1 for instances must be greater than or equal to already used and reserved 2.",
    );
    let shown = get_checked(&api, uri, &schema::get_quota_set()).await;
    assert_eq!(shown["quota_set"]["cores"], 20, "a refused update sets nothing");
    let (status, forced) = put_quotas(&api, uri, json!({"instances": 1, "force": true})).await;
    assert_eq!(status, StatusCode::OK, "{forced}");
    assert_eq!(forced["quota_set"]["instances"], 1);
    let (status, body) = put_quotas(&api, uri, json!({"instances": -1})).await;
    assert_eq!((status, &body["quota_set"]["instances"]), (StatusCode::OK, &json!(-1)));

    assert_bad_request(
        put_quotas(&api, uri, json!({"ram": "lots"})).await,
        "Invalid input for field/attribute ram. Value: lots. 'lots' does not match '^-?[0-9]+$'",
    );
    assert_bad_request(
        put_quotas(&api, uri, json!({"networks": 3})).await,
        "The networks quota has been removed",
    );
    assert_bad_request(
        api.call(Method::PUT, uri, Some(json!({"quotas": {}}))).await,
        "'quota_set' is a required property",
    );
}

#[tokio::test]
async fn a_users_key_pairs_are_held_to_the_quota() {
    let api = Api::start().await;
    let (status, body) = put_quotas(&api, "/v2.1/os-quota-sets/demo?user_id=alice", json!({"key_pairs": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let create = |name: &str| json!({"keypair": {"name": name, "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINABGpOwjISXlBZnPqjbkUMUVZSjlmmqNCvvgcBwsU1J k"}});
    let as_alice = [("x-user-id", "alice")];
    let (status, _, body) = api
        .call_with_headers(Method::POST, "/v2.1/os-keypairs", &as_alice, Some(create("one")))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, body) = api
        .call_with_headers(Method::POST, "/v2.1/os-keypairs", &as_alice, Some(create("two")))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["forbidden"]["message"], "Quota exceeded, too many key pairs.");
    let (status, _, body) = api
        .call_with_headers(
            Method::POST,
            "/v2.1/os-keypairs",
            &[("x-user-id", "bob")],
            Some(create("two")),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "another user's quota is the project's: {body}");
}

#[tokio::test]
async fn limits_and_extensions_are_novas_2_1_views() {
    let api = Api::start().await;
    let limits = get_checked(&api, "/v2.1/limits", &schema::get_limit()).await;
    assert_eq!(limits["limits"]["rate"], json!([]));
    let absolute = &limits["limits"]["absolute"];
    for (name, value) in [
        ("maxTotalInstances", 10),
        ("maxTotalCores", 20),
        ("maxTotalRAMSize", 51200),
        ("maxServerMeta", 128),
        ("maxImageMeta", 128),
        ("maxTotalKeypairs", 100),
        ("maxSecurityGroups", -1),
        ("totalInstancesUsed", 0),
        ("totalSecurityGroupsUsed", 0),
    ] {
        assert_eq!(absolute[name], value, "{name}: {limits}");
    }
    get_checked(&api, "/v2.1/limits?tenant_id=other", &schema::get_limit()).await;

    let list = get_checked(&api, "/v2.1/extensions", &schema::list_extensions()).await;
    let aliases = strings(&list, "extensions", "alias");
    for served in [
        "os-quota-sets",
        "os-quota-class-sets",
        "os-keypairs",
        "os-attach-interfaces",
        "os-used-limits",
        "os-server-groups",
        "os-hypervisors",
        "os-services",
        "os-flavor-manage",
        "os-server-password",
        "os-hosts",
        "os-consoles",
        "os-security-groups",
        "os-simple-tenant-usage",
        "os-aggregates",
    ] {
        assert!(aliases.contains(&served), "{served} in {aliases:?}");
    }
    let mut in_novas_order = aliases.clone();
    in_novas_order.sort_unstable();
    assert_eq!(aliases, in_novas_order, "Nova lists its aliases sorted");
    assert!(
        !aliases.contains(&"os-volumes"),
        "os-volumes is not served: {aliases:?}"
    );
    let one = get_checked(&api, "/v2.1/extensions/os-quota-sets", &schema::get_extension()).await;
    assert_eq!(one["extension"]["name"], "Quotas");
    let classes = aliases.iter().position(|a| *a == "os-quota-class-sets").unwrap();
    assert_eq!(aliases[classes + 1], "os-quota-sets", "Nova's order: {aliases:?}");
    let one = get_checked(&api, "/v2.1/extensions/os-quota-class-sets", &schema::get_extension()).await;
    assert_eq!(
        one["extension"],
        json!({
            "alias": "os-quota-class-sets", "description": "Quota classes management support.",
            "links": [], "name": "QuotaClasses",
            "namespace": "http://docs.openstack.org/compute/ext/fake_xml", "updated": "2014-12-03T00:00:00Z",
        })
    );
    let (status, body) = api.get("/v2.1/extensions/os-volumes").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["itemNotFound"]["message"], "The resource could not be found.");
}
