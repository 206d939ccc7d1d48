//! Two netcache instances, each owning its hosts, sharing one PostgreSQL database
//! (as several processes do): neither takes over the other's live work, and an
//! attach through one racing a delete through the other leaks nothing. Each test
//! takes the admin URL of a PostgreSQL server (`NETCACHE_TEST_PG_URL`, CI tier 2)
//! and is listed in `main.rs`; without it, it is reported ignored.

use crate::common;

use std::time::Duration;

use common::proxy::ProxyFault;
use common::{Options, TestApp};
use netcache_app::app::App;
use netcache_app::scratch_pg::ScratchDatabase;
use netcache_app::settings::Settings;
use netcache_compute::prelude::*;
use netcache_testenv::poll::{eventually, until};
use neutron_sim::SimConfig;
use reqwest::Method;
use serde_json::json;

struct Pair {
    /// Instance `a` (host-a), with the embedded Neutron and the fault proxy.
    a: TestApp,
    /// Instance `b` (host-b), on the same database and Neutron.
    b: Option<App>,
    database: ScratchDatabase,
}

impl Pair {
    /// Two instances on a scratch database of the server of `admin`.
    async fn start(admin: &str) -> Self {
        Self::with(admin, SimConfig::default(), |_| {}).await
    }

    /// `tweak` applies to both instances' settings.
    async fn with(admin: &str, sim: SimConfig, tweak: fn(&mut Settings)) -> Self {
        let database = ScratchDatabase::create(admin, &format!("test_{}", uuid::Uuid::new_v4().as_u64_pair().0))
            .await
            .unwrap();
        let mut a = TestApp::with(Options {
            sim,
            proxy: true,
            neutron_timeout: Duration::from_secs(60),
            database: Some(database.url.clone()),
            ..Options::default()
        })
        .await;
        // Started on the default hosts; restarted as host-a's owner.
        a.settings.compute.hosts = vec!["host-a".into()];
        tweak(&mut a.settings);
        a.restart(|_| {}).await;
        let mut pair = Self { a, b: None, database };
        pair.start_b().await;
        pair
    }

    async fn start_b(&mut self) {
        let mut settings = self.a.settings.clone();
        settings.compute.hosts = vec!["host-b".into()];
        self.b = Some(App::start(&settings).await.unwrap());
    }

    fn b(&self) -> &App {
        self.b.as_ref().unwrap()
    }

    async fn call_b(&self, method: Method, path: &str) -> (u16, serde_json::Value) {
        let url = format!("{}/v2.1{path}", self.b().api_url());
        common::send_json(&self.a.http, method, &url, None).await
    }

    async fn settle(&self) {
        self.a.app().compute.settle().await;
        self.b().compute.settle().await;
    }

    async fn stop(mut self) {
        if let Some(b) = self.b.take() {
            b.shutdown().await;
        }
        if let Some(a) = self.a.app.take() {
            a.shutdown().await;
        }
        self.database.drop_database().await.unwrap();
    }
}

pub async fn a_restarting_process_leaves_a_live_processs_build_alone(admin: String) {
    let mut pair = Pair::start(&admin).await;
    let t = &pair.a;
    // a's build has recorded its intent; Neutron holds the create.
    t.proxy().inject(Method::POST, "/v2.0/ports", 1, ProxyFault::Gate);
    let id = t
        .start_boot("vm", json!([{"uuid": t.topology.private_network_id}]))
        .await;
    t.proxy().gated(1).await;

    // b restarts (claiming what is orphaned) and runs GC: a's work is not orphaned.
    pair.b.take().unwrap().shutdown().await;
    pair.start_b().await;
    let b = pair.b();
    assert_eq!(b.compute.claim_orphaned_operations().await.unwrap(), 0);
    let report = b.compute.gc().await.unwrap();
    assert_eq!(report.intents_resolved, 0, "a's pending intent is a's");
    let op = b.compute.store().operation(id.parse().unwrap()).await.unwrap();
    assert_eq!(op.unwrap().owner, *pair.a.app().compute.owner(), "still a's");

    pair.a.proxy().open_gate();
    pair.settle().await;
    let server = pair.a.admin_server(&id).await;
    assert_eq!(server["status"], "ACTIVE", "{server}");
    assert_eq!(server["OS-EXT-SRV-ATTR:host"], "host-a", "{server}");
    assert_eq!(pair.a.neutron_ports(&id).len(), 1);
    assert_eq!(pair.a.interface_port_ids(&id).await.len(), 1);
    pair.stop().await;
}

