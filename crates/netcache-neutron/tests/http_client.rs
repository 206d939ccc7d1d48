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

// ---------------------------------------------------------------------------
// Keystone
// ---------------------------------------------------------------------------

#[tokio::test]
async fn password_auth_sends_v3_body_and_uses_catalog_endpoint() {
    let neutron = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&format!("{}/", neutron.url)), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    let aliases = api.list_extensions().await.unwrap();
    assert!(aliases.contains("revision-if-match"));

    let auth = &ks.seen()[0];
    assert_eq!(
        auth.json(),
        json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": "nova", "domain": {"name": "Default"}, "password": "secret"}}},
            "scope": {"project": {"name": "service", "domain": {"name": "Default"}}}
        }})
    );
    let call = &neutron.seen()[0];
    assert_eq!(call.path, "/v2.0/extensions");
    assert_eq!(call.header("x-auth-token"), Some("tok-1"));
}

/// keystoneauth's `endpoint_override`: the token from Keystone, Neutron's URL
/// from the configuration, whatever the catalog says.
#[tokio::test]
async fn an_endpoint_override_wins_over_the_catalog() {
    let catalogued = neutron_refusing(&[]).await;
    let overriding = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&catalogued.url), 3600).await;
    let mut config = ClientConfig::new(password_auth(&ks.url));
    config.endpoint_override = Some(overriding.url.parse().unwrap());
    client(config).list_extensions().await.unwrap();
    assert!(catalogued.seen().is_empty(), "the catalog's Neutron is not called");
    let call = &overriding.seen()[0];
    assert_eq!(call.path, "/v2.0/extensions");
    assert_eq!(call.header("x-auth-token"), Some("tok-1"));
}

#[tokio::test]
async fn application_credential_auth_sends_v3_body() {
    let neutron = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&format!("{}/v2.0", neutron.url)), 3600).await;
    let auth = Auth::ApplicationCredential {
        auth_url: ks.url.parse().unwrap(), // without /v3: the client appends it
        id: "ac-id".into(),
        secret: "ac-secret".into(),
    };
    let api = client(ClientConfig::new(auth));
    api.list_extensions().await.unwrap();

    assert_eq!(
        ks.seen()[0].json(),
        json!({"auth": {"identity": {
            "methods": ["application_credential"],
            "application_credential": {"id": "ac-id", "secret": "ac-secret"}
        }}})
    );
    assert_eq!(neutron.seen()[0].path, "/v2.0/extensions");
}

#[tokio::test]
async fn catalog_lookup_by_type_interface_and_region() {
    let public_one = Stub::start(|_, _| Reply::raw(200, r#"{"extensions": [{"alias": "public-one"}]}"#)).await;
    let internal_one = Stub::start(|_, _| Reply::raw(200, r#"{"extensions": [{"alias": "internal-one"}]}"#)).await;
    let internal_two = Stub::start(|_, _| Reply::raw(200, r#"{"extensions": [{"alias": "internal-two"}]}"#)).await;
    let catalog = json!([
        {"type": "compute", "endpoints": [
            {"interface": "internal", "region_id": "RegionTwo", "url": "http://127.0.0.1:1/"}]},
        {"type": "network", "endpoints": [
            {"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": public_one.url},
            {"interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": internal_one.url},
            {"interface": "internal", "region": "RegionTwo", "region_id": "RegionTwo", "url": internal_two.url}]}
    ]);
    let ks = keystone(catalog, 3600).await;

    let alias = |interface, region: Option<&str>| {
        let mut config = ClientConfig::new(password_auth(&ks.url));
        config.interface = interface;
        config.region = region.map(str::to_owned);
        async move {
            client(config)
                .list_extensions()
                .await
                .map(|a| a.into_iter().collect::<Vec<_>>())
        }
    };
    assert_eq!(alias(Interface::Public, None).await.unwrap(), ["public-one"]);
    assert_eq!(alias(Interface::Internal, None).await.unwrap(), ["internal-one"]);
    assert_eq!(
        alias(Interface::Internal, Some("RegionTwo")).await.unwrap(),
        ["internal-two"]
    );
    let err = alias(Interface::Admin, None).await.unwrap_err();
    assert!(
        matches!(&err, Error::Auth(m) if m.contains("interface admin")),
        "{err:?}"
    );
    let err = alias(Interface::Public, Some("RegionThree")).await.unwrap_err();
    assert!(matches!(&err, Error::Auth(m) if m.contains("RegionThree")), "{err:?}");
}

#[tokio::test]
async fn token_is_reused_across_calls() {
    let neutron = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));
    for _ in 0..5 {
        api.list_extensions().await.unwrap();
    }
    assert_eq!(ks.count(), 1);
    assert!(neutron.seen().iter().all(|s| s.header("x-auth-token") == Some("tok-1")));
    assert_eq!(neutron.count(), 5);
}

#[tokio::test]
async fn neutron_401_reauthenticates_once_and_repeats_the_call() {
    let neutron = neutron_refusing(&["tok-1"]).await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 2);
    let tokens: Vec<_> = neutron
        .seen()
        .iter()
        .map(|s| s.header("x-auth-token").unwrap().to_owned())
        .collect();
    assert_eq!(tokens, ["tok-1", "tok-2"]);

    // The new token is kept.
    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 2);
}

#[tokio::test]
async fn create_port_is_repeated_after_a_401() {
    let neutron = Stub::start(|seen, _| match seen.header("x-auth-token") {
        Some("tok-1") => Reply::raw(401, "Authentication required"),
        _ => Reply::json(201, json!({"port": port_json("p1", "dev-1")})),
    })
    .await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    let port = api.create_port(&create_request()).await.unwrap();
    assert_eq!(port.id.as_str(), "p1");
    let seen = neutron.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.method == "POST"));
    assert_eq!(ks.count(), 2);
}

