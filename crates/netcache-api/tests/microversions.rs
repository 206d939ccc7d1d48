//! Microversions 2.2 through 2.104 of the servers API: each field a later
//! version adds to the server views appears from that version on and not
//! before; the request fields that came with a version are refused before it;
//! server tags (2.26), lock reasons (2.73) and the whole-server answers of an
//! update (2.75).

mod common;

use axum::http::{Method, StatusCode};
use common::{Api, IMAGE, error_message};
use netcache_testenv::json::{items, sorted_strings};
use serde_json::{Value, json};

/// A boot request with `fields`, without networks ("none", from 2.37).
fn boot(fields: Value) -> Value {
    boot_at(37, fields)
}

/// The same at `2.minor`: before 2.37 with the project's one network.
fn boot_at(minor: u16, fields: Value) -> Value {
    let networks = if minor >= 37 { json!("none") } else { json!([]) };
    let mut server = json!({"name": "Web Server_1", "flavorRef": "1", "imageRef": IMAGE, "networks": networks});
    server
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    json!({ "server": server })
}

async fn booted(api: &Api, minor: u16, body: Value) -> String {
    let (status, created) = api.at(minor, Method::POST, "/v2.1/servers", Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    created["server"]["id"].as_str().unwrap().to_owned()
}

async fn shown(api: &Api, minor: u16, id: &str) -> Value {
    let (status, body) = api.at(minor, Method::GET, &format!("/v2.1/servers/{id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["server"].clone()
}

/// A member's view (no `OS-EXT-SRV-ATTR:*`, no `host_status`).
async fn shown_to_member(api: &Api, minor: u16, id: &str) -> Value {
    let (status, body) = api
        .at_as(
            minor,
            &[("x-roles", "member")],
            Method::GET,
            &format!("/v2.1/servers/{id}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["server"].clone()
}

#[tokio::test]
async fn each_field_appears_from_its_microversion_on() {
    let api = Api::start().await;
    let id = booted(
        &api,
        100,
        json!({
            "server": boot(json!({
                "description": "the web tier",
                "tags": ["web", "prod"],
                "availability_zone": "nova",
                "trusted_image_certificates": ["cert-1"],
                "user_data": "IyEvYmluL3NoCg==",
            }))["server"],
            "os:scheduler_hints": {"near": ["x"]},
        }),
    )
    .await;
    assert_eq!(api.built(&id).await, "ACTIVE");
    // (field, the version that adds it, its value from then on)
    let fields: [(&str, u16, Value); 9] = [
        ("locked", 9, json!(false)),
        ("host_status", 16, json!("UP")),
        ("description", 19, json!("the web tier")),
        ("tags", 26, json!(["prod", "web"])),
        ("trusted_image_certificates", 63, json!(["cert-1"])),
        ("locked_reason", 73, Value::Null),
        ("pinned_availability_zone", 96, json!("nova")),
        ("scheduler_hints", 100, json!({"near": ["x"]})),
        ("OS-EXT-SRV-ATTR:hostname", 3, json!("web-server-1")),
    ];
    for (field, since, value) in fields {
        assert!(
            shown(&api, since - 1, &id).await.get(field).is_none(),
            "{field} before 2.{since}"
        );
        assert_eq!(shown(&api, since, &id).await[field], value, "{field} at 2.{since}");
    }
    // The flavor is a reference until 2.47, then what the server was built with.
    assert_eq!(shown(&api, 46, &id).await["flavor"]["id"], "1");
    let flavor = shown(&api, 47, &id).await["flavor"].clone();
    assert_eq!(
        flavor,
        json!({"vcpus": 1, "ram": 512, "disk": 1, "ephemeral": 0, "swap": 0, "original_name": "m1.tiny", "extra_specs": {}}),
    );
    // The image gains its (netcache's images have none) properties at 2.98.
    assert!(shown(&api, 97, &id).await["image"].get("properties").is_none());
    assert_eq!(shown(&api, 98, &id).await["image"]["properties"], json!({}));
    // 2.3's extended attributes are an admin's; 2.90 shows the hostname to all.
    let admin = shown(&api, 3, &id).await;
    assert_eq!(admin["OS-EXT-SRV-ATTR:launch_index"], 0);
    assert_eq!(admin["OS-EXT-SRV-ATTR:user_data"], "IyEvYmluL3NoCg==");
    assert!(
        admin["OS-EXT-SRV-ATTR:reservation_id"]
            .as_str()
            .unwrap()
            .starts_with("r-")
    );
    assert!(admin["OS-EXT-SRV-ATTR:host"].is_string());
    let member = shown_to_member(&api, 89, &id).await;
    for hidden in ["OS-EXT-SRV-ATTR:host", "OS-EXT-SRV-ATTR:hostname", "host_status"] {
        assert!(member.get(hidden).is_none(), "{hidden} shown to a member: {member}");
    }
    assert_eq!(
        shown_to_member(&api, 90, &id).await["OS-EXT-SRV-ATTR:hostname"],
        "web-server-1"
    );
}

#[tokio::test]
async fn request_fields_are_refused_before_their_microversion() {
    let api = Api::start().await;
    for (fields, minor) in [
        (json!({"description": "d"}), 19),
        (json!({"tags": ["a"]}), 52),
        (json!({"trusted_image_certificates": ["c"]}), 63),
        (json!({"hostname": "web"}), 90),
    ] {
        let (status, body) = api
            .at(
                minor - 1,
                Method::POST,
                "/v2.1/servers",
                Some(boot_at(minor - 1, fields.clone())),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{fields} at 2.{}: {body}", minor - 1);
        let message = body["badRequest"]["message"].as_str().unwrap();
        assert!(message.contains("Additional properties are not allowed"), "{message}");
        let (status, body) = api
            .at(
                minor,
                Method::POST,
                "/v2.1/servers",
                Some(boot_at(minor, fields.clone())),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{fields} at 2.{minor}: {body}");
    }
    // Personality files went with 2.57.
    let files = json!({"personality": [{"path": "/etc/motd", "contents": "aGk="}]});
    let (status, _) = api
        .at(56, Method::POST, "/v2.1/servers", Some(boot_at(56, files.clone())))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _) = api.at(57, Method::POST, "/v2.1/servers", Some(boot(files))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // 2.37 makes `networks` required.
    // netcache takes "none" and "auto" before 2.37 too (its own CLI and
    // older clients send them at 2.1); Nova's 2.1 schema refuses them.
    let (status, _) = api.at(36, Method::POST, "/v2.1/servers", Some(boot(json!({})))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "'none' at 2.36");
    let (status, _) = api
        .at(36, Method::POST, "/v2.1/servers", Some(boot_at(36, json!({}))))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "a list at 2.36");
    let mut without = boot(json!({}));
    without["server"].as_object_mut().unwrap().remove("networks");
    let (status, body) = api.at(37, Method::POST, "/v2.1/servers", Some(without)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["badRequest"]["message"]
            .as_str()
            .unwrap()
            .contains("'networks' is a required property")
    );
    // A hostname is for one server only.
    let several = boot(json!({"hostname": "web", "max_count": 2}));
    let (status, _) = api.at(90, Method::POST, "/v2.1/servers", Some(several)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// 2.74's requested host: refused before 2.74 as any unknown key; from 2.74
/// an admin's only (Nova's policy), and then a 400 that says netcache does
/// not honour it, never a server placed elsewhere.
#[tokio::test]
async fn a_requested_host_is_refused_rather_than_ignored() {
    let api = Api::start().await;
    for key in ["host", "hypervisor_hostname"] {
        let fields = json!({key: "host1"});
        let (status, body) = api
            .at(73, Method::POST, "/v2.1/servers", Some(boot_at(73, fields.clone())))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{key} at 2.73: {body}");
        assert!(
            error_message(&body).contains(&format!("('{key}' was unexpected)")),
            "{body}"
        );

        let member = [("x-roles", "member,reader")];
        let (status, body) = api
            .at_as(
                74,
                &member,
                Method::POST,
                "/v2.1/servers",
                Some(boot_at(74, fields.clone())),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "a member's {key}: {body}");

        let (status, body) = api
            .at(74, Method::POST, "/v2.1/servers", Some(boot_at(74, fields)))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "an admin's {key}: {body}");
        assert!(
            error_message(&body).contains(&format!("requested {key} is not supported")),
            "{body}"
        );
    }
    let (_, listed) = api.get("/v2.1/servers").await;
    assert_eq!(listed["servers"], json!([]), "no server was made");
}

#[tokio::test]
async fn several_servers_of_one_boot_share_a_reservation_are_numbered_and_listed_by_it() {
    let api = Api::start().await;
    let (status, body) = api
        .at(
            37,
            Method::POST,
            "/v2.1/servers",
            Some(boot(json!({"min_count": 2, "return_reservation_id": true}))),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let reservation = body["reservation_id"].as_str().unwrap().to_owned();
    let (_, listed) = api.at(3, Method::GET, "/v2.1/servers/detail", None).await;
    let mut seen: Vec<(String, u64, String)> = items(&listed, "servers")
        .iter()
        .map(|s| {
            assert_eq!(s["OS-EXT-SRV-ATTR:reservation_id"], reservation.as_str());
            (
                s["name"].as_str().unwrap().to_owned(),
                s["OS-EXT-SRV-ATTR:launch_index"].as_u64().unwrap(),
                s["OS-EXT-SRV-ATTR:hostname"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("Web Server_1-1".to_owned(), 0, "web-server-1-1".to_owned()),
            ("Web Server_1-2".to_owned(), 1, "web-server-1-2".to_owned()),
        ]
    );
    // Another boot; the list by reservation finds the first two only.
    booted(&api, 37, boot(json!({}))).await;
    let uri = format!("/v2.1/servers/detail?reservation_id={reservation}");
    let (status, listed) = api.at(3, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["servers"].as_array().unwrap().len(), 2, "{listed}");
    let (_, listed) = api.get("/v2.1/servers?reservation_id=r-none").await;
    assert_eq!(listed["servers"], json!([]));
}

#[tokio::test]
async fn server_tags_are_kept_as_nova_keeps_them() {
    let api = Api::start().await;
    let id = api.boot_active("tagged").await;
    let tags = format!("/v2.1/servers/{id}/tags");
    let (status, _) = api.at(25, Method::GET, &tags, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no tags before 2.26");

    let (status, body) = api
        .at(26, Method::PUT, &tags, Some(json!({"tags": ["b", "a", "a"]})))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"tags": ["a", "b"]})));
    let (status, _) = api.at(26, Method::PUT, &format!("{tags}/c"), None).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = api.at(26, Method::PUT, &format!("{tags}/c"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "already there");
    let (status, _) = api.at(26, Method::GET, &format!("{tags}/c"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api.at(26, Method::DELETE, &format!("{tags}/a"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for missing in ["a", "zz"] {
        let (status, _) = api.at(26, Method::GET, &format!("{tags}/{missing}"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = api.at(26, Method::DELETE, &format!("{tags}/{missing}"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    assert_eq!(
        api.at(26, Method::GET, &tags, None).await.1,
        json!({"tags": ["b", "c"]})
    );
    assert_eq!(shown(&api, 26, &id).await["tags"], json!(["b", "c"]));

    let (status, body) = api.at(26, Method::PUT, &format!("{tags}/a,b"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let too_many: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    let (status, _) = api.at(26, Method::PUT, &tags, Some(json!({"tags": too_many}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = api.at(26, Method::PUT, &tags, Some(json!({"tags": ["x/y"]}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, _) = api.at(26, Method::DELETE, &tags, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(api.at(26, Method::GET, &tags, None).await.1, json!({"tags": []}));
}

#[tokio::test]
async fn a_lock_keeps_its_reason_until_the_unlock() {
    let api = Api::start().await;
    let id = api.boot_active("locked").await;
    let action = format!("/v2.1/servers/{id}/action");
    let reason = json!({"lock": {"locked_reason": "maintenance"}});
    let (status, _) = api.at(72, Method::POST, &action, Some(reason.clone())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "before 2.73 the value is ignored");
    assert_eq!(shown(&api, 73, &id).await["locked_reason"], Value::Null);
    api.at(73, Method::POST, &action, Some(json!({"unlock": null}))).await;

    let (status, _) = api.at(73, Method::POST, &action, Some(reason)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let server = shown(&api, 73, &id).await;
    assert_eq!(
        (&server["locked"], &server["locked_reason"]),
        (&json!(true), &json!("maintenance"))
    );
    api.at(73, Method::POST, &action, Some(json!({"unlock": null}))).await;
    let server = shown(&api, 73, &id).await;
    assert_eq!(
        (&server["locked"], &server["locked_reason"]),
        (&json!(false), &Value::Null)
    );

    let (status, _) = api
        .at(73, Method::POST, &action, Some(json!({"lock": {"locked_reason": ""}})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "too short");
    let (status, _) = api
        .at(73, Method::POST, &action, Some(json!({"lock": {"why": "x"}})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "an unknown key");
}

#[tokio::test]
async fn an_update_sets_description_and_hostname_and_answers_the_whole_server_from_2_75() {
    let api = Api::start().await;
    let id = api.boot_active("edited").await;
    let uri = format!("/v2.1/servers/{id}");
    let (status, _) = api
        .at(18, Method::PUT, &uri, Some(json!({"server": {"description": "d"}})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no description before 2.19");
    let (status, body) = api
        .at(19, Method::PUT, &uri, Some(json!({"server": {"description": "d"}})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"]["description"], "d");
    assert!(
        body["server"].get("OS-EXT-STS:vm_state").is_none(),
        "the basic view before 2.75"
    );

    let (status, body) = api
        .at(75, Method::PUT, &uri, Some(json!({"server": {"description": null}})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"]["description"], Value::Null);
    assert_eq!(
        body["server"]["OS-EXT-STS:vm_state"], "active",
        "the whole server from 2.75"
    );

    let (status, _) = api
        .at(89, Method::PUT, &uri, Some(json!({"server": {"hostname": "db"}})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no hostname before 2.90");
    let (status, _) = api
        .at(
            90,
            Method::PUT,
            &uri,
            Some(json!({"server": {"hostname": "db.example"}})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a fully qualified name from 2.94");
    let (status, body) = api
        .at(
            94,
            Method::PUT,
            &uri,
            Some(json!({"server": {"hostname": "db.example"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"]["OS-EXT-SRV-ATTR:hostname"], "db.example");
}

/// 2.104: an update unpins a server's zone and pins it again to the zone it
/// is in; a pin to another zone, or over another pin, is Nova's 409.
#[tokio::test]
async fn an_update_unpins_and_repins_the_zone_from_2_104() {
    let api = Api::start().await;
    let id = booted(&api, 104, boot_at(104, json!({"availability_zone": "nova"}))).await;
    assert_eq!(api.built(&id).await, "ACTIVE");
    let uri = format!("/v2.1/servers/{id}");
    let pin = |zone: Value| Some(json!({"server": {"pinned_availability_zone": zone}}));
    let (status, _) = api.at(103, Method::PUT, &uri, pin(Value::Null)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "not before 2.104");

    let (status, body) = api.at(104, Method::PUT, &uri, pin(json!("elsewhere"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "over a pin: {body}");
    assert_eq!(
        error_message(&body),
        "Cannot change pinned availability zone directly. Unpin first by setting pinned_availability_zone to null."
    );
    let (status, body) = api.at(104, Method::PUT, &uri, pin(Value::Null)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"]["pinned_availability_zone"], Value::Null);
    let (status, body) = api.at(104, Method::PUT, &uri, pin(Value::Null)).await;
    assert_eq!(status, StatusCode::OK, "unpinning an unpinned server: {body}");

    let (status, body) = api.at(104, Method::PUT, &uri, pin(json!("elsewhere"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        error_message(&body),
        "Server can only be pinned to its current availability zone 'nova', but 'elsewhere' was requested."
    );
    let (status, body) = api.at(104, Method::PUT, &uri, pin(json!("nova"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"]["pinned_availability_zone"], "nova");
    assert_eq!(shown(&api, 104, &id).await["pinned_availability_zone"], "nova");
}

#[tokio::test]
async fn lists_filter_by_tags_lock_and_change_time_from_their_microversions() {
    let api = Api::start().await;
    let (mut ab, mut b) = (String::new(), String::new());
    for (name, tags, id) in [("ab", json!(["a", "b"]), &mut ab), ("b", json!(["b"]), &mut b)] {
        *id = booted(&api, 52, boot(json!({"name": name, "tags": tags}))).await;
        assert_eq!(api.built(id).await, "ACTIVE");
    }
    let names = |body: Value| -> Vec<String> { sorted_strings(&body, "servers", "name") };
    for (query, expected) in [
        ("tags=a,b", vec!["ab"]),
        ("tags=b", vec!["ab", "b"]),
        ("tags-any=a,c", vec!["ab"]),
        ("not-tags=a,b", vec!["b"]),
        ("not-tags-any=a", vec!["b"]),
        ("not-tags-any=b", vec![]),
    ] {
        let (status, body) = api.at(26, Method::GET, &format!("/v2.1/servers?{query}"), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(names(body), expected, "{query}");
        let (_, body) = api.at(25, Method::GET, &format!("/v2.1/servers?{query}"), None).await;
        assert_eq!(names(body), ["ab", "b"], "{query} is no filter before 2.26");
    }
    api.at(
        73,
        Method::POST,
        &format!("/v2.1/servers/{b}/action"),
        Some(json!({"lock": null})),
    )
    .await;
    let (_, body) = api.at(73, Method::GET, "/v2.1/servers?locked=true", None).await;
    assert_eq!(names(body), ["b"]);
    let (_, body) = api.at(73, Method::GET, "/v2.1/servers?locked=false", None).await;
    assert_eq!(names(body), ["ab"]);
    let (status, _) = api.at(75, Method::GET, "/v2.1/servers?shoe_size=9", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown keys from 2.75");
    let (_, body) = api
        .at(
            66,
            Method::GET,
            "/v2.1/servers?changes-before=2000-01-01T00:00:00Z",
            None,
        )
        .await;
    assert_eq!(names(body), Vec::<String>::new(), "nothing changed before 2000");
    let (_, body) = api
        .at(
            66,
            Method::GET,
            "/v2.1/servers?changes-before=2999-01-01T00:00:00Z",
            None,
        )
        .await;
    assert_eq!(names(body), ["ab", "b"]);
}

#[tokio::test]
async fn a_rebuild_answers_its_key_pair_from_2_54_and_its_user_data_from_2_57() {
    let api = Api::start().await;
    let id = booted(&api, 37, boot(json!({"user_data": "aGk="}))).await;
    assert_eq!(api.built(&id).await, "ACTIVE");
    let action = format!("/v2.1/servers/{id}/action");
    let rebuild = json!({"rebuild": {"imageRef": IMAGE}});
    let (status, body) = api.at(53, Method::POST, &action, Some(rebuild.clone())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert!(body["server"].get("key_name").is_none(), "{body}");
    assert_eq!(api.built(&id).await, "ACTIVE");
    let (_, body) = api.at(57, Method::POST, &action, Some(rebuild)).await;
    assert_eq!(body["server"]["key_name"], Value::Null);
    assert_eq!(body["server"]["user_data"], "aGk=");
    assert!(
        body["server"].get("host_status").is_none(),
        "the basic view before 2.75"
    );
}
