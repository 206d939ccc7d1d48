//! Simulator-only behaviour: noauth project scoping, policies by role, default topology,
//! bulk create, index-backed filtering at scale, and robustness against garbage input.

use crate::common;

use common::{create, id_of, send, start, start_with_network, start_with_topology};
use neutron_sim::{Caller, SimConfig};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

fn member(project: &str) -> Caller {
    Caller {
        project_id: project.into(),
        is_admin: false,
        is_service: false,
    }
}

/// The noauth headers of a `member,reader` of `project`.
fn as_member(request: reqwest::RequestBuilder, project: &str) -> reqwest::RequestBuilder {
    request
        .header("X-Project-Id", project)
        .header("X-Roles", "member,reader")
}

#[tokio::test]
async fn noauth_headers_scope_projects() {
    let sim = start(SimConfig::default()).await;
    let c = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", sim.url());
    // Project a creates a network in its own project (body project_id is ignored for members).
    let (st, na) = send(
        as_member(c.post(url("/v2.0/networks")), "a").json(&json!({"network": {"name": "na", "project_id": "zzz"}})),
    )
    .await;
    assert_eq!(st, 201);
    assert_eq!(na["network"]["project_id"], "a");
    assert!(
        na["network"].get("provider:network_type").is_none(),
        "provider attributes are admin-only"
    );
    let na = id_of(&na, "network");
    // Project b cannot see it.
    let (st, _) = send(as_member(c.get(url(&format!("/v2.0/networks/{na}"))), "b")).await;
    assert_eq!(st, 404);
    let (_, v) = send(as_member(c.get(url("/v2.0/networks")), "b")).await;
    assert_eq!(v, json!({"networks": []}));
    // Admin (no headers) sees it, in project fake_project_id by default for its own creations.
    let (_, v) = send(c.get(url(&format!("/v2.0/networks/{na}")))).await;
    assert_eq!(v["network"]["id"], na.as_str());
    let (_, v) = send(
        c.post(url("/v2.0/networks"))
            .json(&json!({"network": {"name": "shared", "shared": true}})),
    )
    .await;
    assert_eq!(v["network"]["project_id"], "fake_project_id");
    let shared = id_of(&v, "network");
    let (st, _) = send(
        c.post(url("/v2.0/subnets"))
            .json(&json!({"subnet": {"network_id": shared, "ip_version": 4, "cidr": "10.1.0.0/24"}})),
    )
    .await;
    assert_eq!(st, 201);
    // b sees the shared network and creates a port on it, in project b.
    let (_, v) = send(as_member(c.get(url("/v2.0/networks")), "b")).await;
    assert_eq!(v["networks"].as_array().map(Vec::len), Some(1));
    let (st, p) = send(as_member(c.post(url("/v2.0/ports")), "b").json(&json!({"port": {"network_id": shared}}))).await;
    assert_eq!(st, 201);
    assert_eq!(p["port"]["project_id"], "b");
    assert!(
        p["port"].get("binding:host_id").is_none(),
        "binding attributes are hidden from members"
    );
    // a sees none of b's ports; a member cannot bind a host.
    let (_, v) = send(as_member(c.get(url("/v2.0/ports")), "a")).await;
    assert_eq!(v, json!({"ports": []}));
    let (st, _) = send(
        as_member(c.post(url("/v2.0/ports")), "a").json(&json!({"port": {"network_id": na, "binding:host_id": "h"}})),
    )
    .await;
    assert_eq!(st, 403);
    let (st, v) = sim
        .handle()
        .request_as(&member("b"), "GET", "/v2.0/ports?fields=project_id", None);
    assert_eq!((st, v), (200, json!({"ports": [{"project_id": "b"}]})));
    // A service caller may set binding:profile (admin may not).
    let (st, v) = send(
        c.post(url("/v2.0/ports"))
            .header("X-Project-Id", "b")
            .header("X-Roles", "service")
            .json(&json!({"port": {"network_id": shared, "binding:host_id": "h", "binding:profile": {"pci_slot": "0000:01:00.1"}}})),
    )
    .await;
    assert_eq!(st, 201);
    assert_eq!(v["port"]["binding:profile"], json!({"pci_slot": "0000:01:00.1"}));
    sim.shutdown().await;
}

