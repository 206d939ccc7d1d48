//! axum routes: the Neutron v2.0 API (each path template names its operation, then
//! [`crate::http::neutron`] applies faults and runs it) and the `/_sim` admin API.

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, put};
use serde::Deserialize;
use serde_json::json;

use crate::api::Route;
use crate::config::FaultRule;
use crate::faults::Stats;
use crate::http::{Shared, lock, neutron};
use crate::store::Kind;

/// The routes, without state; every simulator (and every in-process call) shares them.
static ROUTES: LazyLock<Router<Arc<Shared>>> = LazyLock::new(|| {
    let neutron_api = Router::new()
        .route("/", get(versions))
        .route("/v2.0", get(resources))
        .route("/v2.0/", get(resources))
        .route("/v2.0/{collection}", get(collection).post(collection))
        .route("/v2.0/{collection}/{id}", get(item).put(item).delete(item))
        .route("/v2.0/{collection}/{id}/{sub}", get(sub).put(sub).delete(sub))
        .route("/v2.0/{collection}/{id}/tags/{tag}", get(tag).put(tag).delete(tag));
    let admin = Router::new()
        .route("/_sim/faults", get(faults).post(add_faults).delete(clear_faults))
        .route("/_sim/stats", get(stats).delete(clear_stats))
        .route("/_sim/reset", axum::routing::post(reset))
        .route("/_sim/nova_url", put(nova_url))
        .route("/_sim/default_topology", axum::routing::post(default_topology))
        .route("/_sim", any(unknown_admin))
        .route("/_sim/{*rest}", any(unknown_admin));
    neutron_api
        .merge(admin)
        .fallback(unknown)
        .method_not_allowed_fallback(unknown)
});

pub(crate) fn app(sh: Arc<Shared>) -> Router {
    ROUTES.clone().with_state(sh)
}

fn kind_of(collection: &str) -> Option<Kind> {
    Some(match collection {
        "networks" => Kind::Network,
        "subnets" => Kind::Subnet,
        "ports" => Kind::Port,
        "routers" => Kind::Router,
        "floatingips" => Kind::FloatingIp,
        "security-groups" => Kind::SecurityGroup,
        "security-group-rules" => Kind::SecurityGroupRule,
        _ => return None,
    })
}

/// Neutron (its Pecan/Routes layer) takes `.json` at the end of any path.
fn strip_json(segment: &str) -> &str {
    segment.strip_suffix(".json").unwrap_or(segment)
}

/// The operation name used by fault rules and statistics, e.g. `ports.create`.
fn op(collection: &str, verb: &str) -> String {
    format!("{collection}.{verb}")
}

/// 404 as Neutron answers an unknown path or method.
async fn unknown(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    neutron(sh, None, req).await
}

async fn versions(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    neutron(sh, Some(("versions".into(), Route::Versions)), req).await
}

async fn resources(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    neutron(sh, Some(("versions".into(), Route::Resources)), req).await
}

/// `GET|POST /v2.0/{collection}` (and `GET /v2.0/extensions`).
async fn collection(State(sh): State<Arc<Shared>>, Path(c): Path<String>, req: Request) -> Response {
    let c = strip_json(&c);
    let get = req.method() == Method::GET;
    let route = match kind_of(c) {
        _ if c == "extensions" && get => Some(("extensions.list".into(), Route::Extensions)),
        Some(k) => Some((op(c, if get { "list" } else { "create" }), Route::Collection(k))),
        None => None,
    };
    neutron(sh, route, req).await
}

/// `GET|PUT|DELETE /v2.0/{collection}/{id}` (and `GET /v2.0/extensions/{alias}`).
async fn item(State(sh): State<Arc<Shared>>, Path((c, id)): Path<(String, String)>, req: Request) -> Response {
    let id = strip_json(&id).to_string();
    let verb = match *req.method() {
        Method::GET => "show",
        Method::PUT => "update",
        _ => "delete",
    };
    let route = match kind_of(&c) {
        _ if c == "extensions" && verb == "show" => Some(("extensions.show".into(), Route::Extension(id))),
        _ if c == "auto-allocated-topology" && verb == "show" => {
            Some(("auto_allocated_topology.show".into(), Route::AutoAllocatedTopology(id)))
        }
        Some(k) => Some((op(&c, verb), Route::Item(k, id))),
        None => None,
    };
    neutron(sh, route, req).await
}

