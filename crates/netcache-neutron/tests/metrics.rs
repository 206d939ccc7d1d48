//! Metrics of `HttpNeutron` against stub Keystone and Neutron servers (axum,
//! 127.0.0.1:0).
//!
//! A test binary of its own: it installs a Prometheus recorder as the process-wide
//! recorder, so it holds a single test and asserts exact counts.

use std::net::TcpListener as StdListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use netcache_domain::{NetworkId, PortId, ProjectId};
use netcache_neutron::{
    Auth, ClientConfig, Error, FloatingIpFilter, HttpNeutron, NetworkFilter, NeutronApi, PortCreate, PortFilter,
    PortUpdate, SubnetFilter,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Stub server: `respond(method, path)` answers every request.
// ---------------------------------------------------------------------------

/// Status, headers and body of an answer.
type Reply = (u16, Vec<(&'static str, String)>, String);

type Responder = dyn Fn(&str, &str) -> Reply + Send + Sync;

async fn stub(respond: impl Fn(&str, &str) -> Reply + Send + Sync + 'static) -> String {
    let respond: Arc<Responder> = Arc::new(respond);
    let app = Router::new().fallback(handle).with_state(respond);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn handle(State(respond): State<Arc<Responder>>, request: Request<Body>) -> Response<Body> {
    let (status, headers, body) = respond(request.method().as_str(), request.uri().path());
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response.body(Body::from(body)).unwrap()
}

fn json_reply(status: u16, body: Value) -> Reply {
    (
        status,
        vec![("content-type", "application/json".to_owned())],
        body.to_string(),
    )
}

fn neutron_error(status: u16, kind: &str) -> Reply {
    json_reply(
        status,
        json!({"NeutronError": {"type": kind, "message": kind, "detail": ""}}),
    )
}

/// A port that was closed: connecting to it is refused.
fn refused_url() -> String {
    let listener = StdListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn port_json(id: &str) -> Value {
    json!({
        "id": id, "name": "", "network_id": "net-1", "project_id": "proj", "tenant_id": "proj",
        "mac_address": "fa:16:3e:00:00:01", "admin_state_up": true, "status": "DOWN",
        "device_id": "dev-1", "device_owner": "compute:nova",
        "fixed_ips": [{"subnet_id": "sub-4", "ip_address": "10.0.0.5"}],
        "binding:host_id": "", "binding:vif_type": "unbound", "binding:vnic_type": "normal",
        "binding:vif_details": {}, "binding:profile": {}, "tags": [], "revision_number": 1,
        "security_groups": [], "port_security_enabled": true
    })
}

/// Neutron: every call succeeds except `ports/missing` (404), `ports/garbage` (a
/// 200 that is not JSON), the first `ports/flaky` (503) and every create (500).
async fn neutron() -> String {
    let flaky = AtomicUsize::new(0);
    stub(move |method, path| match (method, path) {
        ("GET", "/v2.0/extensions") => json_reply(200, json!({"extensions": [{"alias": "standard-attr-tag"}]})),
        ("GET", "/v2.0/networks") => json_reply(200, json!({"networks": []})),
        ("GET", "/v2.0/subnets") => json_reply(200, json!({"subnets": []})),
        ("GET", "/v2.0/floatingips") => json_reply(200, json!({"floatingips": []})),
        ("GET", "/v2.0/ports") => json_reply(200, json!({"ports": [port_json("p1")]})),
        ("POST", "/v2.0/ports") => neutron_error(500, "InternalServerError"),
        ("GET", "/v2.0/ports/missing") => neutron_error(404, "PortNotFound"),
        ("GET", "/v2.0/ports/garbage") => (200, vec![], "<html>".to_owned()),
        ("GET", "/v2.0/ports/flaky") if flaky.fetch_add(1, Ordering::SeqCst) == 0 => {
            neutron_error(503, "ServiceUnavailable")
        }
        ("GET" | "PUT", _) if path.starts_with("/v2.0/ports/") && !path.contains("/tags/") => {
            json_reply(200, json!({"port": port_json("p1")}))
        }
        ("DELETE", _) => (204, vec![], String::new()),
        ("PUT", _) => (201, vec![], String::new()),
        _ => neutron_error(404, "HTTPNotFound"),
    })
    .await
}

/// Keystone issuing a token for `neutron`'s catalog endpoint, or refusing (401).
async fn keystone(neutron: Option<String>) -> String {
    let neutron = Mutex::new(neutron);
    stub(move |method, path| {
        assert_eq!((method, path), ("POST", "/v3/auth/tokens"));
        let Some(url) = neutron.lock().unwrap().clone() else {
            return json_reply(401, json!({"error": {"code": 401, "message": "The request you have made requires authentication."}}));
        };
        let (status, mut headers, body) = json_reply(
            201,
            json!({"token": {
                "methods": ["password"],
                "catalog": [{"type": "network", "endpoints": [{"interface": "public", "region_id": "RegionOne", "url": url}]}],
            }}),
        );
        headers.push(("X-Subject-Token", "tok-1".to_owned()));
        (status, headers, body)
    })
    .await
}

fn config(auth: Auth) -> ClientConfig {
    let mut config = ClientConfig::new(auth);
    config.retries = 1;
    config.retry_min_delay = Duration::from_millis(1);
    config.retry_max_delay = Duration::from_millis(1);
    config.timeout = Duration::from_secs(10);
    config
}

fn password(keystone: &str) -> Auth {
    Auth::Password {
        auth_url: format!("{keystone}/v3").parse().unwrap(),
        username: "nova".into(),
        password: "secret".into(),
        user_domain_name: "Default".into(),
        project_name: "service".into(),
        project_domain_name: "Default".into(),
    }
}

fn create_request() -> PortCreate {
    PortCreate {
        network_id: NetworkId::from("net-1"),
        project_id: Some(ProjectId::from("proj")),
        fixed_ips: vec![],
        device_id: "dev-1".into(),
        device_owner: "compute:nova".into(),
        binding_host_id: None,
        name: None,
        tags: vec![],
        security_groups: None,
    }
}

// ---------------------------------------------------------------------------
// Reading the exposition
// ---------------------------------------------------------------------------

fn recorder() -> PrometheusHandle {
    let recorder = PrometheusBuilder::new()
        .set_buckets(&[0.001, 0.01, 0.1, 1.0, 10.0])
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).expect("the only recorder of this test binary");
    handle
}

/// Samples of `name` in the text exposition: (labels, value).
fn samples(text: &str, name: &str) -> Vec<(Vec<(String, String)>, f64)> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            (series_name == name).then_some(())?;
            let labels = labels
                .split(',')
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once('=').unwrap();
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            Some((labels, value.parse().unwrap()))
        })
        .collect()
}

/// The value of the series `name{labels}` (exactly these labels), 0 if absent.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut want: Vec<(String, String)> = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    want.sort();
    samples(text, name)
        .into_iter()
        .find(|(got, _)| {
            let mut got = got.clone();
            got.sort();
            got == want
        })
        .map_or(0.0, |(_, v)| v)
}

