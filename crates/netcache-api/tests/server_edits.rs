//! What a user sets on a server, as Nova answers it at 2.1: the update
//! (`PUT /servers/{id}`), access addresses on a boot, the boot's flavor, image
//! and metadata checks, and the server-metadata API. Every answer is checked
//! against the project's copy of Nova's response schema; every refusal is
//! Nova's status with Nova's body.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, IMAGE};
use nova_schema::assert_satisfies;
use serde_json::{Value, json};

const MISSING: &str = "6d3c0c6e-0a9e-4c2a-9e2b-000000000000";

/// Asserts a Nova error: the status, its body key and, if given, the message.
#[track_caller]
fn assert_refused(what: &str, got: (StatusCode, Value), status: StatusCode, message: Option<&str>) {
    let (got_status, body) = got;
    assert_eq!(got_status, status, "{what}: {body}");
    assert_satisfies(what, &nova_schema::nova_error(), &body);
    let (_, fault) = body.as_object().unwrap().iter().next().unwrap();
    assert_eq!(fault["code"], status.as_u16(), "{what}: {body}");
    if let Some(message) = message {
        assert_eq!(fault["message"], message, "{what}");
    }
}

fn metadata_items(prefix: &str, count: usize) -> Value {
    Value::Object((0..count).map(|i| (format!("{prefix}{i}"), json!("v"))).collect())
}

