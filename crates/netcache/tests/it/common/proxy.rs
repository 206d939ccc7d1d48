//! A fault-injecting HTTP proxy between netcache and a Neutron (real or embedded),
//! for the seed scenario against a Neutron that cannot be told to misbehave:
//! - *lose the response*: forward the request, let Neutron commit, never answer;
//! - *hold until released*: answer nothing, forward the request only when the test
//!   says so — after the client gave up (the late commit);
//! - *gate*: hold the request until the test opens the gate, then forward it and
//!   answer (a slow Neutron call the test ends when it chooses);
//! - *gate the answer*: forward the request at once (Neutron commits) and hold the
//!   answer until the gate opens (a caller that acts on what it read earlier).
//!
//! It also counts calls per Neutron operation. Binds 127.0.0.1 only.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyFault {
    LoseResponse,
    HoldUntilReleased,
    Gate,
    GateAnswer,
}

struct Rule {
    method: Method,
    path: String,
    nth: u64,
    seen: u64,
    fault: ProxyFault,
}

struct Held {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    rules: Mutex<Vec<Rule>>,
    held: Mutex<Vec<Held>>,
    calls: Mutex<BTreeMap<String, u64>>,
    /// Requests waiting at the gate, and whether it is open.
    gated: tokio::sync::watch::Sender<usize>,
    gate_open: tokio::sync::watch::Sender<bool>,
}

pub struct FaultProxy {
    url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// Neutron operation name of a request, as the embedded Neutron counts them.
pub fn operation(method: &Method, path: &str) -> String {
    let parts: Vec<&str> = path.trim_start_matches("/v2.0").trim_matches('/').split('/').collect();
    let resource = parts.first().copied().unwrap_or("");
    let verb = match (method.as_str(), parts.len()) {
        _ if parts.get(2) == Some(&"tags") => "tags",
        ("GET", 1) => "list",
        ("GET", _) => "show",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("DELETE", _) => "delete",
        _ => "other",
    };
    format!("{resource}.{verb}")
}

impl FaultProxy {
    pub async fn start(upstream: &str) -> Self {
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            rules: Mutex::default(),
            held: Mutex::default(),
            calls: Mutex::default(),
            gated: tokio::sync::watch::Sender::new(0),
            gate_open: tokio::sync::watch::Sender::new(false),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, shared, task }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Injects `fault` into the `nth` (1-based) request with this method whose path
    /// is `path` (e.g. `/v2.0/ports`).
    pub fn inject(&self, method: Method, path: &str, nth: u64, fault: ProxyFault) {
        self.shared.rules.lock().unwrap().push(Rule {
            method,
            path: path.to_owned(),
            nth,
            seen: 0,
            fault,
        });
    }

    /// Forwards every held request now, in order; returns their upstream statuses.
    pub async fn release_held(&self) -> Vec<u16> {
        let held: Vec<Held> = std::mem::take(&mut *self.shared.held.lock().unwrap());
        let mut statuses = Vec::new();
        for h in held {
            let response = forward(&self.shared, h.method, &h.uri, &h.headers, h.body).await;
            statuses.push(response.status().as_u16());
        }
        statuses
    }

    /// Waits until `n` requests wait at the gate.
    pub async fn gated(&self, n: usize) {
        let mut gated = self.shared.gated.subscribe();
        gated.wait_for(|held| *held >= n).await.unwrap();
    }

    /// Lets the gated requests (and any later one) through to Neutron.
    pub fn open_gate(&self) {
        self.shared.gate_open.send_replace(true);
    }

    /// Stops accepting connections: every later call is refused, as by a Neutron
    /// that is down (each answer closes its connection, so none is pooled).
    pub fn refuse_connections(&self) {
        self.task.abort();
    }

    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.shared.calls.lock().unwrap().clone()
    }

    pub fn total_calls(&self) -> u64 {
        self.calls().values().sum()
    }

    pub fn reset_calls(&self) {
        self.shared.calls.lock().unwrap().clear();
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let path = parts.uri.path().to_owned();
    *shared
        .calls
        .lock()
        .unwrap()
        .entry(operation(&parts.method, &path))
        .or_default() += 1;
    let fault = {
        let mut rules = shared.rules.lock().unwrap();
        rules
            .iter_mut()
            .filter(|r| r.method == parts.method && r.path == path)
            .find_map(|r| {
                r.seen += 1;
                (r.seen == r.nth).then_some(r.fault)
            })
    };
    match fault {
        None => forward(&shared, parts.method, &parts.uri, &parts.headers, body).await,
        Some(ProxyFault::LoseResponse) => {
            let _committed = forward(&shared, parts.method, &parts.uri, &parts.headers, body).await;
            std::future::pending().await
        }
        Some(ProxyFault::HoldUntilReleased) => {
            shared.held.lock().unwrap().push(Held {
                method: parts.method,
                uri: parts.uri,
                headers: parts.headers,
                body,
            });
            std::future::pending().await
        }
        Some(ProxyFault::Gate) => {
            wait_at_gate(&shared).await;
            forward(&shared, parts.method, &parts.uri, &parts.headers, body).await
        }
        Some(ProxyFault::GateAnswer) => {
            let answer = forward(&shared, parts.method, &parts.uri, &parts.headers, body).await;
            wait_at_gate(&shared).await;
            answer
        }
    }
}

async fn wait_at_gate(shared: &Shared) {
    let mut open = shared.gate_open.subscribe();
    shared.gated.send_modify(|n| *n += 1);
    open.wait_for(|open| *open).await.unwrap();
}

async fn forward(shared: &Shared, method: Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let target = format!(
        "{}{}",
        shared.upstream,
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut request = shared.client.request(method, target).body(body);
    for (name, value) in headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(upstream) => {
            let status = upstream.status();
            let mut response = Response::builder()
                .status(status.as_u16())
                .header("connection", "close");
            for (name, value) in upstream.headers() {
                if name != "transfer-encoding" && name != "content-length" && name != "connection" {
                    response = response.header(name.as_str(), value.as_bytes());
                }
            }
            let bytes = upstream.bytes().await.unwrap_or_default();
            response.body(Body::from(bytes)).unwrap()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}
