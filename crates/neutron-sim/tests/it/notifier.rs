//! Nova notifier: events reach a local `os-server-external-events` endpoint, batched,
//! with Neutron's headers, retried on failure, never blocking the API.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::{client, id_of, send, start, start_with_topology};
use neutron_sim::SimConfig;
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(Clone)]
struct Nova {
    tx: mpsc::UnboundedSender<(HeaderMap, Value)>,
    /// Number of first requests to fail with 500.
    fail_first: Arc<AtomicU32>,
}

async fn events(State(n): State<Nova>, headers: HeaderMap, body: axum::Json<Value>) -> StatusCode {
    if n.fail_first.load(Ordering::SeqCst) > 0 {
        n.fail_first.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    let _ = n.tx.send((headers, body.0));
    StatusCode::OK
}

/// A fake Nova on 127.0.0.1:0; returns its `/v2.1` URL and the received batches.
async fn fake_nova(fail_first: u32) -> (String, mpsc::UnboundedReceiver<(HeaderMap, Value)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let state = Nova {
        tx,
        fail_first: Arc::new(AtomicU32::new(fail_first)),
    };
    let app = Router::new()
        .route("/v2.1/os-server-external-events", post(events))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v2.1", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// Waits (virtual time, bounded) until `cond` holds.
async fn wait_for(cond: impl Fn() -> bool) {
    netcache_testenv::poll::until("the condition", async || cond()).await;
}

/// As real Neutron 29 sends them: only vif plugged/unplugged carry a status.
fn ev(name: &str, server: &str, tag: &str) -> Value {
    if name.ends_with("plugged") {
        json!({"name": name, "server_uuid": server, "status": "completed", "tag": tag})
    } else {
        json!({"name": name, "server_uuid": server, "tag": tag})
    }
}

struct Api {
    c: reqwest::Client,
    base: String,
}

impl Api {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
    /// Creates a port and returns its id.
    async fn create_port(&self, body: Value) -> String {
        let (st, v) = send(self.c.post(self.url("/v2.0/ports")).json(&body)).await;
        assert_eq!(st, 201, "{v}");
        id_of(&v, "port")
    }
    async fn put(&self, path: &str, body: Value) {
        let (st, v) = send(self.c.put(self.url(path)).json(&body)).await;
        assert_eq!(st, 200, "{path}: {v}");
    }
    async fn delete(&self, path: &str) {
        let (st, v) = send(self.c.delete(self.url(path))).await;
        assert_eq!(st, 204, "{path}: {v}");
    }
}

/// Expects `events` as the next batch Nova receives, sent with Neutron's headers.
async fn expect_batch(rx: &mut mpsc::UnboundedReceiver<(HeaderMap, Value)>, events: &[Value]) {
    let (headers, body) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("a batch")
        .expect("open");
    assert_eq!(headers["x-auth-token"], "notused");
    assert_eq!(headers["x-openstack-nova-api-version"], "2.1");
    assert_eq!(body["events"].as_array().expect("events"), events);
}

#[tokio::test(start_paused = true)]
async fn plugged_changed_fip_unplugged_deleted() {
    let (nova, mut rx) = fake_nova(0).await;
    let sim = start(SimConfig {
        nova_url: Some(nova),
        ..SimConfig::default()
    })
    .await;
    let topo = sim.handle().create_default_topology("demo");
    let api = Api {
        c: client(Duration::from_secs(30)),
        base: sim.url(),
    };
    let (vm1, vm2) = (uuid::Uuid::new_v4().to_string(), uuid::Uuid::new_v4().to_string());
    let port = |vm: &str| json!({"port": {"network_id": topo.private_network_id, "device_id": vm, "device_owner": "compute:nova", "binding:host_id": "h1"}});
    let changed = |vm: &str, port: &str| ev("network-changed", vm, port);

    // Binding makes the port ACTIVE: network-vif-plugged. A second port in the same interval: one batch.
    let p1 = api.create_port(port(&vm1)).await;
    let p2 = api.create_port(port(&vm2)).await;
    expect_batch(
        &mut rx,
        &[
            ev("network-vif-plugged", &vm1, &p1),
            ev("network-vif-plugged", &vm2, &p2),
        ],
    )
    .await;

    // Fixed IP change: network-changed.
    let p1_path = format!("/v2.0/ports/{p1}");
    api.put(
        &p1_path,
        json!({"port": {"fixed_ips": [{"subnet_id": topo.private_subnet_id, "ip_address": "10.0.0.200"}]}}),
    )
    .await;
    expect_batch(&mut rx, &[changed(&vm1, &p1)]).await;

    // FIP associated, moved to another port (event for both), disassociated, associated
    // again, deleted.
    let (st, fip) = send(
        api.c
            .post(api.url("/v2.0/floatingips"))
            .json(&json!({"floatingip": {"floating_network_id": topo.public_network_id, "port_id": p1}})),
    )
    .await;
    assert_eq!(st, 201, "{fip}");
    expect_batch(&mut rx, &[changed(&vm1, &p1)]).await;
    let fip_path = format!("/v2.0/floatingips/{}", id_of(&fip, "floatingip"));
    for (port_id, events) in [
        (json!(p2), vec![changed(&vm1, &p1), changed(&vm2, &p2)]),
        (Value::Null, vec![changed(&vm2, &p2)]),
        (json!(p2), vec![changed(&vm2, &p2)]),
    ] {
        api.put(&fip_path, json!({"floatingip": {"port_id": port_id}})).await;
        expect_batch(&mut rx, &events).await;
    }
    api.delete(&fip_path).await;
    expect_batch(&mut rx, &[changed(&vm2, &p2)]).await;

    // Unbinding: ACTIVE -> DOWN, network-vif-unplugged, then network-changed (any change).
    api.put(&p1_path, json!({"port": {"binding:host_id": ""}})).await;
    expect_batch(&mut rx, &[ev("network-vif-unplugged", &vm1, &p1), changed(&vm1, &p1)]).await;
    api.put(&p1_path, json!({"port": {"name": "renamed"}})).await;
    expect_batch(&mut rx, &[changed(&vm1, &p1)]).await;

    // Deletion: network-vif-deleted.
    api.delete(&p1_path).await;
    expect_batch(&mut rx, &[ev("network-vif-deleted", &vm1, &p1)]).await;

    // Nothing for: detaching a port (device cleared), then deleting it; non-uuid device ids;
    // non-compute owners. The next batch is the plugging of a new compute port.
    let p2_path = format!("/v2.0/ports/{p2}");
    api.put(&p2_path, json!({"port": {"device_id": "", "device_owner": ""}}))
        .await;
    api.delete(&p2_path).await;
    api.create_port(json!({"port": {"network_id": topo.private_network_id, "device_id": "not-a-uuid", "device_owner": "compute:nova", "binding:host_id": "h"}})).await;
    api.create_port(json!({"port": {"network_id": topo.private_network_id, "device_id": vm1, "binding:host_id": "h"}}))
        .await;
    let p4 = api.create_port(port(&vm2)).await;
    expect_batch(&mut rx, &[ev("network-vif-plugged", &vm2, &p4)]).await;
    let h = sim.handle();
    wait_for(|| h.stats().nova_batches_sent == 11).await;
    assert_eq!(h.stats().nova_events_sent, 14);
    sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn retried_with_backoff_and_never_blocks_the_api() {
    let (nova, mut rx) = fake_nova(2).await;
    let (sim, h, topo) = start_with_topology("demo").await;
    let api = Api {
        c: client(Duration::from_secs(30)),
        base: sim.url(),
    };
    let vm = uuid::Uuid::new_v4().to_string();
    let body = json!({"port": {"network_id": topo.private_network_id, "device_id": vm, "device_owner": "compute:nova", "binding:host_id": "h1"}});

    // Nova unreachable (nothing listens there): the API answers at once anyway, and the
    // batch is tried 1 + notify_retries times, then dropped.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dead_url = format!("http://{}/v2.1", dead.local_addr().expect("addr"));
    drop(dead);
    h.set_nova_url(Some(dead_url));
    let t0 = tokio::time::Instant::now();
    api.create_port(body.clone()).await;
    assert!(t0.elapsed() < Duration::from_millis(10));
    wait_for(|| h.stats().nova_post_failures == 4).await;
    // Backoff 200 + 400 + 800 ms after the 1 s batching interval.
    assert!(t0.elapsed() >= Duration::from_millis(2400), "{:?}", t0.elapsed());

    // Nova failing twice with 500: the third attempt delivers.
    h.set_nova_url(Some(nova));
    let pid = api.create_port(body).await;
    expect_batch(&mut rx, &[ev("network-vif-plugged", &vm, &pid)]).await;
    wait_for(|| h.stats().nova_events_sent == 1).await;
    assert_eq!(h.stats().nova_post_failures, 6);
    sim.shutdown().await;
}
