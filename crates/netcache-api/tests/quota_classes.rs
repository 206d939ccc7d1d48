//! os-quota-class-sets: Nova's views of each microversion (checked against the
//! project's copies of Nova's response schemas, `nova_schema::quotas`), its
//! update schema and messages, its admin-only policy, any class name a class,
//! and the `default` class as every project's defaults: os-quota-sets'
//! defaults, `/limits`, and what boots, key pairs, server groups and metadata
//! are held to. The caller is an admin of `demo` (see `common`).

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, error_message as message};
use nova_schema::assert_satisfies;
use nova_schema::quotas as schema;
use serde_json::{Value, json};

const DEFAULT: &str = "/v2.1/os-quota-class-sets/default";

/// Nova's defaults at 2.1, as a class shows them (no server group ones).
fn novas_defaults(id: &str) -> Value {
    json!({"quota_class_set": {
        "id": id, "cores": 20, "fixed_ips": -1, "floating_ips": -1,
        "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255, "injected_files": 5,
        "instances": 10, "key_pairs": 100, "metadata_items": 128, "ram": 51200,
        "security_group_rules": -1, "security_groups": -1,
    }})
}

async fn show(api: &Api, minor: u16, uri: &str) -> Value {
    let (status, body) = api.at(minor, Method::GET, uri, None).await;
    assert_eq!(status, StatusCode::OK, "2.{minor} {uri}: {body}");
    assert_satisfies(
        "GET /os-quota-class-sets/{id}",
        &schema::get_quota_class_set_at(minor),
        &body,
    );
    body
}

async fn update(api: &Api, minor: u16, uri: &str, values: Value) -> (StatusCode, Value) {
    let body = Some(json!({"quota_class_set": values}));
    let (status, body) = api.at(minor, Method::PUT, uri, body).await;
    if status == StatusCode::OK {
        assert_satisfies(
            "PUT /os-quota-class-sets/{id}",
            &schema::update_quota_class_set_at(minor),
            &body,
        );
    }
    (status, body)
}

/// An admin's new values of the `default` class, at 2.1.
async fn set_defaults(api: &Api, values: Value) {
    let (status, body) = update(api, 1, DEFAULT, values).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[track_caller]
fn assert_refused(got: (StatusCode, Value), status: StatusCode, want: &str) {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "{body}");
    assert_satisfies("an error", &nova_schema::nova_error(), &body);
    assert_eq!(message(&body), want, "{body}");
}

/// Tempest's `test_update_default_quotas` (QuotaClassesAdminTestJSON at 2.1,
/// QuotaClassesAdmin257Test at 2.57): every value shown plus 100 is set,
/// answered and shown back.
#[tokio::test]
async fn tempests_update_of_the_default_class_at_2_1_and_2_57() {
    for minor in [1, 57] {
        let api = Api::start().await;
        let mut values = show(&api, minor, DEFAULT).await["quota_class_set"].clone();
        assert_eq!(values.as_object_mut().unwrap().remove("id"), Some(json!("default")));
        for value in values.as_object_mut().unwrap().values_mut() {
            *value = json!(value.as_i64().unwrap() + 100);
        }
        let (status, updated) = update(&api, minor, DEFAULT, values.clone()).await;
        assert_eq!(status, StatusCode::OK, "2.{minor}: {updated}");
        assert_eq!(updated["quota_class_set"], values, "2.{minor}: the answer has no id");
        let shown = show(&api, minor, DEFAULT).await;
        let mut want = values.clone();
        want["id"] = json!("default");
        assert_eq!(shown["quota_class_set"], want, "2.{minor}");
    }
}

