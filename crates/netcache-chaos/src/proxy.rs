//! A small fault-injecting HTTP proxy between netcache and a real Neutron. It takes
//! the embedded Neutron's fault rules ([`FaultRule`]) and applies what a proxy can:
//! `error` answers the status without forwarding; `commit_then_drop` forwards and never
//! answers; `reset` never forwards nor answers; `delayed_commit` answers nothing and
//! forwards `ms` later; `commit_then_delay` forwards and answers `ms` later; `latency`
//! waits first. A held call is released after ten minutes (its client left long ago).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use neutron_sim::{FaultAction, FaultRule, RuleState, json_subset};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

const HOLD: Duration = Duration::from_secs(600);

struct Shared {
    upstream: String,
    client: reqwest::Client,
    rules: Mutex<Vec<RuleState>>,
    rng: Mutex<ChaCha8Rng>,
}

pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// The embedded Neutron's name of a call (`ports.create`, `ports.list`, …).
#[must_use]
pub fn operation(method: &Method, path: &str) -> String {
    let path = path.strip_suffix(".json").unwrap_or(path);
    let parts: Vec<&str> = path
        .trim_start_matches('/')
        .trim_start_matches("v2.0")
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let Some(resource) = parts.first() else {
        return "versions".into();
    };
    let verb = match (method.as_str(), parts.len()) {
        _ if parts.get(2) == Some(&"tags") => "tags",
        ("GET", 1) => "list",
        ("POST", 1) => "create",
        ("GET", _) => "show",
        ("PUT", _) => "update",
        ("DELETE", _) => "delete",
        _ => "other",
    };
    format!("{resource}.{verb}")
}

impl FaultProxy {
    pub async fn start(upstream: &str, seed: u64) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::builder().timeout(HOLD).build()?,
            rules: Mutex::new(Vec::new()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed ^ 0x9e37_79b9)),
        });
        let app = axum::Router::new().fallback(forward).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, shared, task })
    }

    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set_rules(&self, rules: Vec<FaultRule>) {
        *self.shared.rules.lock().expect("rules lock") = rules
            .into_iter()
            .map(|rule| RuleState {
                rule,
                matched: 0,
                fired: 0,
            })
            .collect();
    }

    #[must_use]
    pub fn rules(&self) -> Vec<RuleState> {
        self.shared.rules.lock().expect("rules lock").clone()
    }

    pub fn shutdown(self) {
        self.task.abort();
    }
}

/// The embedded Neutron's matching: op, body subset, query substring, `nth`,
/// `probability`, `times`; latencies add up, the first other action wins.
fn decide(shared: &Shared, op: &str, query: &str, body: Option<&Value>) -> (Duration, Option<FaultAction>) {
    let mut rules = shared.rules.lock().expect("rules lock");
    let mut rng = shared.rng.lock().expect("rng lock");
    let mut latency = Duration::ZERO;
    let mut action = None;
    for st in rules.iter_mut() {
        let r = &st.rule;
        if (r.op != "*" && r.op != op)
            || r.body
                .as_ref()
                .is_some_and(|p| !body.is_some_and(|b| json_subset(p, b)))
            || r.query.as_ref().is_some_and(|q| !query.contains(q.as_str()))
            || r.times.is_some_and(|t| st.fired >= t)
        {
            continue;
        }
        st.matched += 1;
        if r.nth.is_some_and(|n| n != st.matched) || r.probability.is_some_and(|p| rng.random::<f64>() >= p) {
            continue;
        }
        match &r.action {
            FaultAction::Latency { ms, max_ms } => {
                let ms = match max_ms {
                    Some(max) if max > ms => rng.random_range(*ms..=*max),
                    _ => *ms,
                };
                latency += Duration::from_millis(ms);
                st.fired += 1;
            }
            other if action.is_none() => {
                action = Some(other.clone());
                st.fired += 1;
            }
            _ => {}
        }
    }
    (latency, action)
}

async fn send(
    shared: &Shared,
    method: Method,
    path_and_query: &str,
    headers: &axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let mut request = shared
        .client
        .request(method, format!("{}{path_and_query}", shared.upstream))
        .body(body);
    for (name, value) in headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status();
            let headers = response.headers().clone();
            let bytes = response.bytes().await.unwrap_or_default();
            let mut answer = Response::new(Body::from(bytes));
            *answer.status_mut() = status;
            for (name, value) in &headers {
                if name != "transfer-encoding" && name != "content-length" {
                    answer.headers_mut().insert(name, value.clone());
                }
            }
            answer
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let op = operation(&parts.method, parts.uri.path());
    let query = parts.uri.query().unwrap_or("");
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    let (latency, action) = decide(&shared, &op, query, json.as_ref());
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let method = parts.method.clone();
    match action {
        None | Some(FaultAction::Latency { .. }) => send(&shared, method, &path_and_query, &parts.headers, body).await,
        Some(FaultAction::Error { status }) => StatusCode::from_u16(status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            .into_response(),
        // Nobody releases the proxy's held calls: held, like a reset, until the
        // client gives up.
        Some(FaultAction::Reset | FaultAction::Hold) => {
            tokio::time::sleep(HOLD).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Some(FaultAction::CommitThenDrop) => {
            let shared2 = shared.clone();
            let headers = parts.headers.clone();
            tokio::spawn(async move { send(&shared2, method, &path_and_query, &headers, body).await });
            tokio::time::sleep(HOLD).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Some(FaultAction::DelayedCommit { ms, status }) => {
            let shared2 = shared.clone();
            let headers = parts.headers.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                send(&shared2, method, &path_and_query, &headers, body).await
            });
            match status {
                Some(s) => StatusCode::from_u16(s)
                    .unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
                    .into_response(),
                None => {
                    tokio::time::sleep(HOLD).await;
                    StatusCode::GATEWAY_TIMEOUT.into_response()
                }
            }
        }
        Some(FaultAction::CommitThenDelay { ms }) => {
            let answer = send(&shared, method, &path_and_query, &parts.headers, body).await;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            answer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_named_as_the_embedded_neutron_names_them() {
        assert_eq!(operation(&Method::POST, "/v2.0/ports"), "ports.create");
        assert_eq!(operation(&Method::GET, "/v2.0/ports.json"), "ports.list");
        assert_eq!(operation(&Method::DELETE, "/v2.0/ports/p1"), "ports.delete");
        assert_eq!(operation(&Method::PUT, "/v2.0/ports/p1/tags"), "ports.tags");
        assert_eq!(operation(&Method::GET, "/v2.0/extensions"), "extensions.list");
    }
}
