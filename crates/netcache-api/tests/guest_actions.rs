//! What the fake hypervisor does to and reports of a guest beyond power:
//! `rescue`/`unrescue` and `changePassword` (Nova's states, checks and
//! answers) and the server's
//! diagnostics (admin; the driver's keys before 2.48, Nova's form from it,
//! checked against a copy of Nova's schema).
//! The caller is an admin of `demo` unless a test names other roles.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, IMAGE, error_message};
use netcache_testenv::json::strings;
use serde_json::{Value, json};

async fn action(api: &Api, id: &str, body: Value) -> (StatusCode, Value) {
    api.call(Method::POST, &format!("/v2.1/servers/{id}/action"), Some(body))
        .await
}

async fn status_becomes(api: &Api, id: &str, want: &str) {
    api.poll(&format!("/v2.1/servers/{id}"), |body| body["server"]["status"] == want)
        .await;
}

#[tokio::test]
async fn rescue_boots_a_rescue_guest_and_unrescue_brings_the_server_back() {
    let api = Api::start().await;
    let id = api.boot_active("vm").await;

    let (status, body) = action(&api, &id, json!({"rescue": {"adminPass": "s3cret"}})).await;
    assert_eq!(status, StatusCode::OK, "Nova's 200 (not 202): {body}");
    assert_eq!(body, json!({"adminPass": "s3cret"}));
    status_becomes(&api, &id, "RESCUE").await;
    let (_, shown) = api.get(&format!("/v2.1/servers/{id}")).await;
    assert_eq!(shown["server"]["OS-EXT-STS:vm_state"], "rescued");
    assert_eq!(shown["server"]["OS-EXT-STS:power_state"], 1, "running");

    // A rescued server may not reboot, rebuild, pause or be rescued again (409s).
    for refused in [
        json!({"reboot": {"type": "HARD"}}),
        json!({"rebuild": {"imageRef": IMAGE}}),
        json!({"pause": null}),
        json!({"rescue": null}),
        json!({"os-stop": null}),
    ] {
        let (status, body) = action(&api, &id, refused.clone()).await;
        assert_eq!(status, StatusCode::CONFLICT, "{refused}: {body}");
        assert!(error_message(&body).contains("vm_state rescued"), "{body}");
    }

    let (status, body) = action(&api, &id, json!({"unrescue": null})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    status_becomes(&api, &id, "ACTIVE").await;
    let (status, body) = action(&api, &id, json!({"unrescue": null})).await;
    assert_eq!(status, StatusCode::CONFLICT, "not rescued: {body}");
    assert_eq!(
        error_message(&body),
        format!("Cannot 'unrescue' instance {id} while it is in vm_state active")
    );

    let (_, actions) = api.get(&format!("/v2.1/servers/{id}/os-instance-actions")).await;
    let names = strings(&actions, "instanceActions", "action");
    assert_eq!(names[..2], ["unrescue", "rescue"], "newest first: {actions}");
    let (_, console) = action(&api, &id, json!({"os-getConsoleOutput": {}})).await;
    let log = console["output"].as_str().unwrap();
    assert!(log.contains("booting the rescue image"), "{log}");
    assert!(log.contains("[boot 2]"), "unrescue boots the disk again: {log}");
}

#[tokio::test]
async fn rescue_checks_are_novas() {
    let api = Api::start().await;
    let id = api.boot("vm").await;
    api.built(&id).await;

    // A new password when none is asked for; a stopped server may be rescued.
    action(&api, &id, json!({"os-stop": null})).await;
    status_becomes(&api, &id, "SHUTOFF").await;
    let (status, body) = action(&api, &id, json!({"rescue": {"rescue_image_ref": IMAGE}})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["adminPass"].as_str().map(str::len), Some(12), "{body}");
    status_becomes(&api, &id, "RESCUE").await;

    let other = api.boot("paused").await;
    api.built(&other).await;
    action(&api, &other, json!({"pause": null})).await;
    status_becomes(&api, &other, "PAUSED").await;
    let (status, body) = action(&api, &other, json!({"rescue": null})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        error_message(&body),
        format!("Cannot 'rescue' instance {other} while it is in vm_state paused")
    );

    let unknown_image = "f0000000-0000-4000-8000-000000000000";
    let (status, body) = action(&api, &other, json!({"rescue": {"rescue_image_ref": unknown_image}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_message(&body),
        format!("Requested rescue image '{unknown_image}' is not supported")
    );
    for (body, want) in [
        (json!({"rescue": {"rescue_image_ref": "img"}}), "'img' is not a 'uuid'"),
        (json!({"rescue": {"adminPass": 5}}), "5 is not of type 'string'"),
        (json!({"rescue": "x"}), "'x' is not of type 'object', 'null'"),
    ] {
        let (status, answer) = action(&api, &other, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(error_message(&answer).contains(want), "{body}: {answer}");
    }
    let missing = "00000000-0000-4000-8000-000000000000";
    let (status, _) = action(&api, missing, json!({"rescue": null})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn change_password_is_a_guest_action_of_an_active_server() {
    let api = Api::start().await;
    let id = api.boot("vm").await;
    api.built(&id).await;
    let (status, body) = action(&api, &id, json!({"changePassword": {"adminPass": "n3w"}})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    status_becomes(&api, &id, "ACTIVE").await;
    let (_, actions) = api.get(&format!("/v2.1/servers/{id}/os-instance-actions")).await;
    assert_eq!(actions["instanceActions"][0]["action"], "changePassword", "{actions}");
    let request = actions["instanceActions"][0]["request_id"].as_str().unwrap().to_owned();
    let (_, one) = api
        .at(
            51,
            Method::GET,
            &format!("/v2.1/servers/{id}/os-instance-actions/{request}"),
            None,
        )
        .await;
    assert_eq!(
        one["instanceAction"]["events"][0]["event"], "compute_set_admin_password",
        "{one}"
    );

    for (body, want) in [
        (json!({"changePassword": {}}), "'adminPass' is a required property"),
        (json!({"changePassword": {"adminPass": 1}}), "1 is not of type 'string'"),
        (
            json!({"changePassword": {"adminPass": "x", "user": "root"}}),
            "('user' was unexpected)",
        ),
    ] {
        let (status, answer) = action(&api, &id, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(error_message(&answer).contains(want), "{body}: {answer}");
    }
    action(&api, &id, json!({"os-stop": null})).await;
    status_becomes(&api, &id, "SHUTOFF").await;
    let (status, body) = action(&api, &id, json!({"changePassword": {"adminPass": "n3w"}})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        error_message(&body),
        format!("Cannot 'changePassword' instance {id} while it is in vm_state stopped")
    );
}

#[tokio::test]
async fn diagnostics_report_the_guests_flavor_ports_and_state_to_admins() {
    let api = Api::start().await;
    let id = api.boot_with(json!({"flavorRef": "2", "networks": "auto"})).await;
    api.built(&id).await;
    let (_, ports) = api.get(&format!("/v2.1/servers/{id}/os-interface")).await;
    let mac = ports["interfaceAttachments"][0]["mac_addr"]
        .as_str()
        .unwrap()
        .to_owned();
    let port = ports["interfaceAttachments"][0]["port_id"].as_str().unwrap().to_owned();
    let uri = format!("/v2.1/servers/{id}/diagnostics");

    let (status, old) = api.get(&uri).await;
    assert_eq!(status, StatusCode::OK, "{old}");
    assert_eq!(old["memory"], 2048 * 1024, "m1.small's RAM in KiB: {old}");
    assert_eq!(old["cpu0_time"], 0);
    assert_eq!(old["vda_read"], 0);
    assert_eq!(old[format!("tap{}_rx", &port[..11])], 0, "{old}");

    let (status, new) = api.at(48, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{new}");
    assert_eq!(new["state"], "running");
    assert_eq!(new["driver"], "libvirt");
    assert_eq!(new["num_cpus"], 1);
    assert_eq!(new["num_nics"], 1);
    assert_eq!(new["nic_details"][0]["mac_address"], mac.as_str());
    assert_eq!(new["memory_details"], json!({"maximum": 2048, "used": 0}));
    nova_schema::assert_satisfies(
        "GET /servers/{id}/diagnostics (2.48)",
        &nova_schema::diagnostics::index_v248(),
        &new,
    );

    action(&api, &id, json!({"os-stop": null})).await;
    status_becomes(&api, &id, "SHUTOFF").await;
    assert_eq!(api.at(48, Method::GET, &uri, None).await.1["state"], "shutdown");

    let member = [("x-roles", "member,reader")];
    let (status, _, body) = api.call_with_headers(Method::GET, &uri, &member, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "admin only: {body}");
    let (status, _) = api.at(102, Method::GET, &format!("{uri}?verbose=1"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "2.102 refuses query parameters");
    let missing = "00000000-0000-4000-8000-000000000000";
    let (status, _) = api.get(&format!("/v2.1/servers/{missing}/diagnostics")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
