//! The API's router over a compute service on the embedded Neutron and an
//! in-memory SQLite store, called in process (tower `oneshot`), as an admin of
//! `demo` (the cloud operator's client: the zone's hosts and `all_tenants` are
//! admins').

#![allow(dead_code)]

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use netcache_api::{ApiConfig, AppState};
use netcache_compute::lifecycle::virt::FakeVirt;
use netcache_compute::{Compute, ComputeConfig};
use netcache_neutron::{Auth, ClientConfig, HttpNeutron};
use netcache_testenv::json::strings;
use neutron_sim::{NeutronSim, RunningSim, SimConfig};
use serde_json::{Value, json};
use tower::ServiceExt;

pub const BASE: &str = "http://127.0.0.1:8774";
/// The first image of the image subset (Tempest's `image_ref`).
pub const IMAGE: &str = netcache_api::images::IMAGES[0].id;

pub struct Api {
    router: Router,
    /// The compute service behind the router (its clock, to move time on).
    pub compute: Arc<Compute>,
    /// The router's turns to build a detail page.
    pub detail_pages: Arc<tokio::sync::Semaphore>,
    neutron: RunningSim,
}

impl Api {
    pub async fn start() -> Self {
        Self::start_with(SimConfig::default()).await
    }

    /// Against an embedded Neutron of this configuration (project `demo`'s
    /// default topology made in it).
    pub async fn start_with(sim: SimConfig) -> Self {
        let sim = NeutronSim::start(sim, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        sim.handle().create_default_topology("demo");
        let store = netcache_store::open("sqlite::memory:").await.unwrap();
        let neutron =
            Arc::new(HttpNeutron::new(ClientConfig::new(Auth::none(url::Url::parse(&sim.url()).unwrap()))).unwrap());
        let config = ComputeConfig::default();
        let virt = Arc::new(FakeVirt::new(&config.virt));
        let compute = Compute::start(config, store, neutron, virt).await.unwrap();
        let detail_pages = Arc::new(tokio::sync::Semaphore::new(netcache_api::DETAIL_PAGES_AT_ONCE));
        let router = netcache_api::router(AppState {
            compute: Arc::clone(&compute),
            config: Arc::new(ApiConfig {
                default_project: "demo".into(),
                public_url: BASE.into(),
                keystone: None,
                policy: Arc::default(),
                max_limit: netcache_api::MAX_LIMIT,
                detail_pages: Arc::clone(&detail_pages),
            }),
        });
        Self {
            router,
            compute,
            detail_pages,
            neutron: sim,
        }
    }

    /// The embedded Neutron behind the service (to shape its networks).
    pub fn sim(&self) -> neutron_sim::SimHandle {
        self.neutron.handle()
    }

    pub async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let (status, _, body) = self.call_with_headers(method, uri, &[], body).await;
        (status, body)
    }

    /// A call with extra request headers; answers status, headers and body.
    pub async fn call_with_headers(
        &self,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, HeaderMap, Value) {
        let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
        self.send(method, uri, headers, body).await
    }

    /// A call whose body is `text` as it is, JSON or not.
    pub async fn call_raw(&self, method: Method, uri: &str, text: &'static str) -> (StatusCode, Value) {
        let (status, _, body) = self.send(method, uri, &[], Body::from(text)).await;
        (status, body)
    }

