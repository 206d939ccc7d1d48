//! os-keypairs past microversion 2.1, each change at its boundary (N-1, N):
//! 2.2 `type` and 201/204, 2.10 an admin's `user_id`, 2.35 paging, 2.75
//! unknown query parameters, 2.92 no generation and `@`/`.` in names; views
//! checked against copies of Nova's response schemas of each version.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, error_message as message};
use netcache_testenv::json::items;
use nova_schema::keypairs as schema;
use nova_schema::{assert_satisfies, list_keypairs as list_v21};
use serde_json::{Value, json};

const ED25519_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINABGpOwjISXlBZnPqjbkUMUVZSjlmmqNCvvgcBwsU1J fixture@netcache";
// `openssl req -x509 -newkey ec`; the fingerprint is `openssl x509 -fingerprint -sha1`'s.
const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----\nMIIBizCCATGgAwIBAgIUXDUVmGqSx66mjHoF5bNUIYy8LiAwCgYIKoZIzj0EAwIw\nGzEZMBcGA1UEAwwQbmV0Y2FjaGUtZml4dHVyZTAeFw0yNjEyMDUwMTM5MzJaFw0z\nNjEyMDIwMTM5MzJaMBsxGTAXBgNVBAMMEG5ldGNhY2hlLWZpeHR1cmUwWTATBgcq\nhkjOPQIBBggqhkjOPQMBBwNCAATiEMPfN5LrOcppQb9w3uqPPcI7ge3mMOG6wzWL\naYP4aCJEimsrn9BsUXNW4+JNWJTND3n1DzV2PTCIYeQFdhMUo1MwUTAdBgNVHQ4E\nFgQUYOSGPvlF/yt4enyZC/CG8KeaFLwwHwYDVR0jBBgwFoAUYOSGPvlF/yt4enyZ\nC/CG8KeaFLwwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAwXjyy\npmwuUcImhYs7BpDEn6vrZ80pAYjxnVE7h1oiewIhAKShYZqs20GY7xSabhyEaxvo\nvHqQyNBWuE63qZCyiLZT\n-----END CERTIFICATE-----";
const CERTIFICATE_FINGERPRINT: &str = "e2:ff:54:99:fe:78:d2:52:22:06:62:6e:29:c3:ff:83:21:dc:33:1a";

/// Callers: a user and their roles.
const ALICE: &[(&str, &str)] = &[("x-user-id", "alice"), ("x-roles", "member")];
const BOB: &[(&str, &str)] = &[("x-user-id", "bob"), ("x-roles", "member")];
const CAROL: &[(&str, &str)] = &[("x-user-id", "carol"), ("x-roles", "member")];
const ROOT: &[(&str, &str)] = &[("x-user-id", "root"), ("x-roles", "admin")];

async fn create(api: &Api, minor: u16, keypair: Value) -> (StatusCode, Value) {
    api.at_as(
        minor,
        ALICE,
        Method::POST,
        "/v2.1/os-keypairs",
        Some(json!({"keypair": keypair})),
    )
    .await
}

