//! `HttpNeutron` against scripted stub Keystone and Neutron servers (axum, 127.0.0.1:0).
//!
//! Tests with timeouts or backoff run on tokio's paused clock: the stubs' sleeps and
//! the client's timers advance together, so nothing depends on wall-clock luck.

use std::net::TcpListener as StdListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, Response};
use bytes::Bytes;
use netcache_domain::{NetworkId, PortId, ProjectId, SubnetId};
use netcache_neutron::{
    Auth, ClientConfig, Error, FixedIpRequest, FloatingIpFilter, HttpNeutron, Interface, NetworkFilter, NeutronApi,
    PortCreate, PortFilter, PortUpdate, SubnetFilter,
};
use serde_json::{Value, json};

mod classification;
mod keystone;
mod lists;
mod requests;
mod retries;

// ---------------------------------------------------------------------------
// Stub server
// ---------------------------------------------------------------------------

/// A request as the stub received it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    /// Raw (still percent-encoded) path.
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON request body")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn params(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .into_owned()
            .collect()
    }

    fn param_values(&self, key: &str) -> Vec<String> {
        self.params()
            .into_iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v)
            .collect()
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    fn neutron_error(status: u16, kind: &str, message: &str) -> Self {
        Self::json(
            status,
            json!({"NeutronError": {"type": kind, "message": message, "detail": ""}}),
        )
    }

    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
}

type Responder = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

#[derive(Clone)]
struct StubState {
    seen: Arc<Mutex<Vec<Seen>>>,
    respond: Arc<Responder>,
}

/// A server answering every request with `respond(request, index of the request)`.
struct Stub {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Stub {
    async fn start(respond: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = StubState {
            seen: seen.clone(),
            respond: Arc::new(respond),
        };
        let app = Router::new().fallback(handle).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// The `X-Auth-Token` each request seen so far carried, in order.
    fn tokens(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| s.header("x-auth-token").unwrap().to_owned())
            .collect()
    }
}

async fn handle(State(state): State<StubState>, request: Request<Body>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let seen = Seen {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or_default().to_owned(),
        headers: parts.headers,
        body,
    };
    let reply = {
        let mut all = state.seen.lock().unwrap();
        let index = all.len();
        all.push(seen.clone());
        (state.respond)(&seen, index)
    };
    if !reply.delay.is_zero() {
        // tidy: allow sleep — the stub's slow answer, a fault the test asks for
        tokio::time::sleep(reply.delay).await;
    }
    let mut response = Response::builder().status(reply.status);
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(reply.body)).unwrap()
}

/// A port that was closed: connecting to it is refused.
fn refused_url() -> String {
    let listener = StdListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

fn port_json(id: &str, device_id: &str) -> Value {
    json!({
        "id": id, "name": "", "network_id": "net-1", "project_id": "proj", "tenant_id": "proj",
        "mac_address": "fa:16:3e:00:00:01", "admin_state_up": true, "status": "DOWN",
        "device_id": device_id, "device_owner": "compute:nova",
        "fixed_ips": [{"subnet_id": "sub-4", "ip_address": "10.0.0.5"}],
        "binding:host_id": "", "binding:vif_type": "unbound", "binding:vnic_type": "normal",
        "binding:vif_details": {}, "binding:profile": {}, "tags": [], "revision_number": 1,
        "security_groups": [], "port_security_enabled": true
    })
}

fn noauth_config(url: &str) -> ClientConfig {
    ClientConfig::new(Auth::none(url.parse().unwrap()))
}

fn client(config: ClientConfig) -> HttpNeutron {
    HttpNeutron::new(config).unwrap()
}

fn create_request() -> PortCreate {
    PortCreate {
        network_id: NetworkId::from("net-1"),
        project_id: Some(ProjectId::from("proj")),
        fixed_ips: vec![FixedIpRequest {
            subnet_id: Some(SubnetId::from("sub-4")),
            ip_address: None,
        }],
        device_id: "dev-1".into(),
        device_owner: "compute:nova".into(),
        binding_host_id: Some("host1".into()),
        name: None,
        tags: vec!["netcache:owner=dep".into(), "netcache:intent=i".into()],
        security_groups: None,
    }
}

const EXTENSIONS: &str = r#"{"extensions": [{"alias": "standard-attr-tag", "name": "Tag"}, {"alias": "revision-if-match", "name": "If-Match"}]}"#;

/// A Neutron stub that lists extensions for any token but `refused`.
async fn neutron_refusing(refused: &'static [&'static str]) -> Stub {
    Stub::start(move |seen, _| match seen.header("x-auth-token") {
        Some(t) if refused.contains(&t) => Reply::raw(401, "Authentication required"),
        Some(_) => Reply::raw(200, EXTENSIONS),
        None => Reply::raw(401, "no token"),
    })
    .await
}

/// A Keystone stub issuing `tok-1`, `tok-2`, … valid for `lifetime_s`, with a catalog.
async fn keystone(catalog: Value, lifetime_s: i64) -> Stub {
    Stub::start(move |seen, index| {
        assert_eq!((seen.method.as_str(), seen.path.as_str()), ("POST", "/v3/auth/tokens"));
        let issued = chrono::Utc::now();
        let expires = issued + chrono::Duration::seconds(lifetime_s);
        Reply::json(
            201,
            json!({"token": {
                "methods": ["password"],
                "issued_at": issued.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                "expires_at": expires.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                "project": {"id": "p", "name": "service", "domain": {"id": "default", "name": "Default"}},
                "catalog": catalog,
            }}),
        )
        .header("X-Subject-Token", &format!("tok-{}", index + 1))
    })
    .await
}

fn network_catalog(public: &str) -> Value {
    json!([
        {"type": "compute", "name": "nova", "id": "c", "endpoints": [
            {"id": "c1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": "http://127.0.0.1:1/compute"}
        ]},
        {"type": "network", "name": "neutron", "id": "n", "endpoints": [
            {"id": "n1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": public}
        ]}
    ])
}

fn password_auth(keystone_url: &str) -> Auth {
    Auth::Password {
        auth_url: format!("{keystone_url}/v3").parse().unwrap(),
        username: "nova".into(),
        password: "secret".into(),
        user_domain_name: "Default".into(),
        project_name: "service".into(),
        project_domain_name: "Default".into(),
    }
}
