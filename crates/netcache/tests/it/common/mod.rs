//! TestApp: netcache (compute API + compute hosts + SQLite store) over an
//! embedded Neutron that outlives it, so a test can crash and restart netcache
//! against the same Neutron and database. Everything binds 127.0.0.1.

#![allow(dead_code)]

pub mod chaos;
pub mod keystone;
pub mod neutron;
pub mod proxy;

use std::time::Duration;

use netcache_app::app::App;
use netcache_app::settings::Settings;
use netcache_domain::ServerId;
use netcache_domain::intent::PortIntent;
use netcache_testenv::json::{items, sorted_strings};
use neutron_sim::{DefaultTopology, FaultRule, NeutronSim, RunningSim, SimConfig, SimHandle};
use serde_json::{Value, json};

pub const PROJECT: &str = "demo";
/// The image boots name (Nova refuses a boot without one, or with one it cannot find).
pub const IMAGE: &str = netcache_api::images::IMAGES[0].id;

pub struct TestApp {
    pub app: Option<App>,
    pub sim: RunningSim,
    pub topology: DefaultTopology,
    pub settings: Settings,
    pub http: reqwest::Client,
    /// Between netcache and the embedded Neutron, if asked for.
    pub proxy: Option<proxy::FaultProxy>,
    _dir: tempfile::TempDir,
}

pub struct Options {
    pub sim: SimConfig,
    /// netcache's Neutron call timeout. Faults that hold a request never answer,
    /// so this only bounds how long a test waits, not whether it passes.
    pub neutron_timeout: Duration,
    pub tweak: fn(&mut Settings),
    /// Puts the fault proxy between netcache and Neutron.
    pub proxy: bool,
    /// A database URL instead of a fresh SQLite file.
    pub database: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            sim: SimConfig::default(),
            neutron_timeout: Duration::from_secs(2),
            tweak: |_| {},
            proxy: false,
            database: None,
        }
    }
}

/// A tweak under which every compute host fails its spawns: a boot ends in
/// ERROR, never launched, and a rebuild fails.
pub fn fail_every_host(settings: &mut Settings) {
    settings.compute.failing_hosts = vec!["host1".into(), "host2".into(), "host3".into()];
}

/// Sends a server action and waits for the operation it started (Nova answers
/// 202 before the action is done; the tests look at the result).
pub async fn act(t: &TestApp, id: &str, body: Value) -> (u16, Value) {
    let response = t.post(&format!("/servers/{id}/action"), body).await;
    t.app().compute.settle().await;
    response
}

/// A sim without the `tag-ports-during-bulk-creation` extension.
pub fn sim_without_tag_extension() -> SimConfig {
    SimConfig::default().without_extension("tag-ports-during-bulk-creation")
}

/// Sends a JSON request; returns the status and the JSON body (`Null` if none).
pub async fn send_json(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    send(request).await
}

/// A noauth request as Neutron's service user.
pub fn as_service(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("x-project-id", "service").header("x-roles", "service")
}

/// A noauth request as an admin of the default project.
pub fn as_admin(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("x-roles", "admin,member,reader")
}

