//! os-keypairs at microversion 2.1: each user's own key pairs, imported or
//! generated, in Nova's views (checked against the project's copies of Nova's
//! response schemas) with Nova's errors; and a boot's `key_name`. The caller's
//! user is the noauth `X-User-Id` header.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, IMAGE};
use nova_schema::{assert_nova_error, assert_satisfies};
use serde_json::{Value, json};

// Made with `ssh-keygen -t rsa -b 2048` and `-t ed25519`; the fingerprints are
// `ssh-keygen -l -E md5`'s.
const RSA_KEY: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCiaM+xl25Iv6Ja3cVo9zQEIiUS3Pftke5Vh0qHbNHYWz2J14sTW2TIaiWbjjC5Far2pH2s+4SQIU6JdOZbsjXMxkfyh9ERS9pMnrcTJKSV+7X+mAFEM7IBByDfLy5dz/5ay8UPQrGsnjW7ufI8MO6r4arawDNMI+2fTlK6mKsiW67w6grRz49L69uscCYMSNV48qAu62UZeZCbjZ4sasMLptl/UP6QUJ76jdfu/ZIU6BpCQt8j7iRJNe7f41h/g4myEIBKE6jFkiJX434Leq/W8WyLJ9EeEIiBh91IrjfOFPRHRtQxX5rV7Kejm77tSJBRORPWNI+uZVJxnv4uf+fb fixture@netcache";
const RSA_FINGERPRINT: &str = "fe:5b:92:0c:25:d3:e6:c8:fc:10:18:48:eb:dd:43:0d";
const ED25519_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINABGpOwjISXlBZnPqjbkUMUVZSjlmmqNCvvgcBwsU1J fixture@netcache";
const ED25519_FINGERPRINT: &str = "9d:26:20:4a:ed:e4:65:93:f9:b7:2c:be:64:68:3e:3c";

/// A call as `user` (the noauth `X-User-Id`), in the default project.
async fn call_as(api: &Api, user: &str, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let (status, _, body) = api.call_with_headers(method, uri, &[("x-user-id", user)], body).await;
    (status, body)
}

/// A boot at 2.37 (`"networks": "none"`) as `user`.
async fn boot_as(api: &Api, user: &str, body: Value) -> (StatusCode, Value) {
    api.at_as(37, &[("x-user-id", user)], Method::POST, "/v2.1/servers", Some(body))
        .await
}

async fn create(api: &Api, user: &str, keypair: Value) -> (StatusCode, Value) {
    let (status, body) = call_as(
        api,
        user,
        Method::POST,
        "/v2.1/os-keypairs",
        Some(json!({"keypair": keypair})),
    )
    .await;
    if status == StatusCode::OK {
        assert_satisfies("POST /os-keypairs", &nova_schema::create_keypair(), &body);
    }
    (status, body)
}