#[tokio::test]
async fn each_version_shows_and_takes_novas_keys() {
    let api = Api::start().await;
    assert_eq!(show(&api, 1, DEFAULT).await, novas_defaults("default"));
    for minor in [1, 49, 50, 56, 57, 104] {
        show(&api, minor, DEFAULT).await;
        let (status, body) = update(&api, minor, DEFAULT, json!({"instances": 11})).await;
        assert_eq!(status, StatusCode::OK, "2.{minor}: {body}");
    }
    // Before 2.50 the server group ones are set but not shown.
    let (status, body) = update(
        &api,
        49,
        DEFAULT,
        json!({"server_groups": 3, "server_group_members": 4, "fixed_ips": 7}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["quota_class_set"].get("server_groups").is_none(), "{body}");
    assert_eq!(body["quota_class_set"]["fixed_ips"], 7);
    let shown = show(&api, 50, DEFAULT).await;
    let set = &shown["quota_class_set"];
    assert_eq!(
        (&set["server_groups"], &set["server_group_members"], &set["instances"]),
        (&json!(3), &json!(4), &json!(11))
    );
    assert!(set.get("fixed_ips").is_none(), "{shown}");
    let shown = show(&api, 57, DEFAULT).await;
    assert!(shown["quota_class_set"].get("injected_files").is_none(), "{shown}");
    // The nova-network values are kept as given (netcache enforces none of them).
    assert_eq!(show(&api, 1, DEFAULT).await["quota_class_set"]["fixed_ips"], 7);
}

#[tokio::test]
async fn bad_updates_are_refused_with_novas_messages() {
    let api = Api::start().await;
    let bad = StatusCode::BAD_REQUEST;
    let unexpected = |key: &str, value: &str| {
        format!(
            "Invalid input for field/attribute quota_class_set. Value: {{'{key}': {value}}}. Additional properties are not allowed ('{key}' was unexpected)"
        )
    };
    for (minor, values, want) in [
        (1, json!({"volumes": 5}), unexpected("volumes", "5")),
        (1, json!({"force": true}), unexpected("force", "True")),
        (1, json!({"networks": 1}), unexpected("networks", "1")),
        (50, json!({"fixed_ips": 5}), unexpected("fixed_ips", "5")),
        (50, json!({"security_group_rules": 5}), unexpected("security_group_rules", "5")),
        (57, json!({"injected_files": 5}), unexpected("injected_files", "5")),
        (
            1,
            json!({"ram": -2}),
            "Invalid input for field/attribute ram. Value: -2. -2 is less than the minimum of -1".into(),
        ),
        (
            1,
            json!({"ram": "abc"}),
            "Invalid input for field/attribute ram. Value: abc. 'abc' does not match '^-?[0-9]+$'".into(),
        ),
        (
            1,
            json!({"cores": 2_147_483_648_i64}),
            "Invalid input for field/attribute cores. Value: 2147483648. 2147483648 is greater than the maximum of 2147483647".into(),
        ),
    ] {
        assert_refused(update(&api, minor, DEFAULT, values.clone()).await, bad, &want);
    }
    assert_refused(
        api.call(Method::PUT, DEFAULT, Some(json!({"quota_set": {"ram": 1}})))
            .await,
        bad,
        "'quota_class_set' is a required property",
    );
    // Nothing refused was set.
    assert_eq!(show(&api, 1, DEFAULT).await, novas_defaults("default"));
    // The values that 2.49 and 2.56 still take.
    for (minor, key) in [(49, "floating_ips"), (56, "injected_file_path_bytes")] {
        let (status, body) = update(&api, minor, DEFAULT, json!({key: "12"})).await;
        assert_eq!(status, StatusCode::OK, "2.{minor} {key}: {body}");
    }

    let long = "c".repeat(256);
    assert_refused(
        update(&api, 1, &format!("/v2.1/os-quota-class-sets/{long}"), json!({"ram": 1})).await,
        bad,
        "quota_class_name has 256 characters, more than 255.",
    );
    let (status, body) = update(
        &api,
        1,
        &format!("/v2.1/os-quota-class-sets/{}", "c".repeat(255)),
        json!({"ram": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn only_admins_show_and_update_classes_and_the_body_is_checked_first() {
    let api = Api::start().await;
    for roles in ["member,reader", "reader"] {
        let headers = [("x-roles", roles)];
        let (status, _, body) = api.call_with_headers(Method::GET, DEFAULT, &headers, None).await;
        assert_refused(
            (status, body),
            StatusCode::FORBIDDEN,
            "Policy doesn't allow os_compute_api:os-quota-class-sets:show to be performed.",
        );
        let good = Some(json!({"quota_class_set": {"instances": 1}}));
        let (status, _, body) = api.call_with_headers(Method::PUT, DEFAULT, &headers, good).await;
        assert_refused(
            (status, body),
            StatusCode::FORBIDDEN,
            "Policy doesn't allow os_compute_api:os-quota-class-sets:update to be performed.",
        );
        let bad = Some(json!({"quota_class_set": {"instances": "many"}}));
        let (status, _, _) = api.call_with_headers(Method::PUT, DEFAULT, &headers, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "Nova's schema comes before its policy");
    }
    assert_eq!(show(&api, 1, DEFAULT).await, novas_defaults("default"));
}

#[tokio::test]
async fn any_class_name_is_a_class_and_only_default_is_applied() {
    let api = Api::start().await;
    assert_eq!(
        show(&api, 1, "/v2.1/os-quota-class-sets/no-such-class").await,
        novas_defaults("no-such-class")
    );
    let (status, body) = update(&api, 1, "/v2.1/os-quota-class-sets/gold", json!({"instances": 0})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        show(&api, 1, "/v2.1/os-quota-class-sets/gold").await["quota_class_set"]["instances"],
        0
    );
    let (_, defaults) = api.get("/v2.1/os-quota-sets/demo/defaults").await;
    assert_eq!(
        defaults["quota_set"]["instances"], 10,
        "a class not `default` is not applied"
    );
    api.boot("still-fits").await;

    // A class never set shows the deployment's defaults, not the `default`
    // class's (Nova's `get_class_quotas`).
    set_defaults(&api, json!({"cores": 5})).await;
    assert_eq!(
        show(&api, 1, "/v2.1/os-quota-class-sets/silver").await,
        novas_defaults("silver")
    );
}

#[tokio::test]
async fn the_default_class_is_every_projects_defaults_and_what_a_boot_is_held_to() {
    let api = Api::start().await;
    set_defaults(&api, json!({"instances": 1, "ram": "4096", "security_groups": 9})).await;
    for uri in [
        "/v2.1/os-quota-sets/demo/defaults",
        "/v2.1/os-quota-sets/demo",
        "/v2.1/os-quota-sets/other",
        "/v2.1/os-quota-sets/demo?user_id=someone",
    ] {
        let (status, shown) = api.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {shown}");
        let set = &shown["quota_set"];
        assert_eq!(
            (&set["instances"], &set["ram"], &set["cores"], &set["security_groups"]),
            (&json!(1), &json!(4096), &json!(20), &json!(9)),
            "{uri}"
        );
    }
    let (_, limits) = api.get("/v2.1/limits").await;
    assert_eq!(limits["limits"]["absolute"]["maxTotalInstances"], 1, "{limits}");

    api.boot("first").await;
    let (status, body) = api
        .post_boot(json!({"server": {
            "name": "second", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none",
        }}))
        .await;
    assert_refused(
        (status, body),
        StatusCode::FORBIDDEN,
        "Quota exceeded for instances: Requested 1, but already used 1 of 1 instances",
    );
    // A project's own limit is over the class's.
    let (status, body) = api
        .call(
            Method::PUT,
            "/v2.1/os-quota-sets/demo",
            Some(json!({"quota_set": {"instances": 2}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    api.boot("second").await;
    // Back to more than the project uses: an update answers the class.
    let (status, body) = update(&api, 1, DEFAULT, json!({"instances": 10})).await;
    assert_eq!(
        (status, &body["quota_class_set"]["instances"]),
        (StatusCode::OK, &json!(10))
    );
}

#[tokio::test]
async fn the_default_class_holds_key_pairs_server_groups_and_metadata() {
    let api = Api::start().await;
    set_defaults(&api, json!({"key_pairs": 0, "server_groups": 0, "metadata_items": 1})).await;
    let key = json!({"keypair": {"name": "k", "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINABGpOwjISXlBZnPqjbkUMUVZSjlmmqNCvvgcBwsU1J k"}});
    assert_refused(
        api.call(Method::POST, "/v2.1/os-keypairs", Some(key)).await,
        StatusCode::FORBIDDEN,
        "Quota exceeded, too many key pairs.",
    );
    let group = json!({"server_group": {"name": "g", "policies": ["affinity"]}});
    assert_refused(
        api.call(Method::POST, "/v2.1/os-server-groups", Some(group)).await,
        StatusCode::FORBIDDEN,
        "Quota exceeded, too many server groups.",
    );
    let (status, body) = api
        .post_boot(json!({"server": {
            "name": "meta", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none",
            "metadata": {"a": "1", "b": "2"},
        }}))
        .await;
    assert_refused(
        (status, body),
        StatusCode::FORBIDDEN,
        "Maximum number of metadata items exceeds 1",
    );
    api.boot_with(json!({"metadata": {"a": "1"}})).await;
}

#[tokio::test]
async fn from_2_102_the_show_refuses_query_parameters() {
    let api = Api::start().await;
    let uri = "/v2.1/os-quota-class-sets/default?foo=1";
    api.assert_unknown_query_refused_from(102, &[], uri).await;
    // The update has no query schema: its parameters are ignored.
    let put = Some(json!({"quota_class_set": {"ram": 1}}));
    let (status, body) = api.at(104, Method::PUT, uri, put).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