/// Sends a built request; returns the status and the JSON body (`Null` if none).
pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A policy table checked: each row's `method path body` sent as each of
/// `callers`, whose statuses the row lists in the same order; every wrong
/// status is gathered into one failure, and every 403 must be in Nova's words.
pub async fn check_policy_table<Who: Copy + std::fmt::Debug, const N: usize>(
    table: &[(reqwest::Method, String, Option<Value>, [u16; N])],
    callers: [Who; N],
    call: impl AsyncFn(Who, reqwest::Method, &str, Option<Value>) -> (u16, Value),
) {
    let mut wrong = Vec::new();
    for (method, path, body, expected) in table {
        for (who, want) in callers.iter().zip(expected) {
            let (got, answer) = call(*who, method.clone(), path, body.clone()).await;
            if got != *want {
                wrong.push(format!("{method} {path} as {who:?}: {got}, want {want}: {answer}"));
            }
            if got == 403 {
                let message = answer["forbidden"]["message"].as_str().unwrap_or_default();
                assert!(message.starts_with("Policy doesn't allow"), "{method} {path}: {answer}");
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Whether a JSON body holds `ip` as a whole string value. A substring test
/// is wrong here: `10.12.0.2` is inside `10.12.0.23`, and a real Neutron picks
/// addresses at random.
pub fn shows_ip(body: &Value, ip: &str) -> bool {
    body.to_string().contains(&format!("\"{ip}\""))
}

/// Sorted port ids of an `interfaceAttachments` body.
pub fn attachment_port_ids(body: &Value) -> Vec<String> {
    sorted_strings(body, "interfaceAttachments", "port_id")
}

/// The ports Neutron gives the server, once the build created `n` of them: the
/// build runs on its own task (the boot answered 202 first), so this polls
/// Neutron, bounded, for that task's creates.
pub async fn wait_for_ports(t: &TestApp, id: &str, n: usize) -> Vec<String> {
    let ports = async || {
        let ports = t.neutron_ports(id);
        (ports.len() == n).then(|| ports.iter().map(|p| p["id"].as_str().unwrap().to_owned()).collect())
    };
    netcache_testenv::poll::eventually(&format!("the build's {n} ports"), ports).await
}

impl TestApp {
    pub async fn start() -> Self {
        Self::with(Options::default()).await
    }

    /// A TestApp whose hosts all fail their spawns ([`fail_every_host`]).
    pub async fn with_every_host_failing() -> Self {
        Self::with(Options {
            tweak: fail_every_host,
            ..Options::default()
        })
        .await
    }

    pub async fn with(options: Options) -> Self {
        let sim = NeutronSim::start(options.sim, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let topology = sim.handle().create_default_topology(PROJECT);
        let dir = tempfile::tempdir().unwrap();
        let proxy = if options.proxy {
            Some(proxy::FaultProxy::start(&sim.url()).await)
        } else {
            None
        };
        let mut settings = Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            database: options
                .database
                .unwrap_or_else(|| format!("sqlite:{}/netcache.db", dir.path().display())),
            ..Settings::default()
        };
        settings.neutron.url = Some(proxy.as_ref().map_or_else(|| sim.url(), |p| p.url().to_owned()));
        settings.neutron.timeout = options.neutron_timeout.as_secs_f64();
        settings.neutron.retries = 1;
        // Tests drive heal, GC and purge passes themselves.
        settings.heal.interval = 0.0;
        settings.gc.interval = 0.0;
        settings.retention.interval = 0.0;
        // Tests boot more servers in one project than Nova's default quotas
        // allow (10); the quota tests put the defaults back (`tweak`).
        settings.quota.unlimit_servers();
        (options.tweak)(&mut settings);
        let app = App::start(&settings).await.unwrap();
        sim.handle().reset_stats();
        Self {
            app: Some(app),
            sim,
            topology,
            settings,
            http: reqwest::Client::new(),
            proxy,
            _dir: dir,
        }
    }

    pub fn app(&self) -> &App {
        self.app.as_ref().expect("netcache is running")
    }

    /// Runs the `netcache` binary against this app's database and Neutron.
    pub fn run_cli(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_netcache"))
            .args(args)
            .env("NETCACHE_DATABASE", &self.settings.database)
            .env("NETCACHE_NEUTRON_URL", self.sim.url())
            .env("NETCACHE_URL", self.app().api_url())
            .env("NETCACHE_LOG", "warn")
            .output()
            .unwrap()
    }

    pub fn neutron(&self) -> SimHandle {
        self.sim.handle()
    }

    pub fn proxy(&self) -> &proxy::FaultProxy {
        self.proxy.as_ref().expect("started with Options::proxy")
    }

    pub fn fault(&self, rule: FaultRule) {
        self.sim.handle().add_fault(rule);
    }

    /// Stops netcache (as a crash would: nothing is flushed that was not
    /// committed) and starts it again on the same database and Neutron.
    pub async fn restart(&mut self, tweak: fn(&mut Settings)) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
        tweak(&mut self.settings);
        self.app = Some(App::start(&self.settings).await.unwrap());
    }

    /// A service that dies (stops dead, its node lock dropped) at the crash point `tweak` sets.
    pub async fn doomed(tweak: fn(&mut Settings)) -> Self {
        Self::with(Options {
            tweak,
            ..Options::default()
        })
        .await
    }

    /// Restarts on the same database without the crash point; the new incarnation
    /// takes the dead one's operations over at once and finishes them.
    pub async fn restart_clean(&mut self) {
        assert!(self.app().compute.has_crashed(), "the crash point was reached");
        self.restart(|s| s.compute.crash_at = None).await;
        self.app().compute.settle().await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/v2.1{path}", self.app().api_url())
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        send_json(&self.http, method, &self.url(path), body).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// A GET as an admin: what Nova shows admins only (a server's
    /// `OS-EXT-SRV-ATTR:*`, instance action events before 2.51).
    pub async fn admin_get(&self, path: &str) -> (u16, Value) {
        send(as_admin(self.http.get(self.url(path)))).await
    }

    /// A server as an admin sees it.
    pub async fn admin_server(&self, id: &str) -> Value {
        let (status, body) = self.admin_get(&format!("/servers/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body["server"].clone()
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// `POST /os-server-external-events` as Neutron's notifier: the service role
    /// (noauth fails closed, so it is asked for).
    pub async fn post_events(&self, body: Value) -> (u16, Value) {
        send(as_service(self.http.post(self.url("/os-server-external-events"))).json(&body)).await
    }

    /// A DELETE, then waits for the operation it started (Nova answers before
    /// the delete or detach is done; the tests look at the result).
    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let response = self.call(reqwest::Method::DELETE, path, None).await;
        self.app().compute.settle().await;
        response
    }

    /// Sends raw bytes (for malformed-body tests).
    pub async fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        let response = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Boots a server and waits for its build to finish; returns its id.
    pub async fn boot(&self, networks: Value) -> String {
        let id = self.start_boot("vm", networks).await;
        self.app().compute.settle().await;
        id
    }

    /// Asks for a server named `name` (Nova's 202) and returns its id at once,
    /// while its build runs.
    pub async fn start_boot(&self, name: &str, networks: Value) -> String {
        let (status, body) = self
            .post(
                "/servers",
                json!({"server": {"name": name, "flavorRef": "1", "imageRef": IMAGE, "networks": networks}}),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        body["server"]["id"].as_str().unwrap().to_owned()
    }

    pub async fn boot_on_private(&self) -> String {
        self.boot(json!([{"uuid": self.topology.private_network_id}])).await
    }

    pub async fn server(&self, id: &str) -> Value {
        let (status, body) = self.get(&format!("/servers/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body["server"].clone()
    }

    /// The first of a server's instance actions named `name` (Nova lists them
    /// newest first), as an admin reads it: `{"instanceAction": …}` with its
    /// events.
    pub async fn instance_action(&self, id: &str, name: &str) -> Value {
        let (_, actions) = self.get(&format!("/servers/{id}/os-instance-actions")).await;
        let found = items(&actions, "instanceActions")
            .iter()
            .find(|a| a["action"] == name)
            .unwrap_or_else(|| panic!("no {name} action: {actions}"));
        let request_id = found["request_id"].as_str().unwrap();
        let (_, detail) = self
            .admin_get(&format!("/servers/{id}/os-instance-actions/{request_id}"))
            .await;
        detail
    }

    /// Attaches a new port on `network` to server `id` (`os-interface`); Nova's
    /// answer.
    pub async fn attach_on_network(&self, id: &str, network: &str) -> (u16, Value) {
        self.post(
            &format!("/servers/{id}/os-interface"),
            json!({"interfaceAttachment": {"net_id": network}}),
        )
        .await
    }

    /// Port ids netcache shows in `/servers/{id}` (through their MACs).
    pub async fn interface_port_ids(&self, id: &str) -> Vec<String> {
        let (status, body) = self.get(&format!("/servers/{id}/os-interface")).await;
        assert_eq!(status, 200, "{body}");
        attachment_port_ids(&body)
    }

    /// The one port Neutron holds for this server, which netcache shows and
    /// shows alone: nothing duplicated, nothing leaked, nothing hidden.
    pub async fn the_one_port(&self, id: &str) -> Value {
        let mut ports = self.neutron_ports(id);
        assert_eq!(ports.len(), 1, "Neutron must hold exactly one port: {ports:?}");
        let port = ports.remove(0);
        assert_eq!(self.interface_port_ids(id).await, [port["id"].as_str().unwrap()]);
        port
    }

    /// The server's port intents, as the store holds them.
    pub async fn intents(&self, id: &str) -> Vec<PortIntent> {
        let server = id.parse::<ServerId>().unwrap();
        self.app().compute.store().intents(server).await.unwrap()
    }

    /// Neutron's ports carrying this device id, read behind netcache's back.
    pub fn neutron_ports(&self, device_id: &str) -> Vec<Value> {
        let (status, body) = self
            .neutron()
            .request("GET", &format!("/v2.0/ports?device_id={device_id}"), None);
        assert_eq!(status, 200, "{body}");
        body["ports"].as_array().unwrap().clone()
    }

    pub fn neutron_port(&self, port_id: &str) -> (u16, Value) {
        self.neutron().request("GET", &format!("/v2.0/ports/{port_id}"), None)
    }

    /// A port created directly in Neutron in the test project.
    pub fn user_port(&self, body: Value) -> Value {
        let mut port = json!({"network_id": self.topology.private_network_id, "project_id": PROJECT});
        port.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        let (status, created) = self
            .neutron()
            .request("POST", "/v2.0/ports", Some(json!({"port": port})));
        assert_eq!(status, 201, "{created}");
        created["port"].clone()
    }

    /// Starts an attach on the private network whose port create Neutron holds at
    /// the proxy's gate; returns once it is held, with the request's task.
    pub async fn attach_held_at_create(&self, id: &str) -> tokio::task::JoinHandle<(u16, Value)> {
        self.proxy()
            .inject(reqwest::Method::POST, "/v2.0/ports", 1, proxy::ProxyFault::Gate);
        let (http, url) = (self.http.clone(), self.url(&format!("/servers/{id}/os-interface")));
        let body = json!({"interfaceAttachment": {"net_id": self.topology.private_network_id}});
        let attach = tokio::spawn(async move { send_json(&http, reqwest::Method::POST, &url, Some(body)).await });
        self.proxy().gated(1).await;
        attach
    }

    /// MAC addresses shown in `/servers/{id}` addresses.
    pub fn macs(server: &Value) -> Vec<String> {
        let mut macs: Vec<String> = server["addresses"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|ips| ips.as_array().unwrap().iter())
            .map(|ip| ip["OS-EXT-IPS-MAC:mac_addr"].as_str().unwrap().to_owned())
            .collect();
        macs.sort();
        macs.dedup();
        macs
    }
}