#[tokio::test]
async fn default_topology_is_idempotent_and_fip_ready() {
    let (sim, h, t1) = start_with_topology("demo").await;
    let t2 = h.create_default_topology("demo");
    assert_eq!(t1, t2);
    let show = |collection: &str, id: &str| h.request("GET", &format!("/v2.0/{collection}/{id}"), None).1;
    let v = show("networks", &t1.private_network_id);
    assert_eq!(v["network"]["name"], "private");
    assert_eq!(v["network"]["project_id"], "demo");
    let v = show("networks", &t1.public_network_id);
    assert_eq!(v["network"]["router:external"], true);
    assert_eq!(v["network"]["mtu"], 1500);
    let v = show("subnets", &t1.private_subnet_v6_id);
    assert_eq!(v["subnet"]["cidr"], "fd00::/64");
    let (st, p) = create(
        &h,
        "port",
        json!({"network_id": t1.private_network_id, "project_id": "demo"}),
    );
    assert_eq!(st, 201);
    assert_eq!(
        p["port"]["fixed_ips"].as_array().map(Vec::len),
        Some(2),
        "IPv4 + SLAAC IPv6"
    );
    let (st, f) = create(
        &h,
        "floatingip",
        json!({"floating_network_id": t1.public_network_id, "port_id": p["port"]["id"]}),
    );
    assert_eq!(st, 201, "{f}");
    assert_eq!(f["floatingip"]["router_id"], t1.router_id.as_str());
    assert!(
        f["floatingip"]["floating_ip_address"]
            .as_str()
            .is_some_and(|a| a.starts_with("172.24.4."))
    );
    // Over HTTP too.
    let (_, v) = send(
        reqwest::Client::new()
            .post(format!("{}/_sim/default_topology", sim.url()))
            .json(&json!({"project_id": "demo"})),
    )
    .await;
    assert_eq!(v["router_id"], t1.router_id.as_str());
    sim.shutdown().await;
}

