//! Helpers shared by the simulator's test files.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::time::Duration;

use neutron_sim::{DefaultTopology, NeutronSim, RunningSim, SimConfig, SimHandle};
use serde_json::{Value, json};

/// Starts a simulator on a free loopback port.
pub async fn start(cfg: SimConfig) -> RunningSim {
    NeutronSim::start(cfg, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("start")
}

/// Starts a simulator (default configuration) holding the default topology of
/// `project`: the simulator, its handle and the topology.
pub async fn start_with_topology(project: &str) -> (RunningSim, SimHandle, DefaultTopology) {
    let sim = start(SimConfig::default()).await;
    let h = sim.handle();
    let topology = h.create_default_topology(project);
    (sim, h, topology)
}

/// Starts a simulator (default configuration) holding network `name` with an IPv4
/// subnet `cidr`: the simulator, its handle and the network's id.
pub async fn start_with_network(name: &str, cidr: &str) -> (RunningSim, SimHandle, String) {
    let sim = start(SimConfig::default()).await;
    let h = sim.handle();
    let net = network_with_subnet(&h, name, cidr);
    (sim, h, net)
}

/// A client with a (virtual-time) timeout and no idle-pool timer.
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .pool_idle_timeout(None)
        .build()
        .expect("client")
}

/// Sends a request that must get an answer: its status and JSON body (`Null` if none).
pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    try_send(request).await.expect("response")
}

/// As [`send`], for requests that may get no answer (reset, timeout).
pub async fn try_send(request: reqwest::RequestBuilder) -> reqwest::Result<(u16, Value)> {
    let r = request.send().await?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.unwrap_or(Value::Null)))
}

/// The `id` of the `resource` in an answer: `id_of(&v, "port")` is `v["port"]["id"]`.
pub fn id_of(v: &Value, resource: &str) -> String {
    v[resource]["id"].as_str().expect("id").to_string()
}

/// Creates a `resource` (in-process, as admin): `create(h, "port", body)` posts
/// `{"port": body}` to `/v2.0/ports`. The status and body of the answer.
pub fn create(h: &SimHandle, resource: &str, body: Value) -> (u16, Value) {
    h.request("POST", &format!("/v2.0/{resource}s"), Some(json!({ resource: body })))
}

/// Creates network `name` with an IPv4 subnet `cidr` (in-process, as admin); returns its id.
pub fn network_with_subnet(h: &SimHandle, name: &str, cidr: &str) -> String {
    let (st, v) = create(h, "network", json!({"name": name}));
    assert_eq!(st, 201);
    let net = id_of(&v, "network");
    let (st, _) = create(h, "subnet", json!({"network_id": net, "ip_version": 4, "cidr": cidr}));
    assert_eq!(st, 201);
    net
}
