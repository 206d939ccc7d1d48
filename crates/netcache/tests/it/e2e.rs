//! End-to-end scenarios through a fault-injecting proxy, against the embedded
//! Neutron by default and against a real Neutron when `NETCACHE_E2E_NEUTRON_URL`
//! names one (CI's real-Neutron tier runs this file against Neutron 29.0.0 with
//! and without `tag-ports-during-bulk-creation`). For the notifier scenario on a
//! real Neutron, `NETCACHE_E2E_NOVA_LISTEN` is the address its Nova notifier posts
//! to (CI starts Neutron with `NOVA_URL=http://<that>/v2.1`).
//!
//! With `NETCACHE_E2E_KEYSTONE_URL` too (CI's Keystone tier: a real Keystone, and
//! the real Neutron with Keystone auth, whose notifier authenticates as `nova`),
//! netcache runs with `auth.strategy = keystone` and reaches Neutron with its own
//! Keystone credentials; each test acts as a member of a fresh project with a real
//! token, and plays Neutron's admin with the admin's token.

use crate::common;

use axum::http::Method;
use chrono::TimeDelta;
use common::keystone::Keystone;
use common::neutron::{Backdoor, Networks};
use common::proxy::{FaultProxy, ProxyFault};
use netcache_app::app::App;
use netcache_app::settings::Settings;
use netcache_compute::prelude::*;
use netcache_domain::ServerId;
use netcache_domain::intent::IntentState;
use netcache_testenv::poll::poll;
use neutron_sim::{NeutronSim, RunningSim, SimConfig};
use serde_json::{Value, json};

/// The project of the tests' servers without Keystone (netcache's default).
const PROJECT: &str = "demo";

struct E2e {
    /// The project the test's servers and networks are in.
    project: String,
    /// The member's token, with Keystone.
    token: Option<String>,
    app: App,
    proxy: FaultProxy,
    neutron: Backdoor,
    nets: Networks,
    http: reqwest::Client,
    real: bool,
    _sim: Option<RunningSim>,
    _dir: tempfile::TempDir,
}

impl E2e {
    /// `subnet` keeps each test's CIDRs apart on a shared real Neutron.
    async fn start(subnet: u8, listen: Option<&str>) -> Self {
        // CI's tiers that set these require them (NETCACHE_TEST_REQUIRE_ENV=1): a
        // scenario meant for a real Neutron never passes against the embedded one.
        let (upstream, sim, real) = match netcache_testenv::optional("NETCACHE_E2E_NEUTRON_URL") {
            Some(url) => (url, None, true),
            None => {
                let sim = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
                    .await
                    .unwrap();
                (sim.url(), Some(sim), false)
            }
        };
        let keystone = match netcache_testenv::optional("NETCACHE_E2E_KEYSTONE_URL") {
            Some(url) => Some(Keystone::connect(&url).await),
            None => None,
        };
        let (project, token) = match &keystone {
            Some(keystone) => {
                let (project, token) = keystone.member("e2e", "member").await;
                (project, Some(token))
            }
            None => (PROJECT.to_owned(), None),
        };
        let neutron = Backdoor::new(&upstream, keystone.as_ref().map(|k| k.admin_token.clone()));
        let nets = neutron.networks(&project, subnet).await;
        let proxy = FaultProxy::start(&neutron.url).await;
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings {
            listen: listen.unwrap_or("127.0.0.1:0").parse().unwrap(),
            database: format!("sqlite:{}/netcache.db", dir.path().display()),
            ..Settings::default()
        };
        settings.neutron.url = Some(proxy.url().to_owned());
        // A held request never answers, so the timeout only bounds the wait; a
        // real Neutron under CI load gets a generous one.
        settings.neutron.timeout = if real { 10.0 } else { 2.0 };
        settings.heal.interval = 0.0;
        settings.gc.interval = 0.0;
        // The call-count scenario boots 101 servers in one project.
        settings.quota.unlimit_servers();
        if let Some(keystone) = &keystone {
            // netcache is the `nova` service user towards Keystone and Neutron;
            // neutron.url (the proxy) overrides the catalog's network endpoint.
            common::keystone::validate_tokens_as_nova(&mut settings, &keystone.url);
            let n = &mut settings.neutron;
            n.auth_url = Some(keystone.url.clone());
            n.username = Some("nova".into());
            n.password = Some("nova-secret".into());
            n.project_name = Some("service".into());
        }
        let app = App::start(&settings).await.unwrap();
        if let Some(sim) = &sim {
            sim.handle().set_nova_url(Some(format!("{}/v2.1", app.api_url())));
        }
        proxy.reset_calls();
        Self {
            project,
            token,
            app,
            proxy,
            neutron,
            nets,
            http: reqwest::Client::new(),
            real,
            _sim: sim,
            _dir: dir,
        }
    }