#[tokio::test]
async fn from_2_2_keypairs_have_a_type_and_create_is_201_and_delete_204() {
    let api = Api::start().await;
    // 2.1: no `type` in the body or the views, 200 and 202.
    let (status, body) = create(
        &api,
        1,
        json!({"name": "old", "public_key": ED25519_KEY, "type": "ssh"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(message(&body), "Invalid input for field/attribute keypair. Value: {'name': 'old', 'public_key': '@KEY@', 'type': 'ssh'}. Additional properties are not allowed ('type' was unexpected)".replace("@KEY@", ED25519_KEY));
    let (status, body) = create(&api, 1, json!({"name": "old", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["keypair"].get("type").is_none(), "{body}");
    let (_, listed) = api.at_as(1, ALICE, Method::GET, "/v2.1/os-keypairs", None).await;
    assert_satisfies("GET /os-keypairs 2.1", &list_v21(), &listed);

    // 2.2: `type` (ssh by default, x509 imported as a certificate or generated), 201.
    let (status, body) = create(&api, 2, json!({"name": "ssh", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_satisfies("POST /os-keypairs 2.2", &schema::create_keypair(false), &body);
    assert_eq!(body["keypair"]["type"], "ssh");
    let (status, body) = create(
        &api,
        2,
        json!({"name": "cert", "public_key": CERTIFICATE, "type": "x509"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["keypair"]["type"], "x509");
    assert_eq!(body["keypair"]["fingerprint"], CERTIFICATE_FINGERPRINT);
    let (status, body) = create(
        &api,
        2,
        json!({"name": "bad", "public_key": ED25519_KEY, "type": "x509"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "an SSH key is no certificate: {body}");
    assert!(
        message(&body).starts_with("Keypair data is invalid: failed to generate X509 fingerprint."),
        "{body}"
    );
    let (status, body) = create(
        &api,
        2,
        json!({"name": "bad", "public_key": ED25519_KEY, "type": "rsa"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        message(&body),
        "Invalid input for field/attribute type. Value: rsa. 'rsa' is not one of ['ssh', 'x509']"
    );

    let (status, listed) = api.at_as(2, ALICE, Method::GET, "/v2.1/os-keypairs", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("GET /os-keypairs 2.2", &schema::list_keypairs(false), &listed);
    let types: Vec<(&str, &str)> = items(&listed, "keypairs")
        .iter()
        .map(|k| {
            (
                k["keypair"]["name"].as_str().unwrap(),
                k["keypair"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(types, [("cert", "x509"), ("old", "ssh"), ("ssh", "ssh")]);
    let (status, shown) = api.at_as(2, ALICE, Method::GET, "/v2.1/os-keypairs/cert", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("GET /os-keypairs/{name} 2.2", &schema::get_keypair(), &shown);
    assert_eq!(shown["keypair"]["type"], "x509");

    // 2.2: x509 without a certificate generates Nova's WinRM one; the private
    // half, a base64 PKCS#12 bundle, is answered once and never shown again.
    let (status, body) = create(&api, 2, json!({"name": "winrm", "type": "x509"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_satisfies("POST /os-keypairs 2.2", &schema::create_keypair(false), &body);
    assert_eq!(body["keypair"]["type"], "x509");
    let certificate = body["keypair"]["public_key"].as_str().unwrap();
    assert!(certificate.starts_with("-----BEGIN CERTIFICATE-----\n"), "{body}");
    assert!(
        body["keypair"]["private_key"]
            .as_str()
            .is_some_and(|key| !key.is_empty()),
        "{body}"
    );
    let (status, shown) = api.at_as(2, ALICE, Method::GET, "/v2.1/os-keypairs/winrm", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["keypair"]["public_key"], certificate);
    assert_eq!(shown["keypair"]["fingerprint"], body["keypair"]["fingerprint"]);
    assert!(shown["keypair"].get("private_key").is_none(), "{shown}");

    let (status, _) = api.at_as(1, ALICE, Method::DELETE, "/v2.1/os-keypairs/old", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _) = api
        .at_as(2, ALICE, Method::DELETE, "/v2.1/os-keypairs/cert", None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn from_2_10_an_admin_names_the_user_and_others_may_not() {
    let api = Api::start().await;
    let for_bob = json!({"keypair": {"name": "k", "public_key": ED25519_KEY, "user_id": "bob"}});
    // 2.9: `user_id` is no key of the body, and the query's is ignored.
    let (status, body) = api
        .at_as(9, ROOT, Method::POST, "/v2.1/os-keypairs", Some(for_bob.clone()))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // 2.10: an admin creates, lists, shows and deletes bob's.
    let (status, body) = api
        .at_as(10, ROOT, Method::POST, "/v2.1/os-keypairs", Some(for_bob.clone()))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["keypair"]["user_id"], "bob");
    let (_, bobs) = api.at_as(10, BOB, Method::GET, "/v2.1/os-keypairs", None).await;
    assert_eq!(bobs["keypairs"].as_array().unwrap().len(), 1, "{bobs}");
    let (_, roots) = api
        .at_as(9, ROOT, Method::GET, "/v2.1/os-keypairs?user_id=bob", None)
        .await;
    assert_eq!(roots["keypairs"], json!([]), "2.9 ignores user_id: {roots}");
    let (_, listed) = api
        .at_as(10, ROOT, Method::GET, "/v2.1/os-keypairs?user_id=bob", None)
        .await;
    assert_eq!(listed["keypairs"].as_array().unwrap().len(), 1, "{listed}");
    let (status, shown) = api
        .at_as(10, ROOT, Method::GET, "/v2.1/os-keypairs/k?user_id=bob", None)
        .await;
    assert_eq!(
        (status, shown["keypair"]["user_id"].clone()),
        (StatusCode::OK, json!("bob"))
    );
    // A member may not act on another user's.
    let (status, body) = api
        .at_as(10, CAROL, Method::GET, "/v2.1/os-keypairs?user_id=bob", None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        message(&body),
        "Policy doesn't allow os_compute_api:os-keypairs:index to be performed."
    );
    let (status, _) = api
        .at_as(10, CAROL, Method::POST, "/v2.1/os-keypairs", Some(for_bob))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = api
        .at_as(10, CAROL, Method::DELETE, "/v2.1/os-keypairs/k?user_id=bob", None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = api
        .at_as(10, ROOT, Method::DELETE, "/v2.1/os-keypairs/k?user_id=bob", None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, bobs) = api.at_as(10, BOB, Method::GET, "/v2.1/os-keypairs", None).await;
    assert_eq!(bobs["keypairs"], json!([]));
}

#[tokio::test]
async fn from_2_35_keypairs_are_paged_by_name_with_a_next_link() {
    let api = Api::start().await;
    for name in ["c", "a", "b"] {
        let (status, _) = create(&api, 35, json!({"name": name, "public_key": ED25519_KEY})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let get = |uri: &'static str, minor: u16| api.at_as(minor, ALICE, Method::GET, uri, None);
    let names = |body: &Value| -> Vec<String> {
        items(body, "keypairs")
            .iter()
            .map(|k| k["keypair"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // 2.34: limit and marker are ignored.
    let (_, all) = get("/v2.1/os-keypairs?limit=1&marker=a", 34).await;
    assert_eq!(names(&all), ["a", "b", "c"]);
    assert!(all.get("keypairs_links").is_none());
    let (_, first) = get("/v2.1/os-keypairs?limit=2", 35).await;
    assert_satisfies("GET /os-keypairs 2.35", &schema::list_keypairs(true), &first);
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(
        first["keypairs_links"],
        json!([{"rel": "next", "href": "http://127.0.0.1:8774/v2.1/os-keypairs?limit=2&marker=b"}])
    );
    let (_, rest) = get("/v2.1/os-keypairs?limit=2&marker=b", 35).await;
    assert_satisfies("GET /os-keypairs 2.35", &schema::list_keypairs(true), &rest);
    assert_eq!(names(&rest), ["c"]);
    assert!(rest.get("keypairs_links").is_none(), "not full: {rest}");
    let (status, body) = get("/v2.1/os-keypairs?marker=zzz", 35).await;
    assert_eq!(
        (status, message(&body)),
        (StatusCode::BAD_REQUEST, "Marker zzz could not be found.")
    );
    let (status, body) = get("/v2.1/os-keypairs?limit=-1", 35).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        message(&body),
        "Invalid input for query parameters limit. Value: -1. '-1' does not match '^[0-9]*$'"
    );
}

#[tokio::test]
async fn from_2_75_unknown_query_parameters_are_refused() {
    let api = Api::start().await;
    let (status, _) = create(&api, 75, json!({"name": "k", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::CREATED);
    for uri in ["/v2.1/os-keypairs?foo=1", "/v2.1/os-keypairs/k?foo=1"] {
        api.assert_unknown_query_refused_from(75, ALICE, uri).await;
    }
    let (status, _) = api
        .at_as(75, ALICE, Method::GET, "/v2.1/os-keypairs/k?limit=1", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "show has no paging");
    let (status, _) = api
        .at_as(75, ALICE, Method::GET, "/v2.1/os-keypairs?limit=1&user_id=alice", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api
        .at_as(75, ALICE, Method::DELETE, "/v2.1/os-keypairs/k?foo=1", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = api
        .at_as(75, ALICE, Method::DELETE, "/v2.1/os-keypairs/k?user_id=alice", None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn from_2_92_a_public_key_is_required_and_names_may_hold_at_and_dot() {
    let api = Api::start().await;
    let (status, body) = create(&api, 91, json!({"name": "generated"})).await;
    assert_eq!(status, StatusCode::CREATED, "2.91 generates: {body}");
    assert_satisfies("POST /os-keypairs 2.91", &schema::create_keypair(false), &body);
    assert!(body["keypair"]["private_key"].is_string());
    let (status, body) = create(&api, 92, json!({"name": "generated2"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        message(&body),
        "Invalid input for field/attribute keypair. Value: {'name': 'generated2'}. 'public_key' is a required property"
    );

    let (status, body) = create(&api, 91, json!({"name": "me@host.example", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = create(&api, 92, json!({"name": "me@host.example", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_satisfies("POST /os-keypairs 2.92", &schema::create_keypair(true), &body);
    let (status, _) = api
        .at_as(92, ALICE, Method::GET, "/v2.1/os-keypairs/me@host.example", None)
        .await;
    assert_eq!(status, StatusCode::OK);
}