#[tokio::test]
async fn persistent_401_is_an_auth_error_after_one_reauthentication() {
    let neutron = neutron_refusing(&["tok-1", "tok-2", "tok-3"]).await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));
    let err = api.list_extensions().await.unwrap_err();
    assert!(matches!(err, Error::Auth(_)), "{err:?}");
    assert_eq!(neutron.count(), 2);
    assert_eq!(ks.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn token_is_refreshed_shortly_before_expiry() {
    let neutron = neutron_refusing(&[]).await;
    // Lives 120 s: refreshed after 60 s (the margin is min(60 s, half the life)).
    let ks = keystone(network_catalog(&neutron.url), 120).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    api.list_extensions().await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 1);

    tokio::time::advance(Duration::from_secs(31)).await;
    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 2);
    let tokens: Vec<_> = neutron
        .seen()
        .iter()
        .map(|s| s.header("x-auth-token").unwrap().to_owned())
        .collect();
    assert_eq!(tokens, ["tok-1", "tok-1", "tok-2"]);
}

#[tokio::test]
async fn keystone_401_is_an_auth_error() {
    let neutron = neutron_refusing(&[]).await;
    let ks = Stub::start(|_, _| {
        Reply::json(401, json!({"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}))
    })
    .await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));
    let err = api.list_extensions().await.unwrap_err();
    assert!(matches!(&err, Error::Auth(m) if m.contains("401")), "{err:?}");
    assert_eq!(err.metric_label(), "auth");
    assert_eq!(neutron.count(), 0);
}

#[tokio::test]
async fn unreachable_keystone_is_an_auth_error() {
    let api = client(ClientConfig::new(password_auth(&refused_url())));
    assert!(matches!(api.list_extensions().await, Err(Error::Auth(_))));
}

// ---------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------

#[tokio::test]
async fn not_found_with_neutron_body_is_rejected() {
    let neutron = Stub::start(|_, _| Reply::neutron_error(404, "PortNotFound", "Port p could not be found.")).await;
    let api = client(noauth_config(&neutron.url));
    let err = api.show_port(&PortId::from("p")).await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.kind(), Some("PortNotFound"));
    assert!(matches!(
        err,
        Error::Rejected {
            operation: "show_port",
            status: 404,
            ..
        }
    ));
    // A definite answer is not retried.
    assert_eq!(neutron.count(), 1);
}