async fn list(api: &Api, user: &str) -> Vec<Value> {
    let (status, body) = call_as(api, user, Method::GET, "/v2.1/os-keypairs", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies("GET /os-keypairs", &nova_schema::list_keypairs(), &body);
    body["keypairs"].as_array().unwrap().clone()
}

async fn show(api: &Api, user: &str, name: &str) -> (StatusCode, Value) {
    let (status, body) = call_as(api, user, Method::GET, &format!("/v2.1/os-keypairs/{name}"), None).await;
    if status == StatusCode::OK {
        assert_satisfies("GET /os-keypairs/{name}", &nova_schema::get_keypair(), &body);
    }
    (status, body)
}

/// `user` has no key pair `name`: its show and its delete are Nova's 404.
async fn assert_no_keypair(api: &Api, user: &str, name: &str) {
    let message = format!("Keypair {name} not found for user {user}");
    assert_nova_error(show(api, user, name).await, StatusCode::NOT_FOUND, &message);
    let uri = format!("/v2.1/os-keypairs/{name}");
    assert_nova_error(
        call_as(api, user, Method::DELETE, &uri, None).await,
        StatusCode::NOT_FOUND,
        &message,
    );
}

#[tokio::test]
async fn an_imported_keypair_is_listed_shown_and_deleted_in_novas_2_1_views() {
    let api = Api::start().await;
    assert_eq!(list(&api, "alice").await, Vec::<Value>::new());

    let (status, created) = create(&api, "alice", json!({"name": "laptop", "public_key": RSA_KEY})).await;
    assert_eq!(status, StatusCode::OK, "200 at 2.1, not 201: {created}");
    assert_eq!(
        created,
        json!({"keypair": {"name": "laptop", "public_key": RSA_KEY, "fingerprint": RSA_FINGERPRINT, "user_id": "alice"}}),
        "an imported key pair has no private key"
    );

    assert_eq!(
        list(&api, "alice").await,
        [json!({"keypair": {"name": "laptop", "public_key": RSA_KEY, "fingerprint": RSA_FINGERPRINT}})]
    );

    let (status, shown) = show(&api, "alice", "laptop").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    let keypair = &shown["keypair"];
    for (field, value) in [
        ("name", json!("laptop")),
        ("public_key", json!(RSA_KEY)),
        ("fingerprint", json!(RSA_FINGERPRINT)),
        ("user_id", json!("alice")),
        ("deleted", json!(false)),
        ("deleted_at", Value::Null),
        ("updated_at", Value::Null),
    ] {
        assert_eq!(keypair[field], value, "{field}: {shown}");
    }
    assert!(keypair["id"].as_i64().is_some_and(|id| id > 0), "{shown}");

    let (status, body) = call_as(&api, "alice", Method::DELETE, "/v2.1/os-keypairs/laptop", None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "202 at 2.1, not 204: {body}");
    assert_no_keypair(&api, "alice", "laptop").await;
    assert_eq!(list(&api, "alice").await, Vec::<Value>::new());
}

#[tokio::test]
async fn a_generated_keypair_hands_its_private_key_out_once() {
    let api = Api::start().await;
    let (status, created) = create(&api, "alice", json!({"name": "generated"})).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let keypair = &created["keypair"];
    let public_key = keypair["public_key"].as_str().unwrap();
    assert!(
        public_key.starts_with("ssh-rsa AAAA"),
        "Nova 2.1 generates RSA: {public_key}"
    );
    let private_key = keypair["private_key"].as_str().unwrap();
    assert!(
        private_key.starts_with("-----BEGIN RSA PRIVATE KEY-----"),
        "{private_key}"
    );
    assert_eq!(keypair["user_id"], "alice");

    // Not kept: no later view shows it.
    let (_, shown) = show(&api, "alice", "generated").await;
    assert_eq!(shown["keypair"]["public_key"], public_key);
    assert!(shown["keypair"].get("private_key").is_none(), "{shown}");
    assert!(!list(&api, "alice").await[0].to_string().contains("PRIVATE"));

    // The fingerprint is the public key's: importing that key gives the same one.
    let (status, imported) = create(&api, "alice", json!({"name": "again", "public_key": public_key})).await;
    assert_eq!(status, StatusCode::OK, "{imported}");
    assert_eq!(imported["keypair"]["fingerprint"], keypair["fingerprint"]);
    assert!(imported["keypair"].get("private_key").is_none());
}

#[tokio::test]
async fn bad_keypair_requests_get_novas_4xx_and_create_nothing() {
    let api = Api::start().await;
    let (status, _) = create(&api, "alice", json!({"name": "taken", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::OK);

    let unsafe_name = "Keypair data is invalid: Keypair name contains unsafe characters";
    let length = "Keypair data is invalid: Keypair name must be string and between 1 and 255 characters long";
    let bad_key = "Keypair data is invalid: failed to generate fingerprint";
    for (keypair, status, message) in [
        (json!({"name": "a/b"}), StatusCode::BAD_REQUEST, unsafe_name),
        (
            json!({"name": "dotted.name", "public_key": RSA_KEY}),
            StatusCode::BAD_REQUEST,
            unsafe_name,
        ),
        (json!({"name": ""}), StatusCode::BAD_REQUEST, length),
        (json!({"name": "x".repeat(256)}), StatusCode::BAD_REQUEST, length),
        (
            json!({"name": "k", "public_key": "ssh-rsa not-a-key"}),
            StatusCode::BAD_REQUEST,
            bad_key,
        ),
        (json!({"name": "k", "public_key": ""}), StatusCode::BAD_REQUEST, bad_key),
        (
            json!({"name": "k", "public_key": "-----BEGIN PUBLIC KEY-----"}),
            StatusCode::BAD_REQUEST,
            bad_key,
        ),
        (
            json!({"name": "taken", "public_key": RSA_KEY}),
            StatusCode::CONFLICT,
            "Key pair 'taken' already exists.",
        ),
        (
            json!({"name": "taken"}),
            StatusCode::CONFLICT,
            "Key pair 'taken' already exists.",
        ),
        (
            json!({"public_key": "k"}),
            StatusCode::BAD_REQUEST,
            "Invalid input for field/attribute keypair. Value: {'public_key': 'k'}. 'name' is a required property",
        ),
    ] {
        assert_nova_error(create(&api, "alice", keypair).await, status, message);
    }

    // Bodies Nova's 2.1 schema refuses: no `type` or `user_id` before 2.2/2.10.
    for body in [
        json!({"keypair": {"name": "k", "type": "ssh"}}),
        json!({"keypair": {"name": "k", "user_id": "bob"}}),
        json!({"keypair": {"name": 5}}),
        json!({"keypair": {"name": "k", "public_key": 5}}),
        json!({"keypair": "k"}),
        json!({"name": "k"}),
        json!({"keypair": {"name": "k"}, "extra": 1}),
        json!([]),
    ] {
        let (status, answer) = call_as(&api, "alice", Method::POST, "/v2.1/os-keypairs", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_satisfies("an error", &nova_schema::nova_error(), &answer);
        assert_eq!(answer["badRequest"]["code"], 400, "{body}: {answer}");
    }
    let (status, answer) = call_as(&api, "alice", Method::POST, "/v2.1/os-keypairs", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");

    let names: Vec<Value> = list(&api, "alice")
        .await
        .iter()
        .map(|k| k["keypair"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("taken")]);
    let (_, shown) = show(&api, "alice", "taken").await;
    assert_eq!(
        shown["keypair"]["fingerprint"], ED25519_FINGERPRINT,
        "the first one stays"
    );
}

#[tokio::test]
async fn another_user_can_neither_see_nor_delete_a_keypair() {
    let api = Api::start().await;
    let (status, _) = create(&api, "alice", json!({"name": "mine", "public_key": RSA_KEY})).await;
    assert_eq!(status, StatusCode::OK);

    // bob is in the same project, with the admin role too (the test client's).
    assert_eq!(list(&api, "bob").await, Vec::<Value>::new());
    assert_no_keypair(&api, "bob", "mine").await;
    let (status, _) = show(&api, "alice", "mine").await;
    assert_eq!(status, StatusCode::OK, "alice's key pair survives bob's delete");

    // Names are unique per user: bob may have a "mine" of his own.
    let (status, bobs) = create(&api, "bob", json!({"name": "mine", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::OK, "{bobs}");
    assert_eq!(bobs["keypair"]["user_id"], "bob");
    let fingerprint = |list: Vec<Value>| list[0]["keypair"]["fingerprint"].clone();
    assert_eq!(fingerprint(list(&api, "alice").await), RSA_FINGERPRINT);
    assert_eq!(fingerprint(list(&api, "bob").await), ED25519_FINGERPRINT);
    let (status, _) = call_as(&api, "bob", Method::DELETE, "/v2.1/os-keypairs/mine", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(fingerprint(list(&api, "alice").await), RSA_FINGERPRINT);
}

#[tokio::test]
async fn a_boot_names_one_of_the_callers_keypairs_and_the_server_shows_it() {
    let api = Api::start().await;
    let (status, _) = create(&api, "alice", json!({"name": "boot key", "public_key": ED25519_KEY})).await;
    assert_eq!(status, StatusCode::OK);
    let boot = |key_name: Value| json!({"server": {"name": "vm", "flavorRef": "1", "imageRef": IMAGE, "networks": "none", "key_name": key_name}});

    let (status, created) = boot_as(&api, "alice", boot(json!("boot key"))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let id = created["server"]["id"].as_str().unwrap();
    let (status, shown) = call_as(&api, "alice", Method::GET, &format!("/v2.1/servers/{id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_satisfies("GET /servers/{id}", &nova_schema::get_server(), &shown);
    assert_eq!(shown["server"]["key_name"], "boot key");
    let (_, detail) = api.get("/v2.1/servers/detail").await;
    assert_eq!(detail["servers"][0]["key_name"], "boot key");

    let without = api.boot("no-key").await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{without}")).await;
    assert_eq!(shown["server"]["key_name"], Value::Null);

    // Not a key pair of the caller's: Nova's 400, and no server.
    for (user, key_name) in [("alice", "nope"), ("bob", "boot key")] {
        assert_nova_error(
            boot_as(&api, user, boot(json!(key_name))).await,
            StatusCode::BAD_REQUEST,
            "Invalid key_name provided.",
        );
    }
    let (_, servers) = api.get("/v2.1/servers").await;
    assert_eq!(servers["servers"].as_array().unwrap().len(), 2, "{servers}");
}

/// A body Nova's schema refuses is answered in its validator's words, not the
/// JSON parser's (`unknown field `type` … at line 1 column 19`): an unexpected
/// key, a value of the wrong type, a missing key; a body that is not JSON is
/// Nova's "Malformed request body". Issue 33 defect 5.
#[tokio::test]
async fn refused_bodies_are_worded_as_novas_validator_words_them() {
    let api = Api::start().await;
    let invalid = "Invalid input for field/attribute";
    for (body, message) in [
        (
            json!({"keypair": {"name": "k", "type": "ssh"}}),
            format!(
                "{invalid} keypair. Value: {{'name': 'k', 'type': 'ssh'}}. Additional properties are not allowed ('type' was unexpected)"
            ),
        ),
        (
            json!({"keypair": {"type": "ssh", "name": "k", "user_id": "bob"}}),
            format!(
                "{invalid} keypair. Value: {{'type': 'ssh', 'name': 'k', 'user_id': 'bob'}}. Additional properties are not allowed ('type', 'user_id' were unexpected)"
            ),
        ),
        (
            json!({"keypair": {"name": "k"}, "extra": 1}),
            "Additional properties are not allowed ('extra' was unexpected)".to_owned(),
        ),
        (
            json!({"keypair": {"name": 5}}),
            format!("{invalid} name. Value: 5. 5 is not of type 'string'"),
        ),
        (
            json!({"keypair": {"name": "k", "public_key": ["x"]}}),
            format!("{invalid} public_key. Value: ['x']. ['x'] is not of type 'string'"),
        ),
        (
            json!({"keypair": "k"}),
            format!("{invalid} keypair. Value: k. 'k' is not of type 'object'"),
        ),
        (json!([]), "[] is not of type 'object'".to_owned()),
        (json!({}), "'keypair' is a required property".to_owned()),
    ] {
        let got = call_as(&api, "alice", Method::POST, "/v2.1/os-keypairs", Some(body)).await;
        assert_nova_error(got, StatusCode::BAD_REQUEST, &message);
    }
    let got = api.call_raw(Method::POST, "/v2.1/os-keypairs", "{\"keypair\": ").await;
    assert_nova_error(got, StatusCode::BAD_REQUEST, "Malformed request body");
}