#[tokio::test]
async fn update_renames_and_sets_access_addresses_in_novas_basic_view() {
    let api = Api::start().await;
    let id = api.boot("before").await;
    let uri = format!("/v2.1/servers/{id}");

    let body = json!({"server": {
        "name": "after",
        "accessIPv4": "1.1.1.1",
        "accessIPv6": "0000:0000:0000:0000:0000:babe:220.12.22.2",
    }});
    let (status, updated) = api.call(Method::PUT, &uri, Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_satisfies("PUT /servers/{id}", &nova_schema::update_server(), &updated);
    let server = &updated["server"];
    assert_eq!(server["id"], id.as_str());
    assert_eq!(server["name"], "after");
    assert_eq!(server["accessIPv4"], "1.1.1.1");
    assert_eq!(
        server["accessIPv6"], "::babe:dc0c:1602",
        "stored as Nova does: canonical"
    );

    // The detail view shows them; an empty update and a partial one keep them.
    let (_, shown) = api.get(&uri).await;
    assert_satisfies("GET /servers/{id}", &nova_schema::get_server(), &shown);
    assert_eq!(
        (&shown["server"]["name"], &shown["server"]["accessIPv4"]),
        (&json!("after"), &json!("1.1.1.1"))
    );
    let (status, same) = api.call(Method::PUT, &uri, Some(json!({"server": {}}))).await;
    assert_eq!(status, StatusCode::OK, "{same}");
    assert_eq!(same["server"]["name"], "after");
    let body = json!({"server": {"accessIPv4": "192.0.2.9", "OS-DCF:diskConfig": "MANUAL"}});
    let (status, partial) = api.call(Method::PUT, &uri, Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{partial}");
    assert_eq!(
        (
            &partial["server"]["name"],
            &partial["server"]["accessIPv4"],
            &partial["server"]["accessIPv6"]
        ),
        (&json!("after"), &json!("192.0.2.9"), &json!("::babe:dc0c:1602"))
    );
}

/// `OS-DCF:diskConfig` is kept as the boot, an update or a rebuild sets it
/// (Nova's `auto_disk_config`), `MANUAL` unless asked otherwise; a boot
/// checks it as Nova's schema does.
#[tokio::test]
async fn the_disk_config_is_what_the_boot_update_or_rebuild_set() {
    let api = Api::start().await;
    let (status, created) = api
        .post_boot(
            json!({"server": {"name": "auto", "flavorRef": "1", "imageRef": IMAGE, "networks": "none",
            "OS-DCF:diskConfig": "AUTO"}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    assert_eq!(created["server"]["OS-DCF:diskConfig"], "AUTO");
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    let uri = format!("/v2.1/servers/{id}");
    api.built(&id).await;
    let disk_config = |body: &Value| body["server"]["OS-DCF:diskConfig"].clone();
    assert_eq!(disk_config(&api.get(&uri).await.1), "AUTO");

    let (status, updated) = api
        .call(
            Method::PUT,
            &uri,
            Some(json!({"server": {"OS-DCF:diskConfig": "MANUAL"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(disk_config(&updated), "MANUAL");
    assert_eq!(disk_config(&api.get(&uri).await.1), "MANUAL");

    let rebuild = json!({"rebuild": {"imageRef": IMAGE, "OS-DCF:diskConfig": "AUTO"}});
    let (status, rebuilt) = api.call(Method::POST, &format!("{uri}/action"), Some(rebuild)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{rebuilt}");
    assert_eq!(disk_config(&rebuilt), "AUTO");
    assert_eq!(api.built(&id).await, "ACTIVE");
    assert_eq!(disk_config(&api.get(&uri).await.1), "AUTO");

    let plain = api.boot("plain").await;
    assert_eq!(
        disk_config(&api.get(&format!("/v2.1/servers/{plain}")).await.1),
        "MANUAL"
    );
    let (status, refused) = api
        .post_boot(
            json!({"server": {"name": "x", "flavorRef": "1", "imageRef": IMAGE, "networks": "none",
            "OS-DCF:diskConfig": "SOMETIMES"}}),
        )
        .await;
    assert_refused(
        "a boot's disk config",
        (status, refused),
        StatusCode::BAD_REQUEST,
        Some(
            "Invalid input for field/attribute OS-DCF:diskConfig. Value: SOMETIMES. 'SOMETIMES' is not one of ['AUTO', 'MANUAL']",
        ),
    );
}

/// Personality files (before 2.57) are checked as Nova's schema checks them
/// and held to the injected-file quotas (Nova's 403s), at a boot and at a
/// rebuild; within them a boot goes ahead.
#[tokio::test]
async fn personality_files_are_held_to_novas_quotas() {
    let api = Api::start().await;
    let files = |count: usize, path: &str, contents: &str| -> Value {
        (0..count)
            .map(|i| json!({"path": format!("{path}{i}"), "contents": contents}))
            .collect()
    };
    let boot = |personality: Value| {
        json!({"server": {"name": "p", "flavorRef": "1", "imageRef": IMAGE, "networks": "none",
            "personality": personality}})
    };
    let (status, body) = api.post_boot(boot(files(5, "/etc/f", "aGk="))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "Nova's default allows 5 files: {body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    api.built(&id).await;

    let long_path = format!("/{}", "p".repeat(255));
    let big = "QUFB".repeat(2561);
    let refusals = [
        (files(6, "/etc/f", "aGk="), "Personality file limit exceeded"),
        (
            files(1, &long_path, "aGk="),
            "Personality file path exceeds maximum 255",
        ),
        (
            files(1, "/etc/f", &big),
            "Personality file content exceeds maximum 10240",
        ),
    ];
    for (personality, message) in &refusals {
        let got = api.post_boot(boot(personality.clone())).await;
        assert_refused(message, got, StatusCode::FORBIDDEN, Some(message));
        let rebuild = json!({"rebuild": {"imageRef": IMAGE, "personality": personality}});
        let got = api
            .call(Method::POST, &format!("/v2.1/servers/{id}/action"), Some(rebuild))
            .await;
        assert_refused(message, got, StatusCode::FORBIDDEN, Some(message));
    }
    let got = api.post_boot(boot(files(1, "/etc/f", "This is a test file."))).await;
    assert_refused(
        "contents not in base64",
        got,
        StatusCode::BAD_REQUEST,
        Some(
            "Invalid input for field/attribute contents. Value: This is a test file.. \
             'This is a test file.' is not a 'base64'",
        ),
    );
}

#[tokio::test]
async fn update_refuses_what_novas_schema_refuses() {
    let api = Api::start().await;
    let id = api.boot("vm").await;
    let uri = format!("/v2.1/servers/{id}");
    let long = "a".repeat(256);
    let cases = [
        (
            json!({"server": {"name": "x", "adminPass": "p"}}),
            "Invalid input for field/attribute server. Value: {'name': 'x', 'adminPass': 'p'}. \
             Additional properties are not allowed ('adminPass' was unexpected)"
                .to_owned(),
        ),
        (json!({"name": "x"}), "'server' is a required property".to_owned()),
        (
            json!({"server": {"name": "x"}, "extra": 1}),
            "Additional properties are not allowed ('extra' was unexpected)".to_owned(),
        ),
        (
            json!({"server": {"name": ""}}),
            "Invalid input for field/attribute name. Value: . '' is too short".to_owned(),
        ),
        (
            json!({"server": {"name": long}}),
            format!("Invalid input for field/attribute name. Value: {long}. '{long}' is too long"),
        ),
        (
            json!({"server": {"accessIPv4": "1.1.1"}}),
            "Invalid input for field/attribute accessIPv4. Value: 1.1.1. '1.1.1' is not a 'ipv4'".to_owned(),
        ),
        (
            json!({"server": {"accessIPv6": "1.1.1.1"}}),
            "Invalid input for field/attribute accessIPv6. Value: 1.1.1.1. '1.1.1.1' is not a 'ipv6'".to_owned(),
        ),
        (
            json!({"server": {"OS-DCF:diskConfig": "SOMETIMES"}}),
            "Invalid input for field/attribute OS-DCF:diskConfig. Value: SOMETIMES. \
             'SOMETIMES' is not one of ['AUTO', 'MANUAL']"
                .to_owned(),
        ),
    ];
    for (body, message) in cases {
        let got = api.call(Method::PUT, &uri, Some(body.clone())).await;
        assert_refused(&body.to_string(), got, StatusCode::BAD_REQUEST, Some(&message));
    }
    for bad in [" leading", "trailing ", "new\nline"] {
        let got = api
            .call(Method::PUT, &uri, Some(json!({"server": {"name": bad}})))
            .await;
        assert_refused(bad, got, StatusCode::BAD_REQUEST, None);
    }
    let (_, shown) = api.get(&uri).await;
    assert_eq!(shown["server"]["name"], "vm", "nothing was changed");

    // The body is checked before the server is looked up, as Nova's schema is.
    let missing = format!("/v2.1/servers/{MISSING}");
    let got = api
        .call(Method::PUT, &missing, Some(json!({"server": {"name": "x"}})))
        .await;
    let message = format!("Instance {MISSING} could not be found.");
    assert_refused("unknown server", got, StatusCode::NOT_FOUND, Some(&message));
    let got = api
        .call(Method::PUT, &missing, Some(json!({"server": {"name": ""}})))
        .await;
    assert_refused("bad body, unknown server", got, StatusCode::BAD_REQUEST, None);
}

#[tokio::test]
async fn a_boot_takes_access_addresses_and_metadata() {
    let api = Api::start().await;
    let alt = netcache_api::images::IMAGES[1].id;
    let id = api
        .boot_active_with(json!({
            "imageRef": alt,
            "accessIPv4": "1.1.1.1",
            "accessIPv6": "::babe:202:202",
            "metadata": {"role": "web", "a-b_c:d. e": ""},
        }))
        .await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{id}")).await;
    assert_satisfies("GET /servers/{id}", &nova_schema::get_server(), &shown);
    let server = &shown["server"];
    assert_eq!(server["image"]["id"], alt, "Tempest's image_ref_alt boots too");
    assert_eq!(
        (&server["accessIPv4"], &server["accessIPv6"]),
        (&json!("1.1.1.1"), &json!("::babe:202:202"))
    );
    assert_eq!(server["metadata"], json!({"role": "web", "a-b_c:d. e": ""}));

    // Unset, they are empty strings (Nova's view).
    let plain = api.boot("plain").await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{plain}")).await;
    assert_eq!(
        (&shown["server"]["accessIPv4"], &shown["server"]["accessIPv6"]),
        (&json!(""), &json!(""))
    );
}

#[tokio::test]
async fn a_boot_is_refused_as_nova_refuses_it() {
    let api = Api::start().await;
    let boot = |fields: Value| {
        let mut server = json!({"name": "vm", "flavorRef": "1", "imageRef": IMAGE, "networks": "none"});
        server
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        json!({ "server": server })
    };
    let bad = StatusCode::BAD_REQUEST;
    let cases: Vec<(Value, StatusCode, String)> = vec![
        (json!({"flavorRef": "99"}), bad, "Flavor 99 could not be found.".into()),
        (json!({"imageRef": MISSING}), bad, "Can not find requested image".into()),
        (json!({"imageRef": ""}), bad, "Missing imageRef attribute".into()),
        (
            json!({"imageRef": "cirros"}),
            bad,
            "Invalid input for field/attribute imageRef. Value: cirros. \
             'cirros' is not valid under any of the given schemas"
                .into(),
        ),
        (
            json!({"accessIPv4": "::1"}),
            bad,
            "Invalid input for field/attribute accessIPv4. Value: ::1. '::1' is not a 'ipv4'".into(),
        ),
        (
            json!({"accessIPv6": "2001:db8::g"}),
            bad,
            "Invalid input for field/attribute accessIPv6. Value: 2001:db8::g. '2001:db8::g' is not a 'ipv6'".into(),
        ),
        (
            json!({"metadata": {"": "data1"}}),
            bad,
            "Invalid input for field/attribute metadata. Value: {'': 'data1'}. \
             Additional properties are not allowed ('' was unexpected)"
                .into(),
        ),
        (
            json!({"metadata": {"k": "v".repeat(256)}}),
            bad,
            format!(
                "Invalid input for field/attribute k. Value: {v}. '{v}' is too long",
                v = "v".repeat(256)
            ),
        ),
        (
            json!({"metadata": metadata_items("key", 129)}),
            StatusCode::FORBIDDEN,
            "Maximum number of metadata items exceeds 128".into(),
        ),
    ];
    for (fields, status, message) in cases {
        let got = api.post_boot(boot(fields.clone())).await;
        assert_refused(&fields.to_string(), got, status, Some(&message));
    }
    // Tempest's too-long keys: 256 and more characters.
    for size in [256, 257, 511, 1023] {
        let key = "k".repeat(size);
        let got = api.post_boot(boot(json!({"metadata": {key: "data1"}}))).await;
        assert_refused(&format!("a key of {size}"), got, bad, None);
    }
    let (_, servers) = api.get("/v2.1/servers").await;
    assert_eq!(servers["servers"], json!([]), "no refused boot left a server");
    // 128 items and a flavor's URL are fine.
    let fields = json!({"metadata": metadata_items("key", 128), "flavorRef": "http://127.0.0.1:8774/flavors/2"});
    let (status, body) = api.post_boot(boot(fields)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

#[tokio::test]
async fn metadata_is_listed_set_replaced_shown_and_deleted_as_in_nova() {
    let api = Api::start().await;
    let id = api.boot_active_with(json!({"metadata": {"a": "1"}})).await;
    let all = format!("/v2.1/servers/{id}/metadata");
    let item = |key: &str| format!("/v2.1/servers/{id}/metadata/{key}");
    let metadata_schema = nova_schema::server_metadata();
    let item_schema = nova_schema::server_metadata_item();

    let (status, listed) = api.get(&all).await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("GET metadata", &metadata_schema, &listed);
    assert_eq!(listed, json!({"metadata": {"a": "1"}}));

    // POST merges and answers everything.
    let (status, merged) = api
        .call(Method::POST, &all, Some(json!({"metadata": {"b": "2", "a": "one"}})))
        .await;
    assert_eq!(status, StatusCode::OK, "{merged}");
    assert_satisfies("POST metadata", &metadata_schema, &merged);
    assert_eq!(merged, json!({"metadata": {"a": "one", "b": "2"}}));

    // PUT replaces everything.
    let (status, replaced) = api.call(Method::PUT, &all, Some(json!({"metadata": {"c": "3"}}))).await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    assert_satisfies("PUT metadata", &metadata_schema, &replaced);
    assert_eq!(replaced, json!({"metadata": {"c": "3"}}));

    let (status, shown) = api.get(&item("c")).await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("GET metadata item", &item_schema, &shown);
    assert_eq!(shown, json!({"meta": {"c": "3"}}));

    let (status, set) = api
        .call(Method::PUT, &item("d"), Some(json!({"meta": {"d": "4"}})))
        .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_satisfies("PUT metadata item", &item_schema, &set);
    assert_eq!(set, json!({"meta": {"d": "4"}}));

    let (status, _) = api.call(Method::DELETE, &item("c"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, listed) = api.get(&all).await;
    assert_eq!(listed, json!({"metadata": {"d": "4"}}));
    let (_, shown) = api.get(&format!("/v2.1/servers/{id}")).await;
    assert_eq!(shown["server"]["metadata"], json!({"d": "4"}), "the server shows it");

    // Clearing is a replace with nothing.
    let (status, cleared) = api.call(Method::PUT, &all, Some(json!({"metadata": {}}))).await;
    assert_eq!((status, cleared), (StatusCode::OK, json!({"metadata": {}})));
}

#[tokio::test]
async fn metadata_calls_refuse_as_nova_does() {
    let api = Api::start().await;
    let id = api.boot_active_with(json!({"metadata": {"a": "1"}})).await;
    let all = format!("/v2.1/servers/{id}/metadata");
    let item = |key: &str| format!("/v2.1/servers/{id}/metadata/{key}");
    let bad = StatusCode::BAD_REQUEST;
    let not_found = "Metadata item was not found";

    let got = api.get(&item("nope")).await;
    assert_refused("GET a missing item", got, StatusCode::NOT_FOUND, Some(not_found));
    let got = api.call(Method::DELETE, &item("nope"), None).await;
    assert_refused("DELETE a missing item", got, StatusCode::NOT_FOUND, Some(not_found));

    let cases: Vec<(Method, String, Value, StatusCode, &str)> = vec![
        (
            Method::PUT,
            item("key"),
            json!({"meta": {"testkey": "testvalue"}}),
            bad,
            "Request body and URI mismatch",
        ),
        (
            Method::PUT,
            item("k1"),
            json!({"meta": {"k1": "v", "k2": "v"}}),
            bad,
            "Invalid input for field/attribute meta. Value: {'k1': 'v', 'k2': 'v'}. \
             {'k1': 'v', 'k2': 'v'} has too many properties",
        ),
        (
            Method::PUT,
            item("k1"),
            json!({"meta": {}}),
            bad,
            "Invalid input for field/attribute meta. Value: {}. {} does not have enough properties",
        ),
        (
            Method::PUT,
            item("k1"),
            json!({"metadata": {"k1": "v"}}),
            bad,
            "'meta' is a required property",
        ),
        (
            Method::POST,
            all.clone(),
            json!({"metadata": {"": "data1"}}),
            bad,
            "Invalid input for field/attribute metadata. Value: {'': 'data1'}. \
             Additional properties are not allowed ('' was unexpected)",
        ),
        (
            Method::PUT,
            all.clone(),
            json!({"metadata": {"": "data1"}}),
            bad,
            "Invalid input for field/attribute metadata. Value: {'': 'data1'}. \
             Additional properties are not allowed ('' was unexpected)",
        ),
        (
            Method::PUT,
            all.clone(),
            json!({"meta": {"meta1": "data1"}}),
            bad,
            "'metadata' is a required property",
        ),
        (
            Method::PUT,
            all.clone(),
            json!({"metadata": metadata_items("key", 129)}),
            StatusCode::FORBIDDEN,
            "Maximum number of metadata items exceeds 128",
        ),
        // The quota counts the merged items: one stored and 128 new.
        (
            Method::POST,
            all.clone(),
            json!({"metadata": metadata_items("key", 128)}),
            StatusCode::FORBIDDEN,
            "Maximum number of metadata items exceeds 128",
        ),
    ];
    for (method, uri, body, status, message) in cases {
        let got = api.call(method.clone(), &uri, Some(body.clone())).await;
        assert_refused(&format!("{method} {uri} {body}"), got, status, Some(message));
    }
    let (_, listed) = api.get(&all).await;
    assert_eq!(listed, json!({"metadata": {"a": "1"}}), "nothing was changed");

    // A server that is not there (or not the caller's) is a 404 for every call.
    let other = format!("/v2.1/servers/{MISSING}/metadata");
    let calls = [
        (Method::GET, other.clone(), None),
        (Method::POST, other.clone(), Some(json!({"metadata": {"k": "v"}}))),
        (Method::PUT, other.clone(), Some(json!({"metadata": {"k": "v"}}))),
        (Method::GET, format!("{other}/k"), None),
        (Method::PUT, format!("{other}/k"), Some(json!({"meta": {"k": "v"}}))),
        (Method::DELETE, format!("{other}/k"), None),
    ];
    for (method, uri, body) in calls {
        let got = api.call(method.clone(), &uri, body).await;
        let message = format!("Instance {MISSING} could not be found.");
        assert_refused(&format!("{method} {uri}"), got, StatusCode::NOT_FOUND, Some(&message));
    }
}

/// An id whose escapes are not UTF-8 is looked up like any other, as Nova does:
/// its 404 in Nova's JSON, not a plain-text 400 from the path's decoding.
/// Issue 33 defect 5.
#[tokio::test]
async fn an_undecodable_server_id_is_novas_404() {
    let api = Api::start().await;
    for (method, uri) in [
        (Method::GET, "/v2.1/servers/%ff"),
        (Method::GET, "/v2.1/servers/%ff/os-instance-actions"),
        (Method::DELETE, "/v2.1/servers/%ff"),
    ] {
        let got = api.call(method.clone(), uri, None).await;
        assert_refused(
            &format!("{method} {uri}"),
            got,
            StatusCode::NOT_FOUND,
            Some("Instance %ff could not be found."),
        );
    }
}