fn calls(text: &str, operation: &str, outcome: &str) -> f64 {
    value(
        text,
        "netcache_neutron_calls_total",
        &[("operation", operation), ("outcome", outcome)],
    )
}

// ---------------------------------------------------------------------------

#[tokio::test]
async fn every_attempt_is_counted_by_operation_and_outcome_and_timed() {
    let handle = recorder();
    let neutron_url = neutron().await;
    let api = HttpNeutron::new(config(Auth::none(neutron_url.parse().unwrap()))).unwrap();
    let p1 = PortId::from("p1");

    api.list_extensions().await.unwrap();
    api.list_networks(&NetworkFilter::default()).await.unwrap();
    api.list_subnets(&SubnetFilter::default()).await.unwrap();
    api.list_floating_ips(&FloatingIpFilter {
        port_ids: vec![p1.clone()],
        ..FloatingIpFilter::default()
    })
    .await
    .unwrap();
    api.list_ports(&PortFilter::default()).await.unwrap();
    api.show_port(&p1).await.unwrap();
    api.update_port(&p1, &PortUpdate::unbind(), Some(1)).await.unwrap();
    api.replace_port_tags(&p1, &["a".into(), "b".into()]).await.unwrap();
    api.delete_port(&p1, None).await.unwrap();
    assert!(
        api.show_port(&PortId::from("missing"))
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(matches!(
        api.show_port(&PortId::from("garbage")).await,
        Err(Error::Protocol { .. })
    ));
    // 503, then 200 on the retry: two attempts.
    api.show_port(&PortId::from("flaky")).await.unwrap();
    // A create is sent once: one ambiguous attempt.
    assert!(api.create_port(&create_request()).await.unwrap_err().is_ambiguous());

    let unreachable = HttpNeutron::new(config(Auth::none(refused_url().parse().unwrap()))).unwrap();
    let err = unreachable.list_networks(&NetworkFilter::default()).await.unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");

    // Keystone: one token issued (and reused), one refused.
    let ks = keystone(Some(neutron_url.clone())).await;
    let with_token = HttpNeutron::new(config(password(&ks))).unwrap();
    with_token.list_extensions().await.unwrap();
    with_token.list_networks(&NetworkFilter::default()).await.unwrap();
    let refusing = keystone(None).await;
    let refused = HttpNeutron::new(config(password(&refusing))).unwrap();
    assert!(matches!(refused.list_extensions().await, Err(Error::Auth(_))));

    handle.run_upkeep();
    let text = handle.render();

    let expected = [
        ("extensions.list", "ok", 2.0),
        ("networks.list", "ok", 2.0),
        ("networks.list", "unreachable", 2.0), // first attempt and one retry
        ("subnets.list", "ok", 1.0),
        ("floatingips.list", "ok", 1.0),
        ("ports.list", "ok", 1.0),
        ("ports.show", "ok", 2.0),
        ("ports.show", "rejected", 1.0),
        ("ports.show", "protocol", 1.0),
        ("ports.show", "ambiguous", 1.0),
        ("ports.update", "ok", 1.0),
        ("ports.tags", "ok", 1.0),
        ("ports.delete", "ok", 1.0),
        ("ports.create", "ambiguous", 1.0),
    ];
    for (operation, outcome, want) in expected {
        assert_eq!(calls(&text, operation, outcome), want, "{operation} {outcome}:\n{text}");
    }
    let total: f64 = samples(&text, "netcache_neutron_calls_total")
        .iter()
        .map(|(_, v)| v)
        .sum();
    assert_eq!(
        total,
        expected.iter().map(|(_, _, n)| n).sum::<f64>(),
        "no other series:\n{text}"
    );

    // One duration sample per attempt, labelled by operation only.
    let duration = "netcache_neutron_call_duration_seconds_count";
    assert_eq!(value(&text, duration, &[("operation", "ports.show")]), 5.0, "{text}");
    assert_eq!(value(&text, duration, &[("operation", "ports.create")]), 1.0, "{text}");
    assert_eq!(value(&text, duration, &[("operation", "networks.list")]), 4.0, "{text}");
    assert!(
        value(
            &text,
            "netcache_neutron_call_duration_seconds_sum",
            &[("operation", "ports.show")]
        ) > 0.0
    );
    assert_eq!(
        value(
            &text,
            "netcache_neutron_call_duration_seconds_bucket",
            &[("operation", "ports.show"), ("le", "+Inf")]
        ),
        5.0,
        "{text}"
    );

    assert_eq!(
        value(&text, "netcache_keystone_auth_total", &[("outcome", "ok")]),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(&text, "netcache_keystone_auth_total", &[("outcome", "auth")]),
        1.0,
        "{text}"
    );
}