pub async fn an_attach_through_one_process_and_a_delete_through_the_other_leak_nothing(admin: String) {
    let pair = Pair::start(&admin).await;
    let t = &pair.a;
    let id = t.boot_on_private().await;
    let attach = t.attach_held_at_create(&id).await;

    let (status, body) = pair.call_b(Method::DELETE, &format!("/servers/{id}")).await;
    assert_eq!(status, 204, "the delete is queued on the attach: {body}");
    t.proxy().open_gate();
    let (status, body) = attach.await.unwrap();
    assert_eq!(status, 200, "{body}");
    pair.settle().await;

    assert_eq!(t.get(&format!("/servers/{id}")).await.0, 404);
    assert_eq!(pair.call_b(Method::GET, &format!("/servers/{id}")).await.0, 404);
    assert!(t.neutron_ports(&id).is_empty(), "no port left");
    let server_id = id.parse().unwrap();
    let store = t.app().compute.store();
    assert!(store.vifs(server_id).await.unwrap().is_empty(), "no VIF record left");
    assert!(store.operations().await.unwrap().is_empty());
    pair.stop().await;
}

/// A build on a waits for `network-vif-plugged`; Neutron sends the events to b.
pub async fn a_build_sees_plug_events_the_other_process_took(admin: String) {
    let sim = SimConfig {
        bind_activates: false,
        ..SimConfig::default()
    };
    let pair = Pair::with(&admin, sim, |s| s.compute.vif_plugging_timeout = 300.0).await;
    let t = &pair.a;
    let id = t
        .start_boot("w", json!([{"uuid": t.topology.private_network_id}]))
        .await;
    let port = common::wait_for_ports(t, &id, 1).await.remove(0);
    // The build waits once its cache holds the port (an event before that is
    // remembered only by the process that took it).
    let server_id = id.parse().unwrap();
    until("the build recorded its port", async || {
        !t.app().compute.network_info(server_id).await.unwrap().0.is_empty()
    })
    .await;
    let event =
        json!({"events": [{"name": "network-vif-plugged", "server_uuid": id, "tag": port, "status": "completed"}]});
    let url = format!("{}/v2.1/os-server-external-events", pair.b().api_url());
    let (status, body) = common::send(common::as_service(t.http.post(&url)).json(&event)).await;
    assert_eq!(status, 200, "{body}");
    pair.settle().await;
    let server = t.server(&id).await;
    assert_eq!(server["status"], "ACTIVE", "{server}");
    pair.stop().await;
}

/// A lost node lock (its PostgreSQL session gone) is noticed within a lease
/// tick: while another session holds the node, the process takes no new work
/// (a boot answers 503, nothing is claimed); once the node is free again, it
/// holds the lock again and works. Before, the loss went unnoticed.
pub async fn a_lost_node_lock_stops_new_work_until_it_is_held_again(admin: String) {
    let pair = Pair::start(&admin).await;
    let t = &pair.a;
    let a = t.app().compute.clone();
    let admin = sqlx::PgPool::connect(&pair.database.url).await.unwrap();
    let terminated: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('netcache-node:host-a', 0)",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert_eq!(terminated, [true], "host-a's lock session");
    // Another incarnation of host-a takes the node meanwhile, once the
    // terminated session has ended.
    let usurper = netcache_store::open(&pair.database.url).await.unwrap();
    let held = eventually("the terminated session ended", async || {
        usurper.lock_node("host-a").await.ok()
    })
    .await;

    a.lease_tick().await;
    assert!(!a.takes_work());
    let boot = json!({"server": {"name": "vm", "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"uuid": t.topology.private_network_id}]}});
    let (status, body) = t.post("/servers", boot.clone()).await;
    assert_eq!(status, 503, "no new work without the node lock: {body}");
    assert_eq!(a.claim_orphaned_operations().await.unwrap(), 0);

    // The usurper's session ends (asynchronously, on the server's side).
    drop(held);
    until("the lock is held again", async || {
        a.lease_tick().await;
        a.takes_work()
    })
    .await;
    let (status, body) = t.post("/servers", boot).await;
    assert_eq!(status, 202, "the lock is held again: {body}");
    pair.settle().await;
    admin.close().await;
    pair.stop().await;
}
