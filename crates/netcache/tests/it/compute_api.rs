//! The compute API over the embedded Neutron: ghosts never shown, user ports,
//! attach/detach, bad input, Neutron call budgets.

use crate::common;

use common::{PROJECT, TestApp};
use netcache_testenv::json::items;
use serde_json::{Value, json};

fn assert_nova_error(status: u16, body: &Value, expected: u16) {
    assert_eq!(status, expected, "{body}");
    let key = match expected {
        400 => "badRequest",
        404 => "itemNotFound",
        409 => "conflictingRequest",
        other => panic!("unexpected {other}"),
    };
    assert_eq!(body[key]["code"], expected, "{body}");
    assert!(body[key]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

/// Invariant 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_created_in_neutron_with_the_device_id_never_appears() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let mine = t.interface_port_ids(&id).await;
    let foreign = t.user_port(json!({"device_id": id, "device_owner": "compute:nova", "binding:host_id": "host1"}));
    let foreign_id = foreign["id"].as_str().unwrap();
    let foreign_ip = foreign["fixed_ips"][0]["ip_address"].as_str().unwrap();
    assert_eq!(t.neutron_ports(&id).len(), 2);

    let server = t.server(&id).await;
    assert!(!common::shows_ip(&server, foreign_ip), "{server}");
    assert!(!TestApp::macs(&server).contains(&foreign["mac_address"].as_str().unwrap().to_owned()));
    let (_, ips) = t.get(&format!("/servers/{id}/ips")).await;
    assert!(!common::shows_ip(&ips, foreign_ip), "{ips}");
    let (_, detail) = t.get("/servers/detail").await;
    assert!(!common::shows_ip(&detail, foreign_ip));
    assert_eq!(t.interface_port_ids(&id).await, mine);
    let (status, body) = t.get(&format!("/servers/{id}/os-interface/{foreign_id}")).await;
    assert_nova_error(status, &body, 404);
}

/// Invariant 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_port_survives_server_delete_unbound() {
    let t = TestApp::start().await;
    let port = t.user_port(json!({"name": "mine"}));
    let port_id = port["id"].as_str().unwrap();
    let id = t.boot(json!([{"port": port_id}])).await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "ACTIVE");
    assert_eq!(t.interface_port_ids(&id).await, [port_id]);
    let (_, bound) = t.neutron_port(port_id);
    assert_eq!(bound["port"]["device_id"], id.as_str());
    assert_eq!(bound["port"]["device_owner"], "compute:nova");
    assert_eq!(
        bound["port"]["binding:host_id"],
        t.admin_server(&id).await["OS-EXT-SRV-ATTR:host"]
    );

    let (status, _) = t.delete(&format!("/servers/{id}")).await;
    assert_eq!(status, 204);
    let (status, after) = t.neutron_port(port_id);
    assert_eq!(status, 200, "the user's port must survive: {after}");
    assert_eq!(after["port"]["device_id"], "");
    assert_eq!(after["port"]["device_owner"], "");
    assert!(
        after["port"]["binding:host_id"].as_str().unwrap_or("").is_empty(),
        "{after}"
    );
    let (status, body) = t.get(&format!("/servers/{id}")).await;
    assert_nova_error(status, &body, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_in_use_or_of_another_project_is_refused() {
    let t = TestApp::start().await;
    let used = t.user_port(json!({"device_id": "someone-else"}));
    let (status, body) = t
        .post(
            "/servers",
            json!({"server": {"name": "x", "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"port": used["id"]}]}}),
        )
        .await;
    assert_nova_error(status, &body, 409);
    let (_, other) = t.neutron().request(
        "POST",
        "/v2.0/ports",
        Some(json!({"port": {"network_id": t.topology.public_network_id, "project_id": "other"}})),
    );
    let (status, body) = t
        .post(
            "/servers",
            json!({"server": {"name": "x", "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"port": other["port"]["id"]}]}}),
        )
        .await;
    assert_nova_error(status, &body, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_and_detach_by_network_fixed_ip_and_port() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let net = t.topology.private_network_id.clone();
    let path = format!("/servers/{id}/os-interface");

    let (status, by_net) = t.post(&path, json!({"interfaceAttachment": {"net_id": net}})).await;
    assert_eq!(status, 200, "{by_net}");
    assert_eq!(by_net["interfaceAttachment"]["net_id"], net.as_str());

    let (status, by_ip) = t
        .post(
            &path,
            json!({"interfaceAttachment": {"net_id": net, "fixed_ips": [{"ip_address": "10.0.0.77"}]}}),
        )
        .await;
    assert_eq!(status, 200, "{by_ip}");
    assert_eq!(by_ip["interfaceAttachment"]["fixed_ips"][0]["ip_address"], "10.0.0.77");

    let user = t.user_port(json!({}));
    let user_id = user["id"].as_str().unwrap();
    let (status, by_port) = t
        .post(&path, json!({"interfaceAttachment": {"port_id": user_id}}))
        .await;
    assert_eq!(status, 200, "{by_port}");
    assert_eq!(by_port["interfaceAttachment"]["port_id"], user_id);

    // The same fixed IP again is a conflict; a missing network a 404 (Nova's attach).
    let (status, body) = t
        .post(
            &path,
            json!({"interfaceAttachment": {"net_id": net, "fixed_ips": [{"ip_address": "10.0.0.77"}]}}),
        )
        .await;
    assert_nova_error(status, &body, 409);
    let (status, body) = t
        .post(
            &path,
            json!({"interfaceAttachment": {"net_id": "6d3c0c6e-0a9e-4c2a-9e2b-000000000000"}}),
        )
        .await;
    assert_nova_error(status, &body, 404);

    assert_eq!(t.interface_port_ids(&id).await.len(), 4);
    let server = t.server(&id).await;
    assert_eq!(TestApp::macs(&server).len(), 4, "{server}");
    assert!(common::shows_ip(&server["addresses"]["private"], "10.0.0.77"));

    let by_net_id = by_net["interfaceAttachment"]["port_id"].as_str().unwrap().to_owned();
    let by_ip_id = by_ip["interfaceAttachment"]["port_id"].as_str().unwrap().to_owned();
    for port in [&by_net_id, &by_ip_id, &user_id.to_owned()] {
        let (status, _) = t.delete(&format!("{path}/{port}")).await;
        assert_eq!(status, 202);
    }
    assert_eq!(t.interface_port_ids(&id).await.len(), 1);
    assert_eq!(
        t.neutron_port(&by_net_id).0,
        404,
        "a port netcache created is deleted on detach"
    );
    assert_eq!(t.neutron_port(&by_ip_id).0, 404);
    let (status, user_after) = t.neutron_port(user_id);
    assert_eq!(status, 200, "a user's port is only unbound on detach");
    assert_eq!(user_after["port"]["device_id"], "");
    let server = t.server(&id).await;
    assert!(!common::shows_ip(&server["addresses"], "10.0.0.77"));
    let (status, body) = t.delete(&format!("{path}/{by_net_id}")).await;
    assert_nova_error(status, &body, 404);

    // Tempest waits for this action event after a detach.
    let action = t.instance_action(&id, "detach_interface").await;
    assert_eq!(
        action["instanceAction"]["events"][0]["event"],
        "compute_detach_interface"
    );
    assert_eq!(action["instanceAction"]["events"][0]["result"], "Success");
}

/// A row of [`bad_input_gets_nova_format_4xx_never_500`]'s table: what is
/// wrong, the request (its body if it has one) and Nova's status for it.
type BadInput = (&'static str, reqwest::Method, String, Option<&'static str>, u16);

fn bad_post(what: &'static str, path: impl Into<String>, body: &'static str, expected: u16) -> BadInput {
    (what, reqwest::Method::POST, path.into(), Some(body), expected)
}

fn bad_get(what: &'static str, path: impl Into<String>, expected: u16) -> BadInput {
    (what, reqwest::Method::GET, path.into(), None, expected)
}

fn bad_delete(what: &'static str, path: impl Into<String>, expected: u16) -> BadInput {
    (what, reqwest::Method::DELETE, path.into(), None, expected)
}

/// Invariant 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_nova_format_4xx_never_500() {
    let t = TestApp::start().await;
    let id = t.boot_on_private().await;
    let missing = "6d3c0c6e-0a9e-4c2a-9e2b-000000000000";
    let interfaces = format!("/servers/{id}/os-interface");
    let cases = [
        bad_post("malformed JSON", "/servers", "{\"server\": ", 400),
        bad_post("empty body", "/servers", "", 400),
        bad_post("not an object", "/servers", "[1, 2]", 400),
        bad_post("missing name", "/servers", r#"{"server": {"flavorRef": "1"}}"#, 400),
        bad_post("missing flavorRef", "/servers", r#"{"server": {"name": "a"}}"#, 400),
        bad_post(
            "bad network uuid",
            "/servers",
            r#"{"server": {"name": "a", "flavorRef": "1", "imageRef": "9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11", "networks": [{"uuid": "nope"}]}}"#,
            400,
        ),
        bad_post(
            "bad networks keyword",
            "/servers",
            r#"{"server": {"name": "a", "flavorRef": "1", "imageRef": "9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11", "networks": "some"}}"#,
            400,
        ),
        bad_post(
            "bad fixed ip",
            "/servers",
            r#"{"server": {"name": "a", "flavorRef": "1", "imageRef": "9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11", "networks": [{"uuid": "6d3c0c6e-0a9e-4c2a-9e2b-000000000000", "fixed_ip": "10.0.0.999"}]}}"#,
            400,
        ),
        bad_post(
            "unknown network",
            "/servers",
            r#"{"server": {"name": "a", "flavorRef": "1", "imageRef": "9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11", "networks": [{"uuid": "6d3c0c6e-0a9e-4c2a-9e2b-000000000000"}]}}"#,
            400,
        ),
        bad_post(
            "unknown port",
            "/servers",
            r#"{"server": {"name": "a", "flavorRef": "1", "imageRef": "9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11", "networks": [{"port": "6d3c0c6e-0a9e-4c2a-9e2b-000000000000"}]}}"#,
            400,
        ),
        bad_get("unknown server", format!("/servers/{missing}"), 404),
        bad_get("bad server uuid", "/servers/not-a-uuid", 404),
        bad_delete("delete unknown server", format!("/servers/{missing}"), 404),
        bad_get("ips of unknown network", format!("/servers/{id}/ips/nowhere"), 404),
        bad_get(
            "interfaces of unknown server",
            format!("/servers/{missing}/os-interface"),
            404,
        ),
        bad_post("attach malformed", &interfaces, "{", 400),
        bad_post(
            "attach net and port",
            &interfaces,
            r#"{"interfaceAttachment": {"net_id": "6d3c0c6e-0a9e-4c2a-9e2b-000000000000", "port_id": "6d3c0c6e-0a9e-4c2a-9e2b-000000000001"}}"#,
            400,
        ),
        bad_post(
            "attach unknown attribute",
            &interfaces,
            r#"{"interfaceAttachment": {"network": "x"}}"#,
            400,
        ),
        bad_post(
            "attach fixed ip without net",
            &interfaces,
            r#"{"interfaceAttachment": {"fixed_ips": [{"ip_address": "10.0.0.5"}]}}"#,
            400,
        ),
        bad_post(
            "attach unknown port",
            &interfaces,
            r#"{"interfaceAttachment": {"port_id": "6d3c0c6e-0a9e-4c2a-9e2b-000000000000"}}"#,
            404,
        ),
        bad_delete(
            "detach unknown port",
            format!("/servers/{id}/os-interface/{missing}"),
            404,
        ),
        bad_get(
            "unknown action",
            format!("/servers/{id}/os-instance-actions/req-nope"),
            404,
        ),
        bad_get("unknown path", "/flavors-of-the-month", 404),
    ];
    for (what, method, path, body, expected) in cases {
        let mut request = t.http.request(method, t.url(&path));
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_owned());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status < 500, "{what}: got {status} {body}");
        assert_nova_error(status, &body, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_network_and_ambiguity() {
    let t = TestApp::start().await;
    let id = t.boot(json!("auto")).await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    assert_eq!(t.interface_port_ids(&id).await.len(), 1);
    let none = t.boot(json!("none")).await;
    assert_eq!(t.interface_port_ids(&none).await.len(), 0);
    // A second project network makes "auto" ambiguous: Nova's 409.
    let (status, body) = boot_beside_a_second_network(&t, json!("auto")).await;
    assert_nova_error(status, &body, 409);
}

/// Gives the project a second network, then boots with `networks`.
async fn boot_beside_a_second_network(t: &TestApp, networks: Value) -> (u16, Value) {
    t.neutron().request(
        "POST",
        "/v2.0/networks",
        Some(json!({"network": {"name": "second", "project_id": PROJECT}})),
    );
    t.post(
        "/servers",
        json!({"server": {"name": "a", "flavorRef": "1", "imageRef": common::IMAGE, "networks": networks}}),
    )
    .await
}

/// Issue 33 defect 1: `"networks": []` (what the `openstack` CLI sends without
/// `--network`) is read as Nova reads it at 2.1, like no `networks` key: the
/// only usable network is used, and two make the boot Nova's 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_networks_list_boots_like_no_networks_key() {
    let t = TestApp::start().await;
    let id = t.boot(json!([])).await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    assert_eq!(t.interface_port_ids(&id).await.len(), 1, "the only network is used");
    let (status, body) = boot_beside_a_second_network(&t, json!([])).await;
    assert_nova_error(status, &body, 409);
    assert_eq!(
        body["conflictingRequest"]["message"],
        "Multiple possible networks found, use a Network ID to be more specific."
    );
}

/// Nova at 2.1: a boot that names no network, in a project with no network to
/// use, boots without an interface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_without_networks_boots_without_an_interface() {
    let t = TestApp::start().await;
    let boot = json!({"server": {"name": "lonely", "flavorRef": "1", "imageRef": common::IMAGE}});
    let request = t
        .http
        .post(t.url("/servers"))
        .header("x-project-id", "a-project-with-no-network")
        .header("x-roles", "member,reader")
        .json(&boot);
    let (status, body) = common::send(request).await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
    let id = body["server"]["id"].as_str().unwrap();
    let (_, server) = common::send(common::as_admin(t.http.get(t.url(&format!("/servers/{id}"))))).await;
    assert_eq!(server["server"]["status"], "ACTIVE", "{server}");
    assert_eq!(server["server"]["addresses"], json!({}), "{server}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boot_and_delete_cost_at_most_two_neutron_calls_each() {
    let t = TestApp::start().await;
    // The first boot learns the network's details; later ones reuse them.
    t.boot_on_private().await;
    t.neutron().reset_stats();

    let id = t.boot_on_private().await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    let boot_calls = t.neutron().stats().total();
    assert!(
        boot_calls <= 2,
        "boot cost {boot_calls} Neutron calls: {:?}",
        t.neutron().stats()
    );

    t.neutron().reset_stats();
    let (status, _) = t.delete(&format!("/servers/{id}")).await;
    assert_eq!(status, 204);
    let delete_calls = t.neutron().stats().total();
    assert!(
        delete_calls <= 2,
        "delete cost {delete_calls} Neutron calls: {:?}",
        t.neutron().stats()
    );
    assert!(t.neutron_ports(&id).is_empty());

    // Attaching a new port on a known network: the create, nothing else.
    let other = t.boot_on_private().await;
    t.neutron().reset_stats();
    let (status, _) = t.attach_on_network(&other, &t.topology.private_network_id).await;
    assert_eq!(status, 200);
    let attach_calls = t.neutron().stats().total();
    assert_eq!(attach_calls, 1, "{:?}", t.neutron().stats());
    println!("Neutron calls: boot {boot_calls}, delete {delete_calls}, attach {attach_calls} (Nova: about 9, 3 and 9)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_failures_reschedule_then_error_with_ports_released() {
    let t = TestApp::with_every_host_failing().await;
    let id = t.boot_on_private().await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "ERROR", "{server}");
    assert!(
        server["fault"]["message"].as_str().unwrap().contains("No valid host"),
        "{server}"
    );
    assert!(t.neutron_ports(&id).is_empty(), "every attempt's port was released");
    assert_eq!(t.neutron().stats().calls("ports.create"), 3);
    assert_eq!(t.neutron().stats().calls("ports.delete"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_list_filters_by_name_status_and_ip_from_netcaches_records() {
    let t = TestApp::start().await;
    let net = t.topology.private_network_id.clone();
    for name in ["alpha", "beta"] {
        let (status, _) = t
            .post(
                "/servers",
                json!({"server": {"name": name, "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"uuid": net}]}}),
            )
            .await;
        assert_eq!(status, 202);
    }
    t.app().compute.settle().await;
    let names = |body: &Value| -> Vec<String> {
        items(body, "servers")
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, body) = t.get("/servers?name=alp").await;
    assert_eq!(names(&body), ["alpha"]);
    let (_, body) = t.get("/servers/detail?status=active").await;
    assert_eq!(names(&body).len(), 2);
    let (_, body) = t.get("/servers?status=ERROR").await;
    assert!(names(&body).is_empty());

    let (_, body) = t.get("/servers/detail?name=alpha").await;
    let alpha = body["servers"][0]["id"].as_str().unwrap().to_owned();
    let ip = body["servers"][0]["addresses"]["private"][0]["addr"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, body) = t.get(&format!("/servers?ip={ip}")).await;
    assert_eq!(names(&body), ["alpha"]);
    // A ghost's IP matches nothing: the filter reads netcache's records.
    let ghost = t.user_port(json!({"device_id": alpha, "device_owner": "compute:nova"}));
    let ghost_ip = ghost["fixed_ips"][0]["ip_address"].as_str().unwrap();
    let (_, body) = t.get(&format!("/servers?ip={ghost_ip}")).await;
    assert!(names(&body).is_empty(), "{body}");
}

/// `min_count`/`max_count` boot several servers named as Nova names them, each
/// its own build; `return_reservation_id` answers a reservation id instead; a
/// port or a fixed IP cannot go to several servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_and_max_count_boot_several_servers() {
    let t = TestApp::start().await;
    let net = t.topology.private_network_id.clone();
    let boot = |extra: Value| {
        let mut server =
            json!({"name": "multi", "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"uuid": net}]});
        server
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "server": server })
    };
    let (status, body) = t
        .post("/servers", boot(json!({"min_count": 2, "max_count": "3"})))
        .await;
    assert_eq!(status, 202, "{body}");
    assert!(body["server"]["id"].is_string(), "{body}");
    t.app().compute.settle().await;
    let (_, list) = t.get("/servers/detail?name=^multi-").await;
    let mut names = Vec::new();
    for server in list["servers"].as_array().unwrap() {
        assert_eq!(server["status"], "ACTIVE", "{server}");
        assert_eq!(t.neutron_ports(server["id"].as_str().unwrap()).len(), 1, "{server}");
        names.push(server["name"].as_str().unwrap());
    }
    names.sort_unstable();
    assert_eq!(names, ["multi-1", "multi-2", "multi-3"]);

    let (status, body) = t.post("/servers", boot(json!({"return_reservation_id": "True"}))).await;
    assert_eq!(status, 202, "{body}");
    assert!(body["reservation_id"].as_str().unwrap().starts_with("r-"), "{body}");
    assert!(body.get("server").is_none(), "{body}");

    let port = t.user_port(json!({}))["id"].as_str().unwrap().to_owned();
    for (extra, message) in [
        (
            json!({"min_count": 3, "max_count": 2}),
            "min_count must be <= max_count",
        ),
        (json!({"max_count": 0}), "less than the minimum of 1"),
        (json!({"min_count": "two"}), "min_count"),
        (json!({"return_reservation_id": "maybe"}), "boolean"),
        (
            json!({"max_count": 2, "networks": [{"port": port}]}),
            "single configured port ID",
        ),
        (
            json!({"max_count": 2, "networks": [{"uuid": net, "fixed_ip": "10.0.0.200"}]}),
            "fixed_ip",
        ),
    ] {
        let (status, body) = t.post("/servers", boot(extra.clone())).await;
        assert_nova_error(status, &body, 400);
        let text = body["badRequest"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{extra}: {text}");
    }
}

/// A boot's `adminPass` is answered back (Nova's); a generated one otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_admin_password_is_answered_back() {
    let t = TestApp::start().await;
    let boot = |pass: Value| json!({"server": {"name": "p", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none", "adminPass": pass}});
    let (status, body) = t.post("/servers", boot(json!("s3cret-Pass"))).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["server"]["adminPass"], "s3cret-Pass");
    let (status, body) = t.post("/servers", boot(json!(42))).await;
    assert_nova_error(status, &body, 400);
    t.app().compute.settle().await;
}
