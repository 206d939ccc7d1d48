//! `POST /servers/{id}/action`: the power actions with Nova's state checks, their
//! instance actions, and Nova's 400s for what is not an action netcache has.

use crate::common;

use common::{TestApp, act};
use netcache_testenv::json::{items, strings};
use serde_json::{Value, json};

async fn status_and_power(t: &TestApp, id: &str) -> (String, u64) {
    let server = t.server(id).await;
    assert!(server["OS-EXT-STS:task_state"].is_null(), "{server}");
    (
        server["status"].as_str().unwrap().to_owned(),
        server["OS-EXT-STS:power_state"].as_u64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_power_action_moves_the_server_as_nova_does() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    for (body, status, power) in [
        (json!({"os-stop": null}), "SHUTOFF", 4),
        (json!({"reboot": {"type": "HARD"}}), "ACTIVE", 1),
        (json!({"os-stop": null}), "SHUTOFF", 4),
        (json!({"os-start": null}), "ACTIVE", 1),
        (json!({"reboot": {"type": "SOFT"}}), "ACTIVE", 1),
        (json!({"pause": null}), "PAUSED", 3),
        (json!({"unpause": null}), "ACTIVE", 1),
        (json!({"suspend": null}), "SUSPENDED", 7),
        (json!({"resume": null}), "ACTIVE", 1),
    ] {
        let (code, answer) = act(&t, &id, body.clone()).await;
        assert_eq!(code, 202, "{body}: {answer}");
        assert_eq!(status_and_power(&t, &id).await, (status.to_owned(), power), "{body}");
    }
    // Each is an instance action with a finished, successful event on the host.
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    let names = strings(&actions, "instanceActions", "action");
    for name in [
        "create", "stop", "reboot", "start", "pause", "unpause", "suspend", "resume",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let detail = t.instance_action(&id, "stop").await;
    let event = &detail["instanceAction"]["events"][0];
    assert_eq!(event["event"], "compute_stop_instance", "{detail}");
    assert_eq!(event["result"], "Success", "{detail}");
    // The ports stay attached through all of it.
    assert_eq!(t.interface_port_ids(&id).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_the_state_does_not_allow_is_a_409_and_changes_nothing() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    for body in [
        json!({"os-start": null}),
        json!({"unpause": null}),
        json!({"resume": null}),
    ] {
        let (code, answer) = act(&t, &id, body.clone()).await;
        assert_eq!(code, 409, "{body}: {answer}");
        let message = answer["conflictingRequest"]["message"].as_str().unwrap();
        assert!(message.contains("while it is in vm_state active"), "{message}");
    }
    act(&t, &id, json!({"os-stop": null})).await;
    for body in [
        json!({"os-stop": null}),
        json!({"pause": null}),
        json!({"reboot": {"type": "SOFT"}}),
    ] {
        let (code, answer) = act(&t, &id, body.clone()).await;
        assert_eq!(code, 409, "{body}: {answer}");
    }
    assert_eq!(status_and_power(&t, &id).await, ("SHUTOFF".to_owned(), 4));
    // A stopped server still takes an interface, as Nova's does.
    let net = &t.topology.private_network_id;
    let (code, body) = t.attach_on_network(&id, net).await;
    assert_eq!(code, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_an_action_is_novas_400() {
    let t = TestApp::start().await;
    let id = t.boot(json!("none")).await;
    for (body, message) in [
        (
            json!({"migrate-to-the-moon": null}),
            "There is no such action: migrate-to-the-moon",
        ),
        (json!({"os-stop": null, "os-start": null}), "Malformed request body"),
        (json!({}), "Malformed request body"),
        (json!(["os-stop"]), "Malformed request body"),
        (json!({"reboot": {}}), "'type' is a required property"),
        (json!({"reboot": {"type": "WARM"}}), "is not one of HARD, SOFT"),
        (
            json!({"reboot": {"type": "SOFT", "force": true}}),
            "'force' was unexpected",
        ),
        (json!({"reboot": null}), "must be an object"),
    ] {
        let (code, answer) = act(&t, &id, body.clone()).await;
        assert_eq!(code, 400, "{body}: {answer}");
        let text = answer["badRequest"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{body}: {text}");
    }
    let (code, answer) = t.post_raw(&format!("/servers/{id}/action"), "{not json").await;
    assert_eq!(code, 400, "{answer}");
    // An unknown server is a 404 whatever the action.
    let (code, _) = act(&t, "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01", json!({"os-stop": null})).await;
    assert_eq!(code, 404);
    assert_eq!(status_and_power(&t, &id).await, ("ACTIVE".to_owned(), 1));
}

/// `addFixedIp` gives the server another interface on the network;
/// `removeFixedIp` takes one address off the port holding it (the port stays
/// when it has others, as in Nova), and the cache follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_and_remove_fixed_ip_change_the_servers_addresses() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let net = t.topology.private_network_id.clone();
    let (code, body) = act(&t, &id, json!({"addFixedIp": {"networkId": net}})).await;
    assert_eq!(code, 202, "{body}");
    let ports = t.interface_port_ids(&id).await;
    assert_eq!(ports.len(), 2);
    let addresses = |server: &Value| -> Vec<String> {
        items(&server["addresses"], "private")
            .iter()
            .map(|a| a["addr"].as_str().unwrap().to_owned())
            .collect()
    };
    let before = addresses(&t.server(&id).await);
    assert_eq!(
        before.len(),
        4,
        "two ports, each with an IPv4 and an IPv6 address: {before:?}"
    );
    // (An IPv4 one: Neutron gives a port on a SLAAC subnet its IPv6 address back.)
    let removed = before.iter().rfind(|a| !a.contains(':')).unwrap().clone();
    let (code, body) = act(&t, &id, json!({"removeFixedIp": {"address": removed}})).await;
    assert_eq!(code, 202, "{body}");
    let after = addresses(&t.server(&id).await);
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(!after.contains(&removed), "{after:?}");
    assert_eq!(t.interface_port_ids(&id).await, ports, "the port stays");
    let holders = t
        .neutron_ports(&id)
        .into_iter()
        .filter(|p| p["fixed_ips"].to_string().contains(&removed))
        .count();
    assert_eq!(holders, 0, "Neutron no longer gives {removed} to the server");

    for (body, message) in [
        (json!({"removeFixedIp": {"address": removed}}), "doesn't have fixed IP"),
        (json!({"removeFixedIp": {"address": "not-an-ip"}}), "not-an-ip"),
        (json!({"removeFixedIp": {}}), "'address' is a required property"),
        (json!({"addFixedIp": {"networkId": "nope"}}), "uuid"),
        (json!({"addFixedIp": {"networkId": net, "x": 1}}), "'x' was unexpected"),
        (
            json!({"addFixedIp": {"networkId": "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01"}}),
            "could not be found",
        ),
    ] {
        let (code, answer) = act(&t, &id, body.clone()).await;
        assert_eq!(code, 400, "{body}: {answer}");
        let text = answer["badRequest"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{body}: {text}");
    }
}

/// Locks the server as an admin of another project (Nova's `admin` lock).
async fn lock_as_another_projects_admin(t: &TestApp, id: &str) {
    let (code, answer) = common::send(
        t.http
            .post(t.url(&format!("/servers/{id}/action")))
            .header("x-project-id", "operators")
            .header("x-roles", "admin,member,reader")
            .json(&json!({"lock": null})),
    )
    .await;
    assert_eq!(code, 202, "{answer}");
}

/// Nova's lock: a locked server refuses its users' lifecycle actions (409) but
/// not an admin's; who locked it decides who may unlock it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_server_refuses_its_users_until_unlocked() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let as_admin =
        |body: Value| common::send(common::as_admin(t.http.post(t.url(&format!("/servers/{id}/action")))).json(&body));
    assert_eq!(act(&t, &id, json!({"lock": null})).await.0, 202);
    let net = &t.topology.private_network_id;
    let refused = [
        (
            reqwest::Method::POST,
            format!("/servers/{id}/action"),
            Some(json!({"os-stop": null})),
        ),
        (
            reqwest::Method::POST,
            format!("/servers/{id}/action"),
            Some(json!({"reboot": {"type": "HARD"}})),
        ),
        (
            reqwest::Method::POST,
            format!("/servers/{id}/os-interface"),
            Some(json!({"interfaceAttachment": {"net_id": net}})),
        ),
        (
            reqwest::Method::POST,
            format!("/servers/{id}/metadata"),
            Some(json!({"metadata": {"a": "b"}})),
        ),
        (reqwest::Method::DELETE, format!("/servers/{id}"), None),
    ];
    for (method, path, body) in &refused {
        let (code, answer) = t.call(method.clone(), path, body.clone()).await;
        assert_eq!(code, 409, "{method} {path}: {answer}");
        let text = answer["conflictingRequest"]["message"].as_str().unwrap();
        assert!(text.contains("is locked"), "{text}");
    }
    // A rename is not a lifecycle action; an admin's stop goes through.
    let (code, _) = t
        .call(
            reqwest::Method::PUT,
            &format!("/servers/{id}"),
            Some(json!({"server": {"name": "renamed"}})),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(as_admin(json!({"os-stop": null})).await.0, 202);
    t.app().compute.settle().await;
    assert_eq!(status_and_power(&t, &id).await.0, "SHUTOFF");
    // The owner unlocks its own lock; an admin's lock takes an admin to lift.
    assert_eq!(act(&t, &id, json!({"unlock": null})).await.0, 202);
    assert_eq!(act(&t, &id, json!({"os-start": null})).await.0, 202);
    lock_as_another_projects_admin(&t, &id).await;
    let (code, answer) = act(&t, &id, json!({"unlock": null})).await;
    assert_eq!(code, 403, "{answer}");
    assert_eq!(as_admin(json!({"unlock": null})).await.0, 202);
    assert_eq!(t.delete(&format!("/servers/{id}")).await.0, 204);
}

/// Nova records every `lock` and `unlock` as an instance action with its
/// `api_` event, but an owner's lock of a server already locked, which changes
/// nothing (an admin's lock stays an admin's). Issue 33 defect 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_and_unlock_are_instance_actions_as_in_nova() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let as_admin =
        |body: Value| common::send(common::as_admin(t.http.post(t.url(&format!("/servers/{id}/action")))).json(&body));
    for body in [
        json!({"lock": null}),
        json!({"lock": null}),
        json!({"unlock": null}),
        json!({"unlock": null}),
    ] {
        assert_eq!(act(&t, &id, body.clone()).await.0, 202, "{body}");
    }
    lock_as_another_projects_admin(&t, &id).await;
    assert_eq!(act(&t, &id, json!({"lock": null})).await.0, 202);
    assert_eq!(act(&t, &id, json!({"unlock": null})).await.0, 403);
    assert_eq!(as_admin(json!({"unlock": null})).await.0, 202);

    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    let actions = actions["instanceActions"].as_array().unwrap();
    let mut names: Vec<&str> = actions.iter().map(|a| a["action"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["create", "lock", "lock", "unlock", "unlock", "unlock"]);
    for action in actions.iter().filter(|a| a["action"] != "create") {
        let (_, detail) = t
            .admin_get(&format!(
                "/servers/{id}/os-instance-actions/{}",
                action["request_id"].as_str().unwrap()
            ))
            .await;
        let events = detail["instanceAction"]["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{detail}");
        assert_eq!(
            events[0]["event"],
            format!("api_{}", action["action"].as_str().unwrap())
        );
        assert_eq!(events[0]["result"], "Success", "{detail}");
    }
}