#[tokio::test]
async fn bind_activates_flag_and_bulk_create() {
    let sim = start(SimConfig {
        bind_activates: false,
        ..SimConfig::default()
    })
    .await;
    let h = sim.handle();
    let t = h.create_default_topology("p");
    let (_, v) = create(
        &h,
        "port",
        json!({"network_id": t.private_network_id, "binding:host_id": "h1"}),
    );
    assert_eq!(v["port"]["status"], "DOWN");
    assert_eq!(v["port"]["binding:vif_type"], "ovs");
    let before = h.port_count();
    let (st, v) = h.request("POST", "/v2.0/ports", Some(json!({"ports": [{"network_id": t.private_network_id, "name": "b1"}, {"network_id": t.private_network_id, "name": "b2"}]})));
    assert_eq!(st, 201);
    assert_eq!(v["ports"].as_array().map(Vec::len), Some(2));
    // All or nothing.
    let (st, _) = h.request(
        "POST",
        "/v2.0/ports",
        Some(
            json!({"ports": [{"network_id": t.private_network_id}, {"network_id": t.private_network_id, "bogus": 1}]}),
        ),
    );
    assert_eq!(st, 400);
    assert_eq!(h.port_count(), before + 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn indexed_filters_at_scale() {
    let (sim, h, net) = start_with_network("big", "10.0.0.0/16").await;
    for i in 0..20_000 {
        let tags = if i % 1000 == 0 { json!(["k"]) } else { json!([]) };
        let (st, _) = create(
            &h,
            "port",
            json!({"network_id": net, "device_id": format!("vm-{i}"), "tags": tags}),
        );
        assert_eq!(st, 201);
    }
    let q: Vec<String> = (0..100).map(|i| format!("device_id=vm-{}", i * 7)).collect();
    let (st, v) = h.request("GET", &format!("/v2.0/ports?{}&fields=device_id", q.join("&")), None);
    assert_eq!(st, 200);
    let mut got: Vec<String> = v["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| p["device_id"].as_str().expect("d").to_string())
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..100).map(|i| format!("vm-{}", i * 7)).collect();
    want.sort();
    assert_eq!(got, want);
    let (_, v) = h.request("GET", "/v2.0/ports?tags=k&fields=id", None);
    assert_eq!(v["ports"].as_array().map(Vec::len), Some(20));
    sim.shutdown().await;
}

/// Seeded garbage never yields a 5xx (nor a panic).
#[tokio::test]
async fn garbage_input_never_500() {
    let (sim, h, t) = start_with_topology("p").await;
    let (_, p) = create(&h, "port", json!({"network_id": t.private_network_id}));
    let pid = id_of(&p, "port");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let values = [
        json!(null),
        json!(1),
        json!(-1),
        json!("x"),
        json!(""),
        json!([]),
        json!({}),
        json!([{}]),
        json!([1]),
        json!(true),
        json!("::1"),
        json!("10.0.0.1"),
        json!({"a": [1]}),
        json!(t.private_network_id),
        json!([{"subnet_id": 5}]),
        json!([{"ip_address": "zz"}]),
    ];
    let keys = [
        "network_id",
        "name",
        "fixed_ips",
        "device_id",
        "admin_state_up",
        "mac_address",
        "binding:host_id",
        "binding:profile",
        "tags",
        "security_groups",
        "cidr",
        "ip_version",
        "gateway_ip",
        "allocation_pools",
        "port_id",
        "floating_network_id",
        "external_gateway_info",
        "subnet_id",
        "router:external",
        "shared",
        "mtu",
        "binding:vnic_type",
        "fixed_ip_address",
    ];
    let targets = [
        ("POST", "/v2.0/ports".to_string(), "port"),
        ("PUT", format!("/v2.0/ports/{pid}"), "port"),
        ("POST", "/v2.0/networks".into(), "network"),
        ("PUT", format!("/v2.0/networks/{}", t.private_network_id), "network"),
        ("POST", "/v2.0/subnets".into(), "subnet"),
        ("POST", "/v2.0/floatingips".into(), "floatingip"),
        ("POST", "/v2.0/routers".into(), "router"),
        ("PUT", format!("/v2.0/routers/{}/add_router_interface", t.router_id), ""),
        ("PUT", format!("/v2.0/ports/{pid}/tags"), ""),
    ];
    for _ in 0..3000 {
        let (m, path, key) = &targets[rng.random_range(0..targets.len())];
        let mut obj = serde_json::Map::new();
        for _ in 0..rng.random_range(0..4) {
            obj.insert(
                keys[rng.random_range(0..keys.len())].into(),
                values[rng.random_range(0..values.len())].clone(),
            );
        }
        let body = if key.is_empty() {
            Value::Object(obj)
        } else {
            json!({*key: obj})
        };
        let (st, v) = h.request(m, path, Some(body.clone()));
        assert!(st < 500, "{m} {path} {body} -> {st} {v}");
    }
    // Filters and pagination with odd values.
    for q in [
        "limit=-1",
        "marker=x&limit=1",
        "sort_key=nope&sort_dir=desc",
        "fixed_ips=garbage",
        "admin_state_up=maybe",
        "fields=",
        "tags=,,,",
    ] {
        let (st, _) = h.request("GET", &format!("/v2.0/ports?{q}"), None);
        assert!(st < 500, "{q}");
    }
    // Raw HTTP garbage.
    let c = reqwest::Client::new();
    for body in ["", "{", "[]", "null", "{\"port\": 5}", "\u{0}\u{1}"] {
        let (st, _) = send(c.post(format!("{}/v2.0/ports", sim.url())).body(body)).await;
        assert_eq!(st, 400, "{body:?}");
    }
    sim.shutdown().await;
}

/// A port create rejected for an attribute validated late (`description`, `name`, ...)
/// reserves no address: the whole body is validated before any allocation.
#[tokio::test]
async fn failed_port_create_leaks_no_fixed_ip() {
    // A /29: the pool is .2 to .6, five addresses.
    let (sim, h, net) = start_with_network("small", "10.9.0.0/29").await;
    let (_, v) = h.request("GET", &format!("/v2.0/subnets?network_id={net}"), None);
    let subnet = v["subnets"][0]["id"].as_str().expect("subnet").to_string();
    let bad_bodies = [
        json!({"network_id": net, "description": 5, "fixed_ips": [{"ip_address": "10.9.0.3"}]}),
        json!({"network_id": net, "name": 7, "fixed_ips": [{"subnet_id": subnet, "ip_address": "10.9.0.3"}]}),
        json!({"network_id": net, "admin_state_up": "maybe", "fixed_ips": [{"ip_address": "10.9.0.3"}]}),
        json!({"network_id": net, "description": 5}),
        json!({"network_id": net, "name": [], "fixed_ips": [{"subnet_id": subnet}]}),
        json!({"network_id": net, "device_id": 1}),
        json!({"network_id": net, "binding:host_id": 1}),
        json!({"network_id": net, "port_security_enabled": "x"}),
    ];
    for round in 0..3 {
        for body in &bad_bodies {
            let (st, v) = create(&h, "port", body.clone());
            assert_eq!(st, 400, "round {round}: {body} -> {v}");
        }
    }
    let (st, v) = create(&h, "port", json!({"network_id": net, "description": 5}));
    assert_eq!(st, 400);
    assert_eq!(
        v["NeutronError"]["message"],
        "Invalid input for description. Reason: '5' is not a valid string."
    );
    assert_eq!(h.port_count(), 0);
    // The exact address is still free, then the other four still auto-allocate.
    let (st, v) = create(
        &h,
        "port",
        json!({"network_id": net, "fixed_ips": [{"ip_address": "10.9.0.3"}]}),
    );
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["port"]["fixed_ips"][0]["ip_address"], "10.9.0.3");
    for _ in 0..4 {
        let (st, v) = create(&h, "port", json!({"network_id": net}));
        assert_eq!(st, 201, "{v}");
    }
    let (st, v) = create(&h, "port", json!({"network_id": net}));
    assert_eq!(st, 409);
    assert_eq!(v["NeutronError"]["type"], "IpAddressGenerationFailure");
    sim.shutdown().await;
}

/// A floating IP create rejected for its `description`, `tags` or `project_id` leaves no
/// `network:floatingip` port (nor its address) behind.
#[tokio::test]
async fn failed_fip_create_leaves_no_port() {
    let (sim, h, t) = start_with_topology("demo").await;
    let before = h.port_count();
    let pub_net = &t.public_network_id;
    for (attr, value) in [
        ("description", json!(5)),
        ("tags", json!("x")),
        ("tags", json!([1])),
        ("project_id", json!(3)),
    ] {
        for ip in [json!(null), json!("172.24.4.77")] {
            let mut fip = json!({"floating_network_id": pub_net, "floating_ip_address": ip});
            fip[attr] = value.clone();
            let (st, v) = create(&h, "floatingip", fip.clone());
            assert_eq!(st, 400, "{fip} -> {v}");
        }
    }
    assert_eq!(h.port_count(), before);
    let (_, v) = h.request("GET", "/v2.0/ports?device_owner=network:floatingip", None);
    assert_eq!(v, json!({"ports": []}));
    // The requested address was not left reserved.
    let (st, v) = create(
        &h,
        "floatingip",
        json!({"floating_network_id": pub_net, "floating_ip_address": "172.24.4.77"}),
    );
    assert_eq!(st, 201, "{v}");
    sim.shutdown().await;
}