    /// A request; after a DELETE, waits for the operation it started (Nova
    /// answers before the delete or detach is done).
    async fn api(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let settle = method == Method::DELETE;
        let mut request = self.http.request(method, format!("{}/v2.1{path}", self.app.api_url()));
        if let Some(token) = &self.token {
            request = request.header("x-auth-token", token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = common::send(request).await;
        if settle {
            self.app.compute.settle().await;
        }
        response
    }

    async fn boot(&self, networks: Value) -> String {
        let (status, body) = self
            .api(
                Method::POST,
                "/servers",
                Some(json!({"server": {"name": "e2e", "flavorRef": "1", "imageRef": common::IMAGE, "networks": networks}})),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        self.app.compute.settle().await;
        body["server"]["id"].as_str().unwrap().to_owned()
    }

    async fn boot_on_private(&self) -> String {
        self.boot(json!([{"uuid": self.nets.private}])).await
    }

    async fn server(&self, id: &str) -> Value {
        let (status, body) = self.api(Method::GET, &format!("/servers/{id}"), None).await;
        assert_eq!(status, 200, "{body}");
        body["server"].clone()
    }

    async fn interfaces(&self, id: &str) -> Vec<String> {
        let (_, body) = self
            .api(Method::GET, &format!("/servers/{id}/os-interface"), None)
            .await;
        common::attachment_port_ids(&body)
    }

    fn create_path() -> &'static str {
        "/v2.0/ports"
    }
}

fn marker_of(port: &Value) -> String {
    format!("{} {}", port["name"], port["tags"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_adopt_path_through_a_lost_response() {
    let e = E2e::start(11, None).await;
    e.proxy
        .inject(Method::POST, E2e::create_path(), 1, ProxyFault::LoseResponse);
    let id = e.boot_on_private().await;
    assert_eq!(e.server(&id).await["status"], "ACTIVE");
    let ports = e.neutron.ports_of(&id).await;
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(e.interfaces(&id).await, [ports[0]["id"].as_str().unwrap()]);
    let intents = e
        .app
        .compute
        .store()
        .intents(id.parse::<ServerId>().unwrap())
        .await
        .unwrap();
    assert_eq!(intents.len(), 1);
    assert!(
        intents[0].adopted && intents[0].state == IntentState::Created,
        "{intents:?}"
    );
    assert!(
        marker_of(&ports[0]).contains(&intents[0].id.to_string()),
        "{}",
        ports[0]
    );
    assert_eq!(e.proxy.calls().get("ports.create"), Some(&1), "never re-POSTed");
    println!(
        "adopt ({}): the create's answer was lost; server {id} ACTIVE with port {} adopted by marker {} (intent {}); one POST",
        if e.real { "real Neutron" } else { "embedded Neutron" },
        ports[0]["id"],
        marker_of(&ports[0]),
        intents[0].id
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_late_commit_ghost_is_shown_nowhere_then_collected() {
    let e = E2e::start(12, None).await;
    e.proxy
        .inject(Method::POST, E2e::create_path(), 1, ProxyFault::HoldUntilReleased);
    let id = e.boot_on_private().await;
    let server = e.server(&id).await;
    assert_eq!(server["status"], "ACTIVE");
    assert_eq!(e.proxy.release_held().await, [201], "the late commit");

    let server_id: ServerId = id.parse().unwrap();
    let intents = e.app.compute.store().intents(server_id).await.unwrap();
    assert_eq!(
        intents.iter().map(|i| i.state).collect::<Vec<_>>(),
        [IntentState::Abandoned, IntentState::Created]
    );
    assert_ne!(intents[0].host, intents[1].host, "rescheduled");
    let ports = e.neutron.ports_of(&id).await;
    assert_eq!(ports.len(), 2, "{ports:?}");
    let attached = intents[1].port_id.as_ref().unwrap().to_string();
    let ghost = ports.iter().find(|p| p["id"] != attached.as_str()).unwrap().clone();
    assert!(marker_of(&ghost).contains(&intents[0].id.to_string()), "{ghost}");
    assert_eq!(e.interfaces(&id).await, std::slice::from_ref(&attached));
    let ghost_ip = ghost["fixed_ips"][0]["ip_address"].as_str().unwrap();
    let shown = e.server(&id).await;
    assert!(!common::shows_ip(&shown, ghost_ip), "ghost {ghost_ip} in {shown}");
    println!(
        "late commit ({}): server {id} shows [{attached}] in os-interface and addresses {}; Neutron holds {} ports with its device_id; \
         ghost {} carries {} of abandoned intent {} (host {}); attached via intent {} (host {})",
        if e.real { "real Neutron" } else { "embedded Neutron" },
        e.server(&id).await["addresses"],
        ports.len(),
        ghost["id"],
        marker_of(&ghost),
        intents[0].id,
        intents[0].host,
        intents[1].id,
        intents[1].host,
    );

    let compute = &e.app.compute;
    assert!(!compute.audit(&|_, _| {}).await.unwrap().is_clean());
    compute.heal().await.unwrap();
    compute.heal().await.unwrap();
    compute.clock().advance(TimeDelta::minutes(11));
    let gc = compute.gc().await.unwrap();
    assert_eq!(gc.deleted.len(), 1, "{gc:?}");
    assert_eq!(e.neutron.port(ghost["id"].as_str().unwrap()).await.0, 404);
    assert_eq!(e.neutron.ports_of(&id).await.len(), 1);
    assert!(compute.audit(&|_, _| {}).await.unwrap().is_clean());
    println!(
        "late commit: GC deleted {:?} after two sightings and the grace period; audit clean",
        gc.deleted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_ports_and_attach_detach() {
    let e = E2e::start(13, None).await;
    let user = e
        .neutron
        .create_port(json!({"network_id": e.nets.private, "project_id": e.project}))
        .await;
    let user_id = user["id"].as_str().unwrap().to_owned();
    let id = e.boot(json!([{"port": user_id}])).await;
    assert_eq!(e.server(&id).await["status"], "ACTIVE");
    assert_eq!(e.neutron.port(&user_id).await.1["port"]["device_id"], id.as_str());

    let path = format!("/servers/{id}/os-interface");
    let (status, by_net) = e
        .api(
            Method::POST,
            &path,
            Some(json!({"interfaceAttachment": {"net_id": e.nets.private}})),
        )
        .await;
    assert_eq!(status, 200, "{by_net}");
    let (status, by_ip) = e
        .api(
            Method::POST,
            &path,
            Some(
                json!({"interfaceAttachment": {"net_id": e.nets.private, "fixed_ips": [{"ip_address": "10.13.0.250"}]}}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{by_ip}");
    assert_eq!(
        by_ip["interfaceAttachment"]["fixed_ips"][0]["ip_address"],
        "10.13.0.250"
    );
    let other = e
        .neutron
        .create_port(json!({"network_id": e.nets.private, "project_id": e.project}))
        .await;
    let other_id = other["id"].as_str().unwrap().to_owned();
    let (status, _) = e
        .api(
            Method::POST,
            &path,
            Some(json!({"interfaceAttachment": {"port_id": other_id}})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(e.interfaces(&id).await.len(), 4);

    let created = by_net["interfaceAttachment"]["port_id"].as_str().unwrap().to_owned();
    for port in [&created, &other_id] {
        let (status, _) = e.api(Method::DELETE, &format!("{path}/{port}"), None).await;
        assert_eq!(status, 202);
    }
    assert_eq!(e.neutron.port(&created).await.0, 404, "created port deleted on detach");
    assert_eq!(
        e.neutron.port(&other_id).await.1["port"]["device_id"],
        "",
        "user port unbound on detach"
    );
    assert_eq!(e.interfaces(&id).await.len(), 2);

    let (status, _) = e.api(Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(status, 204);
    let (status, after) = e.neutron.port(&user_id).await;
    assert_eq!(status, 200, "the user's port survives the delete");
    assert_eq!(after["port"]["device_id"], "");
    assert_eq!(after["port"]["device_owner"], "");
    assert!(
        e.neutron.ports_of(&id).await.is_empty(),
        "nothing left with the server's id"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_refreshes_and_reports_a_foreign_ghost_without_adding_it() {
    let e = E2e::start(14, None).await;
    let id = e.boot_on_private().await;
    let port = e.interfaces(&id).await.remove(0);
    e.neutron
        .update_port(
            &port,
            json!({"fixed_ips": [{"subnet_id": e.nets.subnet, "ip_address": "10.14.0.250"}]}),
        )
        .await;
    let fip = e.neutron.associate_floating_ip(&e.nets.public, &port, &e.project).await;
    let stranger = e
        .neutron
        .create_port(json!({"network_id": e.nets.private, "project_id": e.project, "device_id": id, "device_owner": "compute:nova"}))
        .await;

    let report = e.app.compute.heal().await.unwrap();
    assert_eq!(report.ghosts.len(), 1, "{report:?}");
    let server = e.server(&id).await;
    assert!(
        common::shows_ip(&server, "10.14.0.250") && common::shows_ip(&server, &fip),
        "{server}"
    );
    let stranger_ip = stranger["fixed_ips"][0]["ip_address"].as_str().unwrap();
    assert!(!common::shows_ip(&server, stranger_ip), "{stranger_ip} in {server}");
    assert_eq!(e.interfaces(&id).await, [port]);
    let audit = e.app.compute.audit(&|_, _| {}).await.unwrap();
    assert_eq!(audit.totals.ghosts_foreign, 1);
    assert_eq!(audit.totals.stale_caches, 0, "healed");
}

/// Neutron's Nova notifier posts `network-changed` to netcache's events endpoint
/// when a floating IP is associated through Neutron's API: no heal runs here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neutron_notifier_brings_a_floating_ip_into_addresses() {
    let listen = std::env::var("NETCACHE_E2E_NOVA_LISTEN").ok();
    if std::env::var("NETCACHE_E2E_NEUTRON_URL").is_ok() {
        assert!(
            listen.is_some(),
            "a real Neutron needs NETCACHE_E2E_NOVA_LISTEN (its NOVA_URL) for this scenario"
        );
    }
    let e = E2e::start(15, listen.as_deref()).await;
    let id = e.boot_on_private().await;
    let port = e.interfaces(&id).await.remove(0);
    let fip = e.neutron.associate_floating_ip(&e.nets.public, &port, &e.project).await;
    // Neutron batches events (every second on the real one); wait for it, bounded.
    let shown = poll(async || common::shows_ip(&e.server(&id).await["addresses"], &fip).then_some(()))
        .await
        .is_some();
    assert!(
        shown,
        "floating IP {fip} did not reach addresses through network-changed"
    );
    assert_eq!(e.app.compute.heal_passes(), 0, "no heal pass ran");
}

/// Neutron calls per operation, counted by the proxy: one boot, one delete, and a
/// heal pass over 100 servers. Nova (counted from its neutron.py 34.0.0): ~9, 3 and ~700. Events
/// Neutron sends meanwhile (`network-vif-plugged`) cost netcache no calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neutron_call_counts_for_boot_delete_and_heal() {
    let e = E2e::start(16, None).await;
    e.boot_on_private().await; // learns the network's details
    e.proxy.reset_calls();
    let id = e.boot_on_private().await;
    let boot = e.proxy.calls();
    e.proxy.reset_calls();
    e.api(Method::DELETE, &format!("/servers/{id}"), None).await;
    let delete = e.proxy.calls();
    for _ in 0..99 {
        e.boot_on_private().await;
    }
    e.proxy.reset_calls();
    let report = e.app.compute.heal().await.unwrap();
    let heal = e.proxy.calls();
    println!(
        "Neutron calls ({}): boot {boot:?}; delete {delete:?}; heal of {} servers {heal:?}",
        if e.real { "real Neutron" } else { "embedded Neutron" },
        report.servers
    );
    // One create; without tags in the POST, one more call sets the tags.
    let tags_in_post = e
        .neutron
        .extensions()
        .await
        .iter()
        .any(|a| a == "tag-ports-during-bulk-creation");
    assert_eq!(boot.values().sum::<u64>(), if tags_in_post { 1 } else { 2 }, "{boot:?}");
    assert_eq!(delete.values().sum::<u64>(), 1, "{delete:?}");
    assert_eq!(
        report.servers, 100,
        "the 100 live servers; the deleted one's create settled, so it cannot gain a ghost of ours"
    );
    assert!(heal.values().sum::<u64>() <= 4, "{heal:?}");
}
