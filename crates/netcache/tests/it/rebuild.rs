//! The `rebuild` server action: Nova's 202 answer (the basic view in REBUILD
//! with the new image, `adminPass`, `Location`), the server back to ACTIVE (or
//! SHUTOFF) with the new image and the user's new fields, its ports untouched,
//! a `rebuild` instance action; and Nova's 4xx, each changing nothing.

use crate::common;

use common::{IMAGE, TestApp, act};
use serde_json::{Value, json};

const IMAGE_ALT: &str = netcache_api::images::IMAGES[1].id;
const MISSING: &str = "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01";

async fn rebuild(t: &TestApp, id: &str, args: Value) -> (u16, Value) {
    act(t, id, json!({ "rebuild": args })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_reimages_the_server_keeps_its_ports_and_sets_what_was_asked() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let (code, _) = t
        .post(&format!("/servers/{id}/metadata"), json!({"metadata": {"old": "item"}}))
        .await;
    assert_eq!(code, 200);
    let before = t.server(&id).await;
    let ports = t.interface_port_ids(&id).await;

    let args = json!({
        "imageRef": IMAGE_ALT, "name": "rebuilt", "metadata": {"rebuild": "server"},
        "adminPass": "rebuildPassw0rd", "accessIPv4": "192.0.2.10",
    });
    let response = t
        .http
        .post(t.url(&format!("/servers/{id}/action")))
        .json(&json!({ "rebuild": args }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, t.url(&format!("/servers/{id}")));
    let answer: Value = response.json().await.unwrap();
    let server = &answer["server"];
    assert_eq!(server["id"], id.as_str());
    assert_eq!(server["status"], "REBUILD", "{answer}");
    assert_eq!(server["image"]["id"], IMAGE_ALT);
    assert_eq!(server["flavor"]["id"], "1");
    assert_eq!(server["adminPass"], "rebuildPassw0rd");
    assert_eq!(server["name"], "rebuilt");
    assert_eq!(server["accessIPv4"], "192.0.2.10");
    assert!(
        server.get("OS-EXT-STS:vm_state").is_none(),
        "Nova's basic view: {server}"
    );
    t.app().compute.settle().await;

    let after = t.server(&id).await;
    assert_eq!(after["status"], "ACTIVE", "{after}");
    assert!(after["OS-EXT-STS:task_state"].is_null());
    assert_eq!(after["image"]["id"], IMAGE_ALT);
    assert_eq!(after["name"], "rebuilt");
    assert_eq!(
        after["metadata"],
        json!({"rebuild": "server"}),
        "replaced, as Nova does"
    );
    assert_eq!(after["accessIPv4"], "192.0.2.10");
    assert_eq!(after["addresses"], before["addresses"], "the same addresses");
    assert_eq!(t.interface_port_ids(&id).await, ports, "the same ports");
    assert_eq!(t.neutron_ports(&id).len(), 1);
    let action = t.instance_action(&id, "rebuild").await["instanceAction"].clone();
    assert_eq!(action["events"][0]["event"], "compute_rebuild_instance", "{action}");
    assert_eq!(action["events"][0]["result"], "Success", "{action}");
    // The guest booted the new image.
    let (_, console) = act(&t, &id, json!({"os-getConsoleOutput": {"length": 6}})).await;
    let output = console["output"].as_str().unwrap();
    assert!(output.contains("[boot 2]") && output.contains(IMAGE_ALT), "{output}");
}

/// Nova's `test_rebuild_server_in_stop_state`: a stopped server is rebuilt
/// and stays SHUTOFF; without `adminPass` the answer carries a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_is_rebuilt_and_stays_stopped() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    assert_eq!(act(&t, &id, json!({"os-stop": null})).await.0, 202);
    let (code, answer) = rebuild(&t, &id, json!({"imageRef": IMAGE_ALT})).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(answer["server"]["status"], "REBUILD");
    let password = answer["server"]["adminPass"].as_str().unwrap();
    assert_eq!(password.len(), 12, "{password}");
    let after = t.server(&id).await;
    assert_eq!(
        (
            &after["status"],
            &after["OS-EXT-STS:power_state"],
            &after["image"]["id"]
        ),
        (&json!("SHUTOFF"), &json!(4), &json!(IMAGE_ALT)),
        "{after}"
    );
    // Back to the first image, as Tempest's clean-up does.
    assert_eq!(rebuild(&t, &id, json!({"imageRef": IMAGE})).await.0, 202);
    assert_eq!(t.server(&id).await["image"]["id"], IMAGE);
}

/// A driver that fails the rebuild leaves the server in ERROR with a fault, as
/// Nova's compute does; a rebuild from ERROR brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_rebuild_is_an_error_and_a_rebuild_from_error_recovers() {
    let mut t = TestApp::start().await;
    let id = t.boot_on_private().await;
    t.restart(common::fail_every_host).await;
    assert_eq!(rebuild(&t, &id, json!({"imageRef": IMAGE_ALT})).await.0, 202);
    let failed = t.server(&id).await;
    assert_eq!(failed["status"], "ERROR", "{failed}");
    assert!(
        failed["fault"]["message"].as_str().unwrap().contains("rebuild failed"),
        "{failed}"
    );
    let action = t.instance_action(&id, "rebuild").await["instanceAction"].clone();
    assert_eq!(action["events"][0]["result"], "Error", "{action}");
    t.restart(|s| s.compute.failing_hosts.clear()).await;
    assert_eq!(rebuild(&t, &id, json!({"imageRef": IMAGE_ALT})).await.0, 202);
    let recovered = t.server(&id).await;
    assert_eq!(recovered["status"], "ACTIVE", "{recovered}");
    assert!(recovered.get("fault").is_none(), "shown only in ERROR: {recovered}");
    assert_eq!(t.interface_port_ids(&id).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_nova_refuses_is_its_4xx_and_changes_nothing() {
    let t = TestApp::start().await;
    let id = t.boot(json!("none")).await;
    let good = json!({"imageRef": IMAGE_ALT});
    // The body is checked before the server is looked up.
    for (args, message) in [
        (json!({}), "'imageRef' is a required property"),
        (json!({"imageRef": "cirros"}), "'cirros' is not a 'uuid'"),
        (
            json!({"imageRef": IMAGE_ALT, "key_name": "k"}),
            "Additional properties are not allowed ('key_name' was unexpected)",
        ),
        (json!({"imageRef": IMAGE_ALT, "name": ""}), "'' is too short"),
        (
            json!({"imageRef": IMAGE_ALT, "adminPass": 7}),
            "7 is not of type 'string'",
        ),
        (
            json!({"imageRef": IMAGE_ALT, "metadata": {"k": 1}}),
            "1 is not of type 'string'",
        ),
        (
            json!({"imageRef": IMAGE_ALT, "accessIPv6": "1.2.3.4"}),
            "is not a 'ipv6'",
        ),
        (json!(null), "None is not of type 'object'"),
    ] {
        for target in [id.as_str(), MISSING] {
            let (code, answer) = rebuild(&t, target, args.clone()).await;
            assert_eq!(code, 400, "{args}: {answer}");
            let text = answer["badRequest"]["message"].as_str().unwrap();
            assert!(text.contains(message), "{args}: {text}");
        }
    }
    let (code, answer) = rebuild(&t, MISSING, good.clone()).await;
    assert_eq!(code, 404, "{answer}");
    assert_eq!(
        answer["itemNotFound"]["message"],
        format!("Instance {MISSING} could not be found.")
    );
    let (code, answer) = rebuild(&t, &id, json!({"imageRef": MISSING})).await;
    assert_eq!(code, 400, "{answer}");
    assert_eq!(answer["badRequest"]["message"], "Cannot find image for rebuild");
    let items: serde_json::Map<String, Value> = (0..129).map(|i| (format!("k{i}"), json!("v"))).collect();
    let (code, answer) = rebuild(&t, &id, json!({"imageRef": IMAGE_ALT, "metadata": items})).await;
    assert_eq!(code, 403, "{answer}");
    assert_eq!(
        answer["forbidden"]["message"],
        "Maximum number of metadata items exceeds 128"
    );

    // The state: a paused server is not rebuilt; nor is a locked one, whose
    // lock is looked at before the image.
    assert_eq!(act(&t, &id, json!({"pause": null})).await.0, 202);
    let (code, answer) = rebuild(&t, &id, good.clone()).await;
    assert_eq!(code, 409, "{answer}");
    assert_eq!(
        answer["conflictingRequest"]["message"],
        format!("Cannot 'rebuild' instance {id} while it is in vm_state paused")
    );
    assert_eq!(act(&t, &id, json!({"unpause": null})).await.0, 202);
    assert_eq!(act(&t, &id, json!({"lock": null})).await.0, 202);
    let (code, answer) = rebuild(&t, &id, json!({"imageRef": MISSING})).await;
    assert_eq!(code, 409, "{answer}");
    assert_eq!(
        answer["conflictingRequest"]["message"],
        format!("Instance {id} is locked")
    );
    let server = t.server(&id).await;
    assert_eq!(
        (&server["status"], &server["image"]["id"], &server["name"]),
        (&json!("ACTIVE"), &json!(IMAGE), &json!("vm"))
    );
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    assert!(!actions.to_string().contains("\"rebuild\""), "{actions}");
}

/// A server whose build failed everywhere never launched: Nova refuses to
/// rebuild it (409), naming its `launched_at`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_launched_is_not_rebuilt() {
    let t = TestApp::with_every_host_failing().await;
    let id = t.boot(json!("none")).await;
    assert_eq!(t.server(&id).await["status"], "ERROR");
    let (code, answer) = rebuild(&t, &id, json!({"imageRef": IMAGE_ALT})).await;
    assert_eq!(code, 409, "{answer}");
    assert_eq!(
        answer["conflictingRequest"]["message"],
        format!("Cannot 'rebuild' instance {id} while it is in launched_at None")
    );
}
