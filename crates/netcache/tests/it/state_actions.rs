//! The server actions that read the guest or set the recorded state:
//! `os-getConsoleOutput` (the fake guest's real console log), the admin's
//! `os-resetState` and `injectNetworkInfo`, and the deferred-delete pair
//! `forceDelete` / `restore` of a service that never soft-deletes; each with
//! Nova's 4xx.

use crate::common;

use common::{TestApp, act};
use netcache_testenv::json::items;
use serde_json::{Value, json};

const MISSING: &str = "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01";

async fn act_as_admin(t: &TestApp, id: &str, body: Value) -> (u16, Value) {
    let response =
        common::send(common::as_admin(t.http.post(t.url(&format!("/servers/{id}/action")))).json(&body)).await;
    t.app().compute.settle().await;
    response
}

async fn console(t: &TestApp, id: &str, length: Value) -> String {
    let (code, answer) = act(t, id, json!({"os-getConsoleOutput": {"length": length}})).await;
    assert_eq!(code, 200, "{answer}");
    answer["output"].as_str().unwrap().to_owned()
}

#[track_caller]
fn assert_message(answer: &Value, key: &str, message: &str) {
    assert_eq!(answer[key]["message"], message, "{answer}");
}

/// The console holds what the guest printed through its life: the boot, a
/// stop, a start; `length` keeps the last lines as Nova's does (Tempest counts
/// three with `length=3`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_output_is_what_the_guest_printed() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let booted = console(&t, &id, Value::Null).await;
    assert!(booted.lines().count() > 3, "{booted}");
    assert!(booted.starts_with("[boot 1] instance-"), "{booted}");
    assert!(booted.ends_with("vm login:\n"), "{booted}");
    assert_eq!(console(&t, &id, json!(3)).await.split('\n').count(), 3);
    assert_eq!(console(&t, &id, json!("2")).await, "vm login:\n");
    assert_eq!(console(&t, &id, json!(0)).await, "");
    let (code, all) = act(&t, &id, json!({"os-getConsoleOutput": {}})).await;
    assert_eq!((code, all["output"].as_str().unwrap()), (200, booted.as_str()));

    act(&t, &id, json!({"os-stop": null})).await;
    assert_eq!(console(&t, &id, json!(2)).await, "reboot: Power down\n");
    // Nova answers a stopped server's console too.
    act(&t, &id, json!({"os-start": null})).await;
    let restarted = console(&t, &id, Value::Null).await;
    assert!(restarted.contains("reboot: Power down\n[boot 2] "), "{restarted}");
    // The schema's -1 keeps all but the first line, as Nova's slice does.
    let most = console(&t, &id, json!(-1)).await;
    assert_eq!(most, restarted.split_once('\n').unwrap().1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_output_refusals_are_novas() {
    let t = TestApp::with_every_host_failing().await;
    let id = t.boot(json!("none")).await;
    for (args, message) in [
        (json!({"length": -2}), "-2 is less than the minimum of -1"),
        (json!({"length": "ten"}), "'ten' does not match '^-?[0-9]+$'"),
        (json!({"length": 1.5}), "1.5 is not of type 'integer', 'string', 'null'"),
        (
            json!({"length": 1, "all": true}),
            "Additional properties are not allowed ('all' was unexpected)",
        ),
        (json!(null), "None is not of type 'object'"),
    ] {
        let (code, answer) = act(&t, &id, json!({ "os-getConsoleOutput": args })).await;
        assert_eq!(code, 400, "{args}: {answer}");
        let text = answer["badRequest"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{args}: {text}");
    }
    let (code, answer) = act(&t, MISSING, json!({"os-getConsoleOutput": {"length": 10}})).await;
    assert_eq!(code, 404, "{answer}");
    assert_message(
        &answer,
        "itemNotFound",
        &format!("Instance {MISSING} could not be found."),
    );
    // Its build failed everywhere: no host has a console for it.
    assert_eq!(t.server(&id).await["status"], "ERROR");
    let (code, answer) = act(&t, &id, json!({"os-getConsoleOutput": {"length": 10}})).await;
    assert_eq!(code, 409, "{answer}");
    assert_message(&answer, "conflictingRequest", &format!("Instance {id} is not ready"));
}

/// Tempest's admin tests: reset to error (the list's `status=error` finds it),
/// then to active; a server reset to error is rebuilt and deleted as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_state_sets_the_vm_state_and_an_errored_server_is_rebuilt_and_deleted() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let error = json!({"os-resetState": {"state": "error"}});
    assert_eq!(act_as_admin(&t, &id, error.clone()).await.0, 202);
    let server = t.server(&id).await;
    assert_eq!(
        (&server["status"], &server["OS-EXT-STS:vm_state"]),
        (&json!("ERROR"), &json!("error"))
    );
    let (_, listed) = t.get("/servers?status=error").await;
    assert!(listed.to_string().contains(&id), "{listed}");
    assert_eq!(
        act_as_admin(&t, &id, json!({"os-resetState": {"state": "active"}}))
            .await
            .0,
        202
    );
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    let resets = items(&actions, "instanceActions")
        .iter()
        .filter(|a| a["action"] == "resetState")
        .count();
    assert_eq!(resets, 2, "{actions}");

    // Tempest's test_rebuild_server_in_error_state.
    act_as_admin(&t, &id, error.clone()).await;
    let alt = netcache_api::images::IMAGES[1].id;
    let (code, answer) = act(&t, &id, json!({"rebuild": {"imageRef": alt}})).await;
    assert_eq!(code, 202, "{answer}");
    let rebuilt = t.server(&id).await;
    assert_eq!(
        (&rebuilt["status"], &rebuilt["image"]["id"]),
        (&json!("ACTIVE"), &json!(alt))
    );
    assert_eq!(t.interface_port_ids(&id).await.len(), 1);

    act_as_admin(&t, &id, error).await;
    assert_eq!(t.delete(&format!("/servers/{id}")).await.0, 204);
    assert_eq!(t.get(&format!("/servers/{id}")).await.0, 404);
    assert!(t.neutron_ports(&id).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_state_refusals_are_novas() {
    let t = TestApp::start().await;
    let id = t.boot(json!("none")).await;
    for (args, message) in [
        (
            json!({"state": "invalid"}),
            "'invalid' is not one of ['active', 'error']",
        ),
        (json!({"state": 1}), "1 is not of type 'string'"),
        (json!({}), "'state' is a required property"),
    ] {
        let (code, answer) = act_as_admin(&t, &id, json!({ "os-resetState": args })).await;
        assert_eq!(code, 400, "{args}: {answer}");
        let text = answer["badRequest"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{args}: {text}");
    }
    for missing in ["999", MISSING] {
        let (code, answer) = act_as_admin(&t, missing, json!({"os-resetState": {"state": "error"}})).await;
        assert_eq!(code, 404, "{answer}");
    }
    let (code, answer) = act(&t, &id, json!({"os-resetState": {"state": "error"}})).await;
    assert_eq!(code, 403, "{answer}");
    assert_message(
        &answer,
        "forbidden",
        "Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed.",
    );
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
}

/// While an operation holds a server it alone writes the state, and it resumes
/// itself: a reset then is a 409, and goes through once the operation ended.
/// Invariant 18.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_state_leaves_a_server_an_operation_holds_alone() {
    let mut t = TestApp::doomed(|s| s.compute.crash_at = Some("after-power-changed".into())).await;
    let id = t.boot(json!("none")).await;
    assert_eq!(act(&t, &id, json!({"os-stop": null})).await.0, 202);
    assert!(t.app().compute.has_crashed());
    let error = json!({"os-resetState": {"state": "error"}});
    let (code, answer) = act_as_admin(&t, &id, error.clone()).await;
    assert_eq!(code, 409, "{answer}");
    assert_message(
        &answer,
        "conflictingRequest",
        &format!("Cannot 'os-resetState' instance {id} while it is in task_state powering-off"),
    );
    t.restart(|s| s.compute.crash_at = None).await;
    t.app().compute.settle().await;
    assert_eq!(t.server(&id).await["status"], "SHUTOFF");
    assert_eq!(act_as_admin(&t, &id, error).await.0, 202);
    assert_eq!(t.server(&id).await["status"], "ERROR");
}

/// netcache never soft-deletes (Nova's `reclaim_instance_interval = 0`): a
/// `forceDelete` deletes the server as Nova's does in any state, and a
/// `restore` finds no soft-deleted server to bring back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_delete_deletes_and_restore_finds_nothing_soft_deleted() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let (code, answer) = act(&t, &id, json!({"restore": null})).await;
    assert_eq!(code, 409, "{answer}");
    assert_message(
        &answer,
        "conflictingRequest",
        &format!("Cannot 'restore' instance {id} while it is in vm_state active"),
    );
    act(&t, &id, json!({"os-stop": null})).await;
    let (code, answer) = act(&t, &id, json!({"restore": null})).await;
    assert_eq!(code, 409, "{answer}");
    assert!(answer.to_string().contains("vm_state stopped"), "{answer}");

    // Locked: both refuse the owner's project (the lock is looked at first).
    act(&t, &id, json!({"lock": null})).await;
    for action in ["restore", "forceDelete"] {
        let (code, answer) = act(&t, &id, json!({ action: null })).await;
        assert_eq!(code, 409, "{action}: {answer}");
        assert_message(&answer, "conflictingRequest", &format!("Instance {id} is locked"));
    }
    assert_eq!(t.server(&id).await["status"], "SHUTOFF");
    let (code, answer) = act_as_admin(&t, &id, json!({"forceDelete": null})).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(t.get(&format!("/servers/{id}")).await.0, 404);
    assert!(t.neutron_ports(&id).is_empty(), "its port was deleted");

    for action in ["restore", "forceDelete"] {
        for target in [id.as_str(), MISSING] {
            let (code, answer) = act(&t, target, json!({ action: null })).await;
            assert_eq!(code, 404, "{action} {target}: {answer}");
            assert_message(
                &answer,
                "itemNotFound",
                &format!("Instance {target} could not be found."),
            );
        }
    }
}

/// Tempest's `test_inject_network_info`, with what Nova's compute does for
/// it: the server's network info refreshed from Neutron (a floating IP
/// associated there shows after it); a member may not (Nova's admin policy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inject_network_info_refreshes_the_servers_network_info() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let port = t.interface_port_ids(&id).await.remove(0);
    let (_, fip) = t.neutron().request(
        "POST",
        "/v2.0/floatingips",
        Some(json!({"floatingip": {"floating_network_id": t.topology.public_network_id, "port_id": port, "project_id": common::PROJECT}})),
    );
    let fip = fip["floatingip"]["floating_ip_address"].as_str().unwrap().to_owned();
    assert!(!common::shows_ip(&t.server(&id).await, &fip));

    let inject = json!({"injectNetworkInfo": null});
    let (code, answer) = act(&t, &id, inject.clone()).await;
    assert_eq!(code, 403, "{answer}");
    assert!(!common::shows_ip(&t.server(&id).await, &fip));
    let (code, answer) = act_as_admin(&t, &id, inject.clone()).await;
    assert_eq!(code, 202, "{answer}");
    assert!(common::shows_ip(&t.server(&id).await, &fip), "the floating IP shows");
    assert_eq!(act_as_admin(&t, MISSING, inject).await.0, 404);
}