#[tokio::test]
async fn conflict_is_rejected() {
    let neutron = Stub::start(|_, _| {
        Reply::neutron_error(
            409,
            "IpAddressAlreadyAllocated",
            "IP address 10.0.0.5 already allocated",
        )
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    let err = api.create_port(&create_request()).await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.kind(), Some("IpAddressAlreadyAllocated"));
}

#[tokio::test]
async fn four_hundred_without_neutron_body_is_protocol() {
    let neutron = Stub::start(|_, _| Reply::raw(404, "404 Not Found\n\nThe resource could not be found.")).await;
    let api = client(noauth_config(&neutron.url));
    let err = api.delete_port(&PortId::from("p"), None).await.unwrap_err();
    assert!(
        !err.is_not_found(),
        "a bare 404 must not read as 'port is gone': {err:?}"
    );
    assert!(matches!(err, Error::Protocol { .. }));
}

#[tokio::test(start_paused = true)]
async fn server_error_is_ambiguous() {
    let neutron = Stub::start(|_, _| {
        Reply::neutron_error(500, "HTTPInternalServerError", "Request Failed: internal server error")
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.retries = 0;
    let err = client(config).show_port(&PortId::from("p")).await.unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn a_response_that_never_comes_is_ambiguous() {
    let neutron = Stub::start(|_, _| Reply::raw(200, "{}").after(Duration::from_secs(3600))).await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(5);
    config.retries = 0;
    let started = tokio::time::Instant::now();
    let err = client(config).show_port(&PortId::from("p")).await.unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(started.elapsed().as_secs(), 5);
}

#[tokio::test(start_paused = true)]
async fn connection_refused_is_unreachable() {
    let url = refused_url();
    let api = client(noauth_config(&url));
    let err = api.show_port(&PortId::from("p")).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unreachable {
                operation: "show_port",
                ..
            }
        ),
        "{err:?}"
    );
    let err = api.create_port(&create_request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unreachable {
                operation: "create_port",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn garbage_is_protocol() {
    let neutron = Stub::start(|seen, _| match seen.path.as_str() {
        "/v2.0/extensions" => Reply::raw(200, "<html>hello</html>"),
        "/v2.0/ports" => Reply::raw(200, r#"{"networks": []}"#),
        _ => Reply::json(
            200,
            json!({"port": {"id": "p", "network_id": "n", "project_id": "x",
            "fixed_ips": [{"subnet_id": "s", "ip_address": "not-an-ip"}]}}),
        ),
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    assert!(matches!(api.list_extensions().await, Err(Error::Protocol { .. })));
    assert!(matches!(
        api.list_ports(&PortFilter::default()).await,
        Err(Error::Protocol { .. })
    ));
    let err = api.show_port(&PortId::from("p")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Protocol { reason, .. } if reason.contains("not-an-ip")),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn get_is_retried_on_5xx_until_it_succeeds() {
    let neutron = Stub::start(|_, index| match index {
        0 => Reply::neutron_error(500, "HTTPInternalServerError", "boom"),
        1 => Reply::raw(503, "Service Unavailable"),
        _ => Reply::json(200, json!({"port": port_json("p", "d")})),
    })
    .await;
    let port = client(noauth_config(&neutron.url))
        .show_port(&PortId::from("p"))
        .await
        .unwrap();
    assert_eq!(port.id.as_str(), "p");
    assert_eq!(neutron.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn get_gives_up_after_the_configured_retries() {
    let neutron = Stub::start(|_, _| Reply::raw(503, "Service Unavailable")).await;
    let mut config = noauth_config(&neutron.url);
    config.retries = 2;
    let err = client(config).list_ports(&PortFilter::default()).await.unwrap_err();
    assert!(err.is_ambiguous());
    assert_eq!(neutron.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn get_is_retried_after_a_timeout() {
    let neutron = Stub::start(|_, index| {
        let reply = Reply::raw(200, EXTENSIONS);
        if index == 0 {
            reply.after(Duration::from_secs(3600))
        } else {
            reply
        }
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(5);
    client(config).list_extensions().await.unwrap();
    assert_eq!(neutron.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn create_port_is_sent_once_on_500() {
    let neutron = Stub::start(|_, _| Reply::neutron_error(500, "HTTPInternalServerError", "boom")).await;
    let err = client(noauth_config(&neutron.url))
        .create_port(&create_request())
        .await
        .unwrap_err();
    assert!(err.is_ambiguous());
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(neutron.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn create_port_is_sent_once_on_timeout() {
    let neutron =
        Stub::start(|_, _| Reply::json(201, json!({"port": port_json("p", "dev-1")})).after(Duration::from_secs(120)))
            .await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(30);
    let err = client(config).create_port(&create_request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Ambiguous {
                operation: "create_port",
                ..
            }
        ),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(neutron.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_412_after_an_ambiguous_put_is_ambiguous() {
    // The first PUT applies (revision 5 → 6) but its answer is lost; the retry's
    // If-Match then fails although the update did happen.
    let neutron = Stub::start(|_, index| match index {
        0 => Reply::json(200, json!({"port": port_json("p", "dev-1")})).after(Duration::from_secs(3600)),
        _ => Reply::neutron_error(
            412,
            "RevisionNumberConstraintFailed",
            "Constrained to 5, but current revision is 6",
        ),
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(5);
    let err = client(config)
        .update_port(
            &PortId::from("p"),
            &PortUpdate::bind("dev-1", "compute:nova", "host1"),
            Some(5),
        )
        .await
        .unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(neutron.count(), 2);
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

#[tokio::test]
async fn create_port_body() {
    let neutron = Stub::start(|_, _| Reply::json(201, json!({"port": port_json("p1", "dev-1")}))).await;
    client(noauth_config(&neutron.url))
        .create_port(&create_request())
        .await
        .unwrap();
    let seen = &neutron.seen()[0];
    assert_eq!((seen.method.as_str(), seen.path.as_str()), ("POST", "/v2.0/ports"));
    assert_eq!(
        seen.json(),
        json!({"port": {
            "network_id": "net-1", "project_id": "proj",
            "fixed_ips": [{"subnet_id": "sub-4"}],
            "device_id": "dev-1", "device_owner": "compute:nova", "binding:host_id": "host1",
            "tags": ["netcache:owner=dep", "netcache:intent=i"], "admin_state_up": true
        }})
    );
}

#[tokio::test]
async fn update_and_delete_send_if_match() {
    let neutron = Stub::start(|seen, _| match seen.method.as_str() {
        "PUT" => Reply::json(200, json!({"port": port_json("p1", "")})),
        _ => Reply::raw(204, ""),
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    let id = PortId::from("p1");
    api.update_port(&id, &PortUpdate::unbind(), Some(7)).await.unwrap();
    api.update_port(&id, &PortUpdate::bind("dev", "compute:nova", "h"), None)
        .await
        .unwrap();
    api.delete_port(&id, Some(8)).await.unwrap();
    api.delete_port(&id, None).await.unwrap();

    let seen = neutron.seen();
    assert_eq!(seen[0].path, "/v2.0/ports/p1");
    assert_eq!(seen[0].header("if-match"), Some("revision_number=7"));
    assert_eq!(
        seen[0].json(),
        json!({"port": {"device_id": "", "device_owner": "", "binding:host_id": null}})
    );
    assert_eq!(seen[1].header("if-match"), None);
    assert_eq!(
        seen[1].json(),
        json!({"port": {"device_id": "dev", "device_owner": "compute:nova", "binding:host_id": "h"}})
    );
    assert_eq!(
        (seen[2].method.as_str(), seen[2].header("if-match")),
        ("DELETE", Some("revision_number=8"))
    );
    assert_eq!((seen[3].method.as_str(), seen[3].header("if-match")), ("DELETE", None));
}

#[tokio::test]
async fn replace_port_tags_is_one_put_of_the_whole_list() {
    let neutron = Stub::start(|_, _| Reply::raw(200, r#"{"tags": []}"#)).await;
    let tags = vec!["netcache:owner=dep-1".to_owned(), "netcache:intent=abc".to_owned()];
    client(noauth_config(&neutron.url))
        .replace_port_tags(&PortId::from("p1"), &tags)
        .await
        .unwrap();
    let seen = neutron.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        format!("{} {}", seen[0].method, seen[0].path),
        "PUT /v2.0/ports/p1/tags"
    );
    assert_eq!(
        seen[0].json(),
        json!({"tags": ["netcache:owner=dep-1", "netcache:intent=abc"]})
    );
}

#[tokio::test]
async fn noauth_sends_extra_headers_and_no_token() {
    let neutron = Stub::start(|_, _| Reply::raw(200, EXTENSIONS)).await;
    let mut headers = http::HeaderMap::new();
    headers.insert("x-project-id", "proj".parse().unwrap());
    headers.insert("x-roles", "admin,member,reader".parse().unwrap());
    // The endpoint may already end in /v2.0.
    let auth = Auth::None {
        endpoint: format!("{}/v2.0/", neutron.url).parse().unwrap(),
        headers,
    };
    client(ClientConfig::new(auth)).list_extensions().await.unwrap();
    let seen = &neutron.seen()[0];
    assert_eq!(seen.path, "/v2.0/extensions");
    assert_eq!(seen.header("x-project-id"), Some("proj"));
    assert_eq!(seen.header("x-roles"), Some("admin,member,reader"));
    assert_eq!(seen.header("x-auth-token"), None);
}

// ---------------------------------------------------------------------------
// Filters and pagination
// ---------------------------------------------------------------------------

/// Answers a port list with one port per `device_id` asked for.
fn echo_ports(seen: &Seen, _: usize) -> Reply {
    let ports: Vec<Value> = seen
        .param_values("device_id")
        .iter()
        .map(|d| port_json(&format!("port-{d}"), d))
        .collect();
    Reply::json(200, json!({"ports": ports}))
}

#[tokio::test]
async fn port_filters_are_query_parameters() {
    let neutron = Stub::start(echo_ports).await;
    let filter = PortFilter {
        device_ids: vec!["a".into(), "b".into()],
        project_id: Some(ProjectId::from("proj")),
        device_owner: Some("compute:nova".into()),
        tags: vec!["netcache:owner=dep".into(), "x".into()],
        tags_any: vec!["y".into(), "z".into()],
        ..PortFilter::default()
    };
    let ports = client(noauth_config(&neutron.url)).list_ports(&filter).await.unwrap();
    assert_eq!(ports.len(), 2);
    let seen = &neutron.seen()[0];
    assert_eq!(seen.path, "/v2.0/ports");
    assert_eq!(seen.param_values("device_id"), ["a", "b"]);
    assert_eq!(seen.param_values("tags"), ["netcache:owner=dep,x"]);
    assert_eq!(seen.param_values("tags-any"), ["y,z"]);
    assert_eq!(seen.param_values("project_id"), ["proj"]);
    assert_eq!(seen.param_values("device_owner"), ["compute:nova"]);
    assert!(seen.param_values("id").is_empty());
}

#[tokio::test]
async fn long_id_lists_are_split_into_chunks() {
    let neutron = Stub::start(echo_ports).await;
    let device_ids: Vec<String> = (0..250).map(|i| format!("dev-{i}")).collect();
    let filter = PortFilter {
        device_ids: device_ids.clone(),
        tags: vec!["t".into()],
        ..PortFilter::default()
    };
    let ports = client(noauth_config(&neutron.url)).list_ports(&filter).await.unwrap();
    assert_eq!(ports.len(), 250);
    let seen = neutron.seen();
    let sizes: Vec<_> = seen.iter().map(|s| s.param_values("device_id").len()).collect();
    assert_eq!(sizes, [100, 100, 50]);
    assert!(seen.iter().all(|s| s.param_values("tags") == ["t"]));
    let asked: Vec<String> = seen.iter().flat_map(|s| s.param_values("device_id")).collect();
    assert_eq!(asked, device_ids);
}

#[tokio::test]
async fn chunk_size_is_configurable() {
    let neutron = Stub::start(|_, _| Reply::json(200, json!({"floatingips": []}))).await;
    let mut config = noauth_config(&neutron.url);
    config.filter_chunk_size = 2;
    let filter = FloatingIpFilter {
        port_ids: (0..5).map(|i| PortId::from(format!("p{i}"))).collect(),
    };
    client(config).list_floating_ips(&filter).await.unwrap();
    let sizes: Vec<_> = neutron.seen().iter().map(|s| s.param_values("port_id").len()).collect();
    assert_eq!(sizes, [2, 2, 1]);
}

#[tokio::test]
async fn next_links_are_followed_on_our_endpoint() {
    let neutron = Stub::start(|seen, _| match seen.param_values("marker").first().map(String::as_str) {
        None => Reply::json(200, json!({
            "ports": [port_json("p1", "d"), port_json("p2", "d")],
            "ports_links": [{"rel": "next", "href": "http://neutron.internal:9696/v2.0/ports?device_id=d&limit=2&marker=p2"}]
        })),
        Some("p2") => Reply::json(200, json!({
            "ports": [port_json("p3", "d")],
            "ports_links": [{"rel": "previous", "href": "http://neutron.internal:9696/v2.0/ports?device_id=d&limit=2&marker=p3&page_reverse=True"}]
        })),
        Some(other) => panic!("unexpected marker {other}"),
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.page_size = Some(2);
    let filter = PortFilter {
        device_ids: vec!["d".into()],
        ..PortFilter::default()
    };
    let ports = client(config).list_ports(&filter).await.unwrap();
    let ids: Vec<_> = ports.iter().map(|p| p.id.as_str().to_owned()).collect();
    assert_eq!(ids, ["p1", "p2", "p3"]);
    let seen = neutron.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].param_values("limit"), ["2"]);
    assert_eq!(seen[1].query, "device_id=d&limit=2&marker=p2");
}

#[tokio::test]
async fn a_pagination_loop_is_protocol() {
    let neutron = Stub::start(|_, _| {
        Reply::json(
            200,
            json!({
                "networks": [],
                "networks_links": [{"rel": "next", "href": "http://x/v2.0/networks?marker=same"}]
            }),
        )
    })
    .await;
    let err = client(noauth_config(&neutron.url))
        .list_networks(&NetworkFilter::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert_eq!(neutron.count(), 2);
}

#[tokio::test]
async fn network_and_subnet_filters() {
    let neutron = Stub::start(|seen, _| match seen.path.as_str() {
        "/v2.0/networks" => Reply::json(
            200,
            json!({"networks": [{
            "id": "ext", "name": "public", "project_id": "admin", "shared": false,
            "router:external": true, "mtu": 1500, "subnets": ["s1"]}]}),
        ),
        _ => Reply::json(
            200,
            json!({"subnets": [{
            "id": "s1", "network_id": "ext", "cidr": "172.24.4.0/24", "gateway_ip": "172.24.4.1",
            "enable_dhcp": false, "dns_nameservers": [], "host_routes": [], "ipv6_address_mode": null}]}),
        ),
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    let nets = api
        .list_networks(&NetworkFilter {
            external: Some(true),
            name: Some("public".into()),
            ..NetworkFilter::default()
        })
        .await
        .unwrap();
    assert!(nets[0].external);
    let subnets = api
        .list_subnets(&SubnetFilter {
            network_ids: vec![NetworkId::from("ext"), NetworkId::from("other")],
            ..SubnetFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(subnets[0].cidr.to_string(), "172.24.4.0/24");

    let seen = neutron.seen();
    assert_eq!(seen[0].param_values("router:external"), ["true"]);
    assert_eq!(seen[0].param_values("name"), ["public"]);
    assert_eq!(seen[1].param_values("network_id"), ["ext", "other"]);
}

/// A token source that counts its tokens and never expires them.
struct CountingSource {
    endpoint: String,
    issued: Arc<Mutex<u32>>,
}

#[async_trait::async_trait]
impl netcache_neutron::TokenSource for CountingSource {
    async fn issue(&self) -> netcache_neutron::Result<netcache_neutron::Token> {
        let mut issued = self.issued.lock().unwrap();
        *issued += 1;
        Ok(netcache_neutron::Token {
            value: format!("tok-{issued}"),
            endpoint: self.endpoint.parse().unwrap(),
            lifetime: None,
        })
    }
}

#[tokio::test]
async fn custom_token_source_is_cached_and_renewed_on_401() {
    let neutron = neutron_refusing(&["tok-1"]).await;
    let issued = Arc::new(Mutex::new(0));
    let source = CountingSource {
        endpoint: neutron.url.clone(),
        issued: issued.clone(),
    };
    let api = client(ClientConfig::new(Auth::Custom(Arc::new(source))));
    for _ in 0..3 {
        api.list_extensions().await.unwrap();
    }
    assert_eq!(*issued.lock().unwrap(), 2);
    let tokens: Vec<_> = neutron
        .seen()
        .iter()
        .map(|s| s.header("x-auth-token").unwrap().to_owned())
        .collect();
    assert_eq!(tokens, ["tok-1", "tok-2", "tok-2", "tok-2"]);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let target = Stub::start(|_, _| Reply::json(201, json!({"port": port_json("p", "d")}))).await;
    let location = format!("{}/v2.0/ports", target.url);
    let neutron = Stub::start(move |_, _| Reply::raw(307, "").header("location", &location)).await;
    let err = client(noauth_config(&neutron.url))
        .create_port(&create_request())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert_eq!(target.count(), 0);
}
