//! `auth.strategy = keystone` against a stub Keystone (127.0.0.1) that issues
//! netcache's service token and validates users' tokens as Keystone v3 does
//! (`GET /v3/auth/tokens`, 200 with the token body or 404), counting validations.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use common::TestApp;
use reqwest::Method;
use serde_json::{Value, json};

const SERVICE_TOKEN: &str = "netcache-service-token";

struct StubKeystone {
    /// token → (project, user, roles)
    tokens: HashMap<&'static str, (&'static str, &'static str, &'static [&'static str])>,
    validations: AtomicUsize,
}

async fn issue(State(_): State<Arc<StubKeystone>>, body: axum::Json<Value>) -> impl IntoResponse {
    let user = &body["auth"]["identity"]["password"]["user"];
    if user["name"] != "nova" || user["password"] != "nova-secret" {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let mut headers = HeaderMap::new();
    headers.insert("x-subject-token", SERVICE_TOKEN.parse().unwrap());
    (StatusCode::CREATED, headers, axum::Json(json!({"token": {}}))).into_response()
}

/// A token whose validation Keystone fails (500).
const KEYSTONE_FAILS_TOKEN: &str = "keystone-fails";

/// A token that expired a minute ago: Keystone validates it only with `allow_expired=1`.
const EXPIRED_TOKEN: &str = "expired-member-token";

async fn validate(
    State(stub): State<Arc<StubKeystone>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if header("x-auth-token") != SERVICE_TOKEN {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    stub.validations.fetch_add(1, Ordering::SeqCst);
    let allow_expired = query.get("allow_expired").is_some_and(|v| v == "1");
    let (subject, expires_at) = match header("x-subject-token") {
        EXPIRED_TOKEN if allow_expired => ("member-token", chrono::Utc::now() - chrono::TimeDelta::minutes(1)),
        subject => (subject, chrono::Utc::now() + chrono::TimeDelta::hours(1)),
    };
    // Keystone's format: microseconds, `Z`.
    let expires_at = expires_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    if subject == KEYSTONE_FAILS_TOKEN {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    match stub.tokens.get(subject) {
        Some((project, user, roles)) => {
            let roles: Vec<Value> = roles.iter().map(|r| json!({"id": r, "name": r})).collect();
            axum::Json(json!({"token": {"user": {"id": user}, "project": {"id": project}, "roles": roles, "expires_at": expires_at}}))
                .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A netcache with `auth.strategy = keystone` against a fresh stub Keystone.
async fn keystone_app() -> (TestApp, Arc<StubKeystone>) {
    let stub = Arc::new(StubKeystone {
        tokens: HashMap::from([
            ("member-token", ("demo", "alice", &["member", "reader"][..])),
            ("reader-token", ("demo", "rita", &["reader"][..])),
            ("admin-token", ("admin", "root", &["admin", "member", "reader"][..])),
            ("service-token", ("service", "neutron", &["service"][..])),
        ]),
        validations: AtomicUsize::new(0),
    });
    let router = axum::Router::new()
        .route("/v3/auth/tokens", axum::routing::post(issue).get(validate))
        .with_state(Arc::clone(&stub));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let mut t = TestApp::start().await;
    common::keystone::validate_tokens_as_nova(&mut t.settings, &url);
    t.restart(|_| {}).await;
    (t, stub)
}

async fn call(t: &TestApp, token: Option<&str>, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = t
        .http
        .request(method, t.url(path))
        // Identity headers a client adds are ignored with Keystone.
        .header("x-roles", "admin")
        .header("x-project-id", "elsewhere");
    if let Some(token) = token {
        request = request.header("x-auth-token", token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    common::send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_a_bad_one_is_401_with_the_keystone_uri() {
    let (t, _) = keystone_app().await;
    for token in [None, Some("forged"), Some("")] {
        let mut request = t.http.get(t.url("/servers"));
        if let Some(token) = token {
            request = request.header("x-auth-token", token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401, "{token:?}");
        let challenge = response.headers()["www-authenticate"].to_str().unwrap().to_owned();
        assert!(challenge.starts_with("Keystone uri=\"http://127.0.0.1:"), "{challenge}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], 401, "{body}");
    }
    // The version documents need no token, as in Nova.
    assert_eq!(t.get("").await.0, 200);
}

/// Invariant 21.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tokens_project_and_roles_decide_whatever_headers_say() {
    let (t, _) = keystone_app().await;
    let boot = json!({"server": {"name": "k", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    let (status, body) = call(&t, Some("member-token"), Method::POST, "/servers", Some(boot.clone())).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    // The build (a host for the server) is done before events name it.
    t.app().compute.settle().await;
    let (_, shown) = call(&t, Some("member-token"), Method::GET, &format!("/servers/{id}"), None).await;
    assert_eq!(shown["server"]["tenant_id"], "demo", "{shown}");
    assert_eq!(shown["server"]["user_id"], "alice", "{shown}");
    // X-Roles: admin does not make a member an admin, nor a reader a member.
    let (status, _) = call(&t, Some("member-token"), Method::GET, "/servers?all_tenants=1", None).await;
    assert_eq!(status, 403);
    let (status, _) = call(&t, Some("reader-token"), Method::POST, "/servers", Some(boot)).await;
    assert_eq!(status, 403);
    let (status, _) = call(&t, Some("admin-token"), Method::GET, "/servers?all_tenants=1", None).await;
    assert_eq!(status, 200);
    // Neutron's notifier (role service) may post events; a member may not.
    let events = json!({"events": [{"name": "network-changed", "server_uuid": id}]});
    let (status, _) = call(
        &t,
        Some("member-token"),
        Method::POST,
        "/os-server-external-events",
        Some(events.clone()),
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = call(
        &t,
        Some("service-token"),
        Method::POST,
        "/os-server-external-events",
        Some(events),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_validation_is_cached() {
    let (t, stub) = keystone_app().await;
    for _ in 0..5 {
        let (status, body) = call(&t, Some("member-token"), Method::GET, "/servers", None).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(
        stub.validations.load(Ordering::SeqCst),
        1,
        "one Keystone call for five requests"
    );
    call(&t, Some("reader-token"), Method::GET, "/servers", None).await;
    assert_eq!(
        stub.validations.load(Ordering::SeqCst),
        2,
        "another token, another validation"
    );
}

/// The client commands send the token of `OS_TOKEN` (or `--token`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_commands_send_os_token() {
    let (t, _) = keystone_app().await;
    let cli = |token: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_netcache"));
        command
            .args(["server", "list", "--output", "json"])
            .env("NETCACHE_URL", t.app().api_url())
            .env("NETCACHE_LOG", "warn")
            .env_remove("OS_TOKEN");
        if let Some(token) = token {
            command.env("OS_TOKEN", token);
        }
        command.output().unwrap()
    };
    let refused = cli(None);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("HTTP 401"),
        "{refused:?}"
    );
    let listed = cli(Some("member-token"));
    assert!(listed.status.success(), "{listed:?}");
}

/// The service-token convention: a valid `X-Service-Token` with the service
/// role lets a recently expired user token through; anything less is a 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_token_lets_an_expired_user_token_through() {
    let (t, _) = keystone_app().await;
    let list = |service: Option<&'static str>| {
        let mut request = t.http.get(t.url("/servers")).header("x-auth-token", EXPIRED_TOKEN);
        if let Some(service) = service {
            request = request.header("x-service-token", service);
        }
        common::send(request)
    };
    assert_eq!(list(None).await.0, 401, "an expired token alone");
    assert_eq!(list(Some("forged")).await.0, 401, "beside an invalid service token");
    assert_eq!(
        list(Some("member-token")).await.0,
        401,
        "beside a token without the service role"
    );
    let (status, body) = list(Some("service-token")).await;
    assert_eq!(status, 200, "beside a service token: {body}");
    // The user's token still decides who acts: alice in demo, a member.
    let boot = json!({"server": {"name": "late", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    let (status, body) = common::send(
        t.http
            .post(t.url("/servers"))
            .header("x-auth-token", EXPIRED_TOKEN)
            .header("x-service-token", "service-token")
            .json(&boot),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap();
    let (_, shown) = call(&t, Some("member-token"), Method::GET, &format!("/servers/{id}"), None).await;
    assert_eq!(shown["server"]["user_id"], "alice", "{shown}");
    // A service token alone is no user token.
    let (status, _) = common::send(t.http.get(t.url("/servers")).header("x-service-token", "service-token")).await;
    assert_eq!(status, 401);
}

/// The value of `series` (its name and labels, as rendered) in a scrape of
/// `/metrics`; 0 if it is not there yet.
async fn metric(t: &TestApp, series: &str) -> f64 {
    let (_, text) = {
        let response = t
            .http
            .get(format!("{}/metrics", t.app().api_url()))
            .header("x-auth-token", "admin-token")
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    };
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Users' token validations are counted by outcome, and each request by its
/// route's template and status. Other tests of this binary count in the same
/// process at once, so each count is checked to have grown by at least this
/// test's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_validations_and_requests_are_counted() {
    let (t, _) = keystone_app().await;
    let validations = |outcome: &str| format!("netcache_api_token_validations_total{{outcome=\"{outcome}\"}}");
    let not_found = r#"netcache_api_requests_total{method="GET",route="/v2.1/servers/{id}",status="404"}"#;
    let refused = r#"netcache_api_requests_total{method="GET",route="/v2.1/servers",status="401"}"#;
    let unavailable = r#"netcache_api_requests_total{method="GET",route="/v2.1/servers",status="503"}"#;
    let latencies =
        r#"netcache_api_request_duration_seconds_count{method="GET",route="/v2.1/servers/{id}",status="404"}"#;
    let series = [
        validations("valid"),
        validations("invalid"),
        validations("error"),
        validations("cached"),
        validations("cached_invalid"),
        not_found.to_owned(),
        refused.to_owned(),
        unavailable.to_owned(),
        latencies.to_owned(),
    ];
    let mut before = Vec::new();
    for name in &series {
        before.push(metric(&t, name).await);
    }

    // The scrapes' admin token is validated once and then cached, so this
    // test's own validations are of other tokens.
    let missing = format!("/servers/{}", uuid::Uuid::new_v4());
    assert_eq!(call(&t, Some("member-token"), Method::GET, &missing, None).await.0, 404);
    assert_eq!(call(&t, Some("member-token"), Method::GET, &missing, None).await.0, 404);
    // A refused token is cached too: its second request asks Keystone nothing.
    assert_eq!(call(&t, Some("forged"), Method::GET, "/servers", None).await.0, 401);
    assert_eq!(call(&t, Some("forged"), Method::GET, "/servers", None).await.0, 401);
    assert_eq!(
        call(&t, Some(KEYSTONE_FAILS_TOKEN), Method::GET, "/servers", None)
            .await
            .0,
        503
    );

    let grown = [1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 1.0, 2.0];
    for ((name, before), grown) in series.iter().zip(before).zip(grown) {
        let after = metric(&t, name).await;
        assert!(after >= before + grown, "{name}: {before} then {after}, not +{grown}");
    }
}