    async fn send(
        &self,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: Body,
    ) -> (StatusCode, HeaderMap, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json");
        // An admin, unless the call names the roles.
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("x-roles")) {
            request = request.header("x-roles", "admin,member,reader");
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(body).unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, headers, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::GET, uri, None).await
    }

    pub async fn boot(&self, name: &str) -> String {
        self.boot_with(json!({"name": name})).await
    }

    /// Boots with `fields` added to a valid request (no networks: 2.37's
    /// `"none"`); returns the id.
    pub async fn boot_with(&self, fields: Value) -> String {
        let mut server = json!({"name": "vm", "flavorRef": "1", "imageRef": IMAGE, "networks": "none"});
        server
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let (status, body) = self.post_boot(json!({ "server": server })).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        body["server"]["id"].as_str().unwrap().to_owned()
    }

    /// Boots `name` (as [`Api::boot`]) and waits until it is ACTIVE; returns the id.
    pub async fn boot_active(&self, name: &str) -> String {
        self.boot_active_with(json!({"name": name})).await
    }

    /// Boots with `fields` (as [`Api::boot_with`]) and waits until the server
    /// is ACTIVE; returns the id.
    pub async fn boot_active_with(&self, fields: Value) -> String {
        let id = self.boot_with(fields).await;
        assert_eq!(self.built(&id).await, "ACTIVE");
        id
    }

    /// A call at microversion `2.minor` (as the harness's admin).
    pub async fn at(&self, minor: u16, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.at_as(minor, &[], method, uri, body).await
    }

    /// A call at microversion `2.minor` as whom `who`'s headers name
    /// (`x-user-id`, `x-project-id`, `x-roles`; the harness's admin of `demo`
    /// where they name none).
    pub async fn at_as(
        &self,
        minor: u16,
        who: &[(&str, &str)],
        method: Method,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let version = format!("compute 2.{minor}");
        let mut headers = vec![("openstack-api-version", version.as_str())];
        headers.extend_from_slice(who);
        let (status, _, body) = self.call_with_headers(method, uri, &headers, body).await;
        (status, body)
    }

    /// `GET uri` (whose query names an unknown `foo`) as `who`: answered at
    /// `2.(from - 1)`, refused from `2.from` in jsonschema's words, as Nova's
    /// query schemas with `additionalProperties: false` refuse it.
    pub async fn assert_unknown_query_refused_from(&self, from: u16, who: &[(&str, &str)], uri: &str) {
        let (status, body) = self.at_as(from - 1, who, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "2.{} {uri}: {body}", from - 1);
        let (status, body) = self.at_as(from, who, Method::GET, uri, None).await;
        assert_eq!(
            (status, error_message(&body)),
            (
                StatusCode::BAD_REQUEST,
                "Additional properties are not allowed ('foo' was unexpected)"
            ),
            "2.{from} {uri}"
        );
    }

    /// `POST /v2.1/servers` at 2.37, where `"networks": "none"` is allowed.
    pub async fn post_boot(&self, body: Value) -> (StatusCode, Value) {
        let headers = [("openstack-api-version", "compute 2.37")];
        let (status, _, body) = self
            .call_with_headers(Method::POST, "/v2.1/servers", &headers, Some(body))
            .await;
        (status, body)
    }

    /// Waits until `GET uri` answers a body `done` accepts; answers it.
    pub async fn poll(&self, uri: &str, done: impl Fn(&Value) -> bool) -> Value {
        let answer = async || Some(self.get(uri).await.1).filter(|body| done(body));
        netcache_testenv::poll::eventually(&format!("{uri} answering what was awaited"), answer).await
    }

    /// Waits until the server leaves BUILD (or a rebuild's REBUILD); answers its status.
    pub async fn built(&self, id: &str) -> String {
        let status = |body: &Value| body["server"]["status"].as_str().unwrap_or_default().to_owned();
        let body = self
            .poll(&format!("/v2.1/servers/{id}"), |body| {
                !["BUILD", "REBUILD"].contains(&status(body).as_str())
            })
            .await;
        status(&body)
    }

    /// Waits until a deleted server is no longer shown (its delete finished).
    pub async fn gone(&self, id: &str) {
        let uri = format!("/v2.1/servers/{id}");
        netcache_testenv::poll::until(&format!("server {id} gone"), async || {
            self.get(&uri).await.0 == StatusCode::NOT_FOUND
        })
        .await;
    }
}

/// The message of a Nova error body (`{"badRequest": {"message": …}}`).
pub fn error_message(body: &Value) -> &str {
    body.as_object()
        .and_then(|o| o.values().next())
        .and_then(|f| f["message"].as_str())
        .unwrap_or_default()
}

/// The ids of a list answer's `collection` (`servers`, `flavors`), in order.
pub fn ids_of(body: &Value, collection: &str) -> Vec<String> {
    strings(body, collection, "id").into_iter().map(str::to_owned).collect()
}
