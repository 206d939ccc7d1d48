//! Network visibility as Neutron would show it to the user (issue 10): a project
//! may use its own networks and shared ones, never another project's private
//! network; a non-admin may not put a port on an external network; requested
//! ports and fixed IPs are checked the same way, and refusals name nothing of
//! the other project. Admins keep their powers.
//!
//! Callers are named by `X-Project-Id` and `X-Roles`. The embedded Neutron holds
//! `private` (project "demo"), the external `public`, and what each test adds:
//! a private network of project "other" and a network "other" shares.

use crate::common;

use common::{PROJECT, TestApp};
use reqwest::Method;
use serde_json::{Value, json};

const OTHER: &str = "other";

/// A caller: project and roles.
#[derive(Clone, Copy)]
struct Who {
    project: &'static str,
    roles: &'static str,
}

const MEMBER: Who = Who {
    project: PROJECT,
    roles: "member,reader",
};
const OTHER_MEMBER: Who = Who {
    project: OTHER,
    roles: "member,reader",
};
const ADMIN: Who = Who {
    project: "admin",
    roles: "admin,member,reader",
};

async fn call(t: &TestApp, who: Who, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = t
        .http
        .request(method, t.url(path))
        .header("X-Project-Id", who.project)
        .header("X-Roles", who.roles);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Asks for a boot on `networks`; on 202 waits for the build.
async fn boot(t: &TestApp, who: Who, networks: Value) -> (u16, Value) {
    let body = json!({"server": {"name": "vm", "flavorRef": "1", "imageRef": common::IMAGE, "networks": networks}});
    let answer = call(t, who, Method::POST, "/servers", Some(body)).await;
    t.app().compute.settle().await;
    answer
}

/// Boots a server that must become ACTIVE; returns its id.
async fn boot_active(t: &TestApp, who: Who, networks: Value) -> String {
    let (status, body) = boot(t, who, networks).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    let (status, server) = call(t, who, Method::GET, &format!("/servers/{id}"), None).await;
    assert_eq!(status, 200, "{server}");
    assert_eq!(server["server"]["status"], "ACTIVE", "{server}");
    id
}

async fn attach(t: &TestApp, who: Who, server: &str, attachment: Value) -> (u16, Value) {
    let path = format!("/servers/{server}/os-interface");
    call(
        t,
        who,
        Method::POST,
        &path,
        Some(json!({"interfaceAttachment": attachment})),
    )
    .await
}

/// Nova's error body: the status under its key, and the message.
fn nova_error(status: u16, body: &Value, expected: u16) -> String {
    assert_eq!(status, expected, "{body}");
    let key = match expected {
        400 => "badRequest",
        403 => "forbidden",
        404 => "itemNotFound",
        409 => "conflictingRequest",
        other => panic!("unexpected {other}"),
    };
    assert_eq!(body[key]["code"], expected, "{body}");
    body[key]["message"].as_str().unwrap().to_owned()
}

/// A network with one IPv4 subnet, created in Neutron for `project`.
fn network(t: &TestApp, name: &str, project: &str, shared: bool, cidr: &str) -> (String, String) {
    let (status, net) = t.neutron().request(
        "POST",
        "/v2.0/networks",
        Some(json!({"network": {"name": name, "project_id": project, "shared": shared}})),
    );
    assert_eq!(status, 201, "{net}");
    let net_id = net["network"]["id"].as_str().unwrap().to_owned();
    let (status, subnet) = t.neutron().request(
        "POST",
        "/v2.0/subnets",
        Some(json!({"subnet": {"network_id": net_id, "project_id": project, "ip_version": 4, "cidr": cidr}})),
    );
    assert_eq!(status, 201, "{subnet}");
    (net_id, subnet["subnet"]["id"].as_str().unwrap().to_owned())
}

/// Project "other"'s private network.
fn other_private(t: &TestApp) -> (String, String) {
    network(t, "other-private", OTHER, false, "10.9.0.0/24")
}

/// A network project "other" owns and shares.
fn shared(t: &TestApp) -> (String, String) {
    network(t, "shared", OTHER, true, "10.8.0.0/24")
}

/// A port of project "other", created in Neutron directly.
fn other_port(t: &TestApp, body: Value) -> Value {
    let (status, port) = t.neutron().request("POST", "/v2.0/ports", Some(json!({"port": body})));
    assert_eq!(status, 201, "{port}");
    port["port"].clone()
}

/// Neutron's ports on a network.
fn ports_on(t: &TestApp, network_id: &str) -> Vec<Value> {
    let (status, body) = t
        .neutron()
        .request("GET", &format!("/v2.0/ports?network_id={network_id}"), None);
    assert_eq!(status, 200, "{body}");
    body["ports"].as_array().unwrap().clone()
}

async fn server_count(t: &TestApp) -> usize {
    let (status, body) = call(t, ADMIN, Method::GET, "/servers?all_tenants=1", None).await;
    assert_eq!(status, 200, "{body}");
    body["servers"].as_array().unwrap().len()
}

/// Invariant 20.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_projects_private_network_is_answered_as_one_that_does_not_exist() {
    let t = TestApp::start().await;
    let (theirs, _) = other_private(&t);
    let missing = "6d3c0c6e-0a9e-4c2a-9e2b-000000000000";
    let servers = server_count(&t).await;

    let (status, body) = boot(&t, MEMBER, json!([{"uuid": theirs}])).await;
    let message = nova_error(status, &body, 400);
    assert_eq!(message, format!("Network {theirs} could not be found."));
    let (status, body) = boot(&t, MEMBER, json!([{"uuid": missing}])).await;
    assert_eq!(
        nova_error(status, &body, 400),
        format!("Network {missing} could not be found.")
    );
    assert_eq!(server_count(&t).await, servers, "no server recorded");

    let id = boot_active(&t, MEMBER, json!([{"uuid": t.topology.private_network_id}])).await;
    let (status, body) = attach(&t, MEMBER, &id, json!({"net_id": theirs})).await;
    assert_eq!(
        nova_error(status, &body, 404),
        format!("Network {theirs} could not be found.")
    );
    let (status, body) = attach(
        &t,
        MEMBER,
        &id,
        json!({"net_id": theirs, "fixed_ips": [{"ip_address": "10.9.0.9"}]}),
    )
    .await;
    assert_eq!(
        nova_error(status, &body, 404),
        format!("Network {theirs} could not be found.")
    );
    let (status, body) = attach(&t, MEMBER, &id, json!({"net_id": missing})).await;
    assert_eq!(
        nova_error(status, &body, 404),
        format!("Network {missing} could not be found.")
    );

    assert!(ports_on(&t, &theirs).is_empty(), "no port on their network");
    assert_eq!(t.neutron_ports(&id).len(), 1, "the server keeps its one port");

    // Its own project uses it, and an admin keeps today's powers.
    boot_active(&t, OTHER_MEMBER, json!([{"uuid": theirs}])).await;
    boot_active(&t, ADMIN, json!([{"uuid": theirs}])).await;
    let (status, body) = attach(&t, ADMIN, &id, json!({"net_id": theirs})).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_external_network_is_forbidden_to_a_member_and_allowed_to_an_admin() {
    let t = TestApp::start().await;
    let public = t.topology.public_network_id.clone();
    let servers = server_count(&t).await;
    let ports = ports_on(&t, &public).len();
    let forbidden = format!("It is not allowed to create an interface on external network {public}");

    let (status, body) = boot(&t, MEMBER, json!([{"uuid": public}])).await;
    assert_eq!(nova_error(status, &body, 403), forbidden);
    assert_eq!(server_count(&t).await, servers);

    let id = boot_active(&t, MEMBER, json!([{"uuid": t.topology.private_network_id}])).await;
    let (status, body) = attach(&t, MEMBER, &id, json!({"net_id": public})).await;
    assert_eq!(nova_error(status, &body, 403), forbidden);
    assert_eq!(ports_on(&t, &public).len(), ports, "no port on the external network");

    let admins = boot_active(&t, ADMIN, json!([{"uuid": public}])).await;
    assert_eq!(t.neutron_ports(&admins).len(), 1);
    let (status, body) = attach(&t, ADMIN, &id, json!({"net_id": public})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["interfaceAttachment"]["net_id"], public.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_network_is_usable_and_ports_are_created_in_the_servers_project() {
    let t = TestApp::start().await;
    let (shared, _) = shared(&t);

    let id = boot_active(&t, MEMBER, json!([{"uuid": shared}])).await;
    let ports = t.neutron_ports(&id);
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["network_id"], shared.as_str());
    assert_eq!(
        ports[0]["project_id"], PROJECT,
        "the server's project, not the network's"
    );

    let (status, body) = attach(&t, MEMBER, &id, json!({"net_id": shared})).await;
    assert_eq!(status, 200, "{body}");
    let port_id = body["interfaceAttachment"]["port_id"].as_str().unwrap();
    let (_, port) = t.neutron_port(port_id);
    assert_eq!(port["port"]["project_id"], PROJECT);

    let theirs = boot_active(&t, OTHER_MEMBER, json!([{"uuid": shared}])).await;
    assert_eq!(t.neutron_ports(&theirs)[0]["project_id"], OTHER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_projects_port_is_answered_as_one_that_does_not_exist() {
    let t = TestApp::start().await;
    let (shared, _) = shared(&t);
    let free = other_port(&t, json!({"network_id": shared, "project_id": OTHER}));
    let used = other_port(
        &t,
        json!({"network_id": shared, "project_id": OTHER, "device_id": "their-server", "device_owner": "compute:nova"}),
    );
    let missing = "6d3c0c6e-0a9e-4c2a-9e2b-000000000001";
    let servers = server_count(&t).await;

    for port in [free["id"].as_str().unwrap(), used["id"].as_str().unwrap(), missing] {
        let (status, body) = boot(&t, MEMBER, json!([{"port": port}])).await;
        assert_eq!(
            nova_error(status, &body, 400),
            format!("Port id {port} could not be found.")
        );
    }
    assert_eq!(server_count(&t).await, servers);

    let id = boot_active(&t, MEMBER, json!([{"uuid": t.topology.private_network_id}])).await;
    for port in [free["id"].as_str().unwrap(), used["id"].as_str().unwrap(), missing] {
        let (status, body) = attach(&t, MEMBER, &id, json!({"port_id": port})).await;
        assert_eq!(
            nova_error(status, &body, 404),
            format!("Port id {port} could not be found.")
        );
    }
    let (_, after) = t.neutron_port(free["id"].as_str().unwrap());
    assert_eq!(after["port"]["device_id"], "", "their port is left alone: {after}");
    assert_eq!(t.neutron_ports(&id).len(), 1);

    // Its own project may boot with it.
    boot_active(&t, OTHER_MEMBER, json!([{"port": free["id"]}])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_ip_another_project_holds_is_refused_without_naming_its_resources() {
    let t = TestApp::start().await;
    let (shared, their_subnet) = shared(&t);
    let holder = other_port(
        &t,
        json!({"network_id": shared, "project_id": OTHER, "fixed_ips": [{"ip_address": "10.8.0.50"}]}),
    );
    let holder_id = holder["id"].as_str().unwrap();
    let servers = server_count(&t).await;
    let ports = ports_on(&t, &shared).len();
    let check = |message: &str| {
        assert!(message.contains("10.8.0.50"), "{message}");
        assert!(!message.contains(&their_subnet), "names their subnet: {message}");
        assert!(!message.contains(holder_id), "names their port: {message}");
        assert!(!message.contains(OTHER), "names their project: {message}");
    };

    let (status, body) = boot(&t, MEMBER, json!([{"uuid": shared, "fixed_ip": "10.8.0.50"}])).await;
    check(&nova_error(status, &body, 400));
    assert_eq!(server_count(&t).await, servers, "refused, not a server in ERROR");

    let id = boot_active(&t, MEMBER, json!([{"uuid": t.topology.private_network_id}])).await;
    let (status, body) = attach(
        &t,
        MEMBER,
        &id,
        json!({"net_id": shared, "fixed_ips": [{"ip_address": "10.8.0.50"}]}),
    )
    .await;
    check(&nova_error(status, &body, 409));
    assert_eq!(ports_on(&t, &shared).len(), ports, "no port created");

    // A free address on the shared network is fine.
    let (status, body) = attach(
        &t,
        MEMBER,
        &id,
        json!({"net_id": shared, "fixed_ips": [{"ip_address": "10.8.0.51"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_networking_considers_only_networks_the_project_may_use() {
    let t = TestApp::start().await;
    let (theirs, _) = other_private(&t);

    let id = boot_active(&t, MEMBER, json!("auto")).await;
    let ports = t.neutron_ports(&id);
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["network_id"], t.topology.private_network_id.as_str());
    let (status, body) = attach(&t, MEMBER, &id, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["interfaceAttachment"]["net_id"],
        t.topology.private_network_id.as_str()
    );

    let theirs_id = boot_active(&t, OTHER_MEMBER, json!("auto")).await;
    assert_eq!(t.neutron_ports(&theirs_id)[0]["network_id"], theirs.as_str());
}