/// `/v2.0/{collection}/{id}/tags` and `PUT /v2.0/routers/{id}/{add,remove}_router_interface`.
async fn sub(
    State(sh): State<Arc<Shared>>,
    Path((c, id, sub)): Path<(String, String, String)>,
    req: Request,
) -> Response {
    let action = strip_json(&sub);
    let route = match (kind_of(&c), action) {
        (Some(k), "tags") => Some((op(&c, "tags"), Route::Tags(k, id))),
        (Some(Kind::Router), "add_router_interface" | "remove_router_interface") if req.method() == Method::PUT => {
            let add = action == "add_router_interface";
            Some((op(&c, action), Route::RouterInterface(id, add)))
        }
        _ => None,
    };
    neutron(sh, route, req).await
}

/// `GET|PUT|DELETE /v2.0/{collection}/{id}/tags/{tag}`.
async fn tag(
    State(sh): State<Arc<Shared>>,
    Path((c, id, tag)): Path<(String, String, String)>,
    req: Request,
) -> Response {
    let tag = strip_json(&tag).to_string();
    let route = kind_of(&c).map(|k| (op(&c, "tags"), Route::Tag(k, id, tag)));
    neutron(sh, route, req).await
}

// ---------- admin (`/_sim`, not counted in stats) ----------

fn admin_err(msg: impl std::fmt::Display) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": msg.to_string()}))).into_response()
}

async fn unknown_admin() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": "unknown admin endpoint"})),
    )
        .into_response()
}

async fn faults(State(sh): State<Arc<Shared>>) -> Response {
    axum::Json(json!({"faults": lock(&sh.faults).list()})).into_response()
}

/// One rule, or `{"faults": [rule, ...]}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum FaultsBody {
    Many { faults: Vec<FaultRule> },
    One(FaultRule),
}

// Bodies are read by hand, not with axum's `Json`: curl sends no JSON content type, and
// errors answer `{"error": ...}`.
async fn add_faults(State(sh): State<Arc<Shared>>, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return admin_err("body must be a fault rule (JSON)");
    };
    let rules = match FaultsBody::deserialize(&v) {
        Ok(FaultsBody::Many { faults }) => faults,
        Ok(FaultsBody::One(rule)) => vec![rule],
        // The error of the shape the body has, not serde's "no variant matched".
        Err(_) => match v.get("faults") {
            Some(list) => match Vec::<FaultRule>::deserialize(list) {
                Ok(rules) => rules,
                Err(e) => return admin_err(e),
            },
            None => match FaultRule::deserialize(&v) {
                Ok(rule) => vec![rule],
                Err(e) => return admin_err(e),
            },
        },
    };
    let mut f = lock(&sh.faults);
    for r in rules {
        f.add(r);
    }
    (StatusCode::CREATED, axum::Json(json!({"faults": f.list()}))).into_response()
}

async fn clear_faults(State(sh): State<Arc<Shared>>) -> StatusCode {
    lock(&sh.faults).clear();
    StatusCode::NO_CONTENT
}

async fn stats(State(sh): State<Arc<Shared>>) -> Response {
    axum::Json(lock(&sh.stats).clone()).into_response()
}

async fn clear_stats(State(sh): State<Arc<Shared>>) -> StatusCode {
    *lock(&sh.stats) = Stats::default();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ResetBody {
    data: bool,
}

/// Clears faults and stats; with `{"data": true}` every resource too (no body = false).
async fn reset(State(sh): State<Arc<Shared>>, body: Bytes) -> StatusCode {
    let body: ResetBody = serde_json::from_slice(&body).unwrap_or_default();
    crate::reset(&sh, body.data);
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct NovaUrlBody {
    #[serde(default)]
    url: Option<String>,
}

async fn nova_url(State(sh): State<Arc<Shared>>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<NovaUrlBody>(&body) else {
        return admin_err("body must be {\"url\": \"...\" | null}");
    };
    sh.set_nova_url(body.url);
    StatusCode::NO_CONTENT.into_response()
}

#[derive(Deserialize)]
struct TopologyBody {
    #[serde(default = "default_project")]
    project_id: String,
}

fn default_project() -> String {
    "fake_project_id".into()
}

async fn default_topology(State(sh): State<Arc<Shared>>, body: Bytes) -> Response {
    let project = serde_json::from_slice::<TopologyBody>(&body).map_or_else(|_| default_project(), |b| b.project_id);
    axum::Json(crate::default_topology(&sh, &project)).into_response()
}
