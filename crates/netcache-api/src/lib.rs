//! Nova-compatible compute API (v2.1 subset) over the compute service:
//! servers (with their update and metadata), addresses, os-interface,
//! os-instance-actions, os-keypairs, os-quota-sets, os-quota-class-sets,
//! limits and the extensions list; for clients such
//! as `openstack`, a fixed flavor catalog, the availability zone and a
//! read-only Glance v2 image subset at `/image`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use netcache_compute::{
    AggregateOps, AttachmentOps, Compute, FlavorOps, FloatingIpProxy, KeyPairOps, NetworkProxy, QuotaOps,
    RequestContext, SecurityGroupProxy, ServerGroupOps, ServerOps, ServiceOps, new_request_id,
};
use netcache_domain::ServerId;
use tower::Layer;
use tower::util::MapRequestLayer;

mod access;
mod actions;
mod admin_actions;
mod aggregates;
pub mod auth;
mod console_output;
mod deferred_delete;
mod error;
mod events;
mod extensions;
mod flavor_access;
mod flavor_create;
mod flavor_extra_specs;
pub mod flavor_view;
mod flavors;
mod floating_ips;
mod hosts;
mod hypervisors;
mod image_proxy;
pub mod images;
pub mod instance_action_view;
mod instance_actions;
mod interfaces;
mod keypairs;
mod legacy_v2;
mod limits;
pub mod metrics;
pub mod microversion;
mod migrations;
mod networks;
pub mod policy;
mod query_params;
mod quota_class_sets;
mod quota_sets;
mod raw_path;
mod removed;
mod request;
mod rescue;
mod schema;
mod security_group_actions;
mod security_group_view;
mod security_groups;
mod server_answer;
mod server_create;
mod server_diagnostics;
mod server_groups;
mod server_metadata;
mod server_password;
mod server_query;
mod server_rebuild;
mod server_security_groups;
mod server_tags;
mod server_update;
pub mod server_view;
mod servers;
mod services;
mod simple_tenant_usage;
mod usage_audit_log;
mod versions;
pub mod wire;
mod zones;

pub use error::{ApiError, ApiResult, nova_error};
pub use server_query::MAX_LIMIT;

#[derive(Clone)]
pub struct ApiConfig {
    /// Project of noauth callers that send no `X-Project-Id`.
    pub default_project: String,
    /// Base URL used in `links` (e.g. `http://127.0.0.1:8774`).
    pub public_url: String,
    /// `auth.strategy = keystone`: tokens validated here; `None` is noauth.
    pub keystone: Option<Arc<auth::KeystoneAuth>>,
    /// The rules in force (Nova's defaults and the deployment's overrides).
    pub policy: Arc<policy::Policy>,
    /// The most servers a list page holds, and a page's size without `limit`
    /// (Nova's `max_limit`).
    pub max_limit: usize,
    /// Turns to build a detail page (`api.detail_pages_at_once`): a page holds
    /// its servers, caches and body in memory while it is built, so requests
    /// beyond these wait, and memory does not grow with concurrent lists.
    pub detail_pages: Arc<tokio::sync::Semaphore>,
}

/// Detail pages built at once by default: the CPUs of a small host, twice.
pub const DETAIL_PAGES_AT_ONCE: usize = 4;

/// What the handlers share. Each concern of the compute service is reached
/// through its own narrow interface (`state.servers()`, `state.flavors()`, …),
/// so a handler names only what it uses of it.
#[derive(Clone)]
pub struct AppState {
    pub compute: Arc<Compute>,
    pub config: Arc<ApiConfig>,
}

impl AppState {
    #[must_use]
    pub fn servers(&self) -> &dyn ServerOps {
        &self.compute
    }
    #[must_use]
    pub fn attachments(&self) -> &dyn AttachmentOps {
        &self.compute
    }
    #[must_use]
    pub fn key_pairs(&self) -> &dyn KeyPairOps {
        &*self.compute
    }
    #[must_use]
    pub fn quotas(&self) -> &dyn QuotaOps {
        &*self.compute
    }
    #[must_use]
    pub fn server_groups(&self) -> &dyn ServerGroupOps {
        &*self.compute
    }
    #[must_use]
    pub fn services(&self) -> &dyn ServiceOps {
        &*self.compute
    }
    #[must_use]
    pub fn aggregates(&self) -> &dyn AggregateOps {
        &*self.compute
    }
    #[must_use]
    pub fn flavors(&self) -> &dyn FlavorOps {
        &*self.compute
    }
    #[must_use]
    pub fn floating_ips(&self) -> &dyn FloatingIpProxy {
        &*self.compute
    }
    #[must_use]
    pub fn networks(&self) -> &dyn NetworkProxy {
        &*self.compute
    }
    #[must_use]
    pub fn security_groups(&self) -> &dyn SecurityGroupProxy {
        &*self.compute
    }
}

pub fn router(state: AppState) -> Router {
    metrics::handle();
    metrics::describe();
    let api = Router::new()
        .route("/", get(versions::root))
        .route("/metrics", get(metrics::render))
        .route("/v2.1", get(versions::v2_1))
        .route("/v2.1/", get(versions::v2_1))
        .merge(servers::routes())
        .merge(actions::routes())
        .merge(server_update::routes())
        .merge(server_metadata::routes())
        .merge(server_password::routes())
        .merge(server_diagnostics::routes())
        .merge(server_security_groups::routes())
        .merge(security_groups::routes())
        .merge(server_tags::routes())
        .merge(interfaces::routes())
        .merge(instance_actions::routes())
        .merge(keypairs::routes())
        .merge(server_groups::routes())
        .merge(events::routes())
        .merge(flavors::routes())
        .merge(zones::routes())
        .merge(services::routes())
        .merge(hypervisors::routes())
        .merge(hosts::routes())
        .merge(aggregates::routes())
        .merge(simple_tenant_usage::routes())
        .merge(removed::routes())
        .merge(networks::routes())
        .merge(floating_ips::routes())
        .merge(migrations::routes())
        .merge(usage_audit_log::routes())
        .merge(images::routes())
        .merge(image_proxy::routes())
        .merge(quota_sets::routes())
        .merge(quota_class_sets::routes())
        .merge(limits::routes())
        .merge(extensions::routes())
        .fallback(|| async { nova_error(StatusCode::NOT_FOUND, "The resource could not be found.") })
        .method_not_allowed_fallback(|| async {
            nova_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "The method specified is not allowed for this resource.",
            )
        })
        .layer(middleware::from_fn(microversion::negotiate))
        .layer(middleware::from_fn_with_state(state.clone(), auth::authenticate))
        .layer(middleware::from_fn(access::observe))
        .layer(middleware::from_fn(stamp_response))
        .with_state(state);
    // Rewritten before routing: `/v2` reaches the v2.1 routes, and a segment
    // that does not decode reaches them as written.
    let rewrite = |request| legacy_v2::rewrite(raw_path::keep_undecodable(request));
    Router::new().fallback_service(MapRequestLayer::new(rewrite).layer(api))
}

/// Every answer carries a request id, as Nova's do.
async fn stamp_response(request: Request, next: Next) -> Response {
    let request_id = new_request_id();
    let mut request = request;
    request.extensions_mut().insert(RequestId(request_id.clone()));
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        headers.insert("x-openstack-request-id", v.clone());
        headers.insert("x-compute-request-id", v);
    }
    response
}

#[derive(Clone)]
struct RequestId(String);

/// The caller: with Keystone, the validated token's project, user and roles;
/// with noauth, the (Keystone-style) headers, or defaults. Noauth fails closed:
/// no `X-Roles` is a `member` of the default project (admin and service must be
/// asked for), and an empty or unreadable identity header is refused.
pub struct Caller {
    pub ctx: RequestContext,
    policy: Arc<policy::Policy>,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let request_id = parts
            .extensions
            .get::<RequestId>()
            .map_or_else(new_request_id, |r| r.0.clone());
        if state.config.keystone.is_some() {
            // The token decides; identity headers the client added are ignored.
            let identity = parts.extensions.get::<auth::Identity>().ok_or(ApiError::Unauthorized)?;
            return Ok(Self {
                ctx: RequestContext {
                    request_id,
                    project_id: identity.project_id.clone(),
                    user_id: identity.user_id.clone(),
                    roles: identity.roles.clone(),
                },
                policy: Arc::clone(&state.config.policy),
            });
        }
        let header = |name: &str| -> ApiResult<Option<&str>> {
            let Some(value) = parts.headers.get(name) else {
                return Ok(None);
            };
            match value.to_str().map(str::trim) {
                Ok(v) if !v.is_empty() => Ok(Some(v)),
                _ => Err(ApiError::BadRequest(format!(
                    "The {name} header is empty or unreadable."
                ))),
            }
        };
        let project = header("x-project-id")?
            .unwrap_or(&state.config.default_project)
            .to_owned();
        let user = header("x-user-id")?.unwrap_or("netcache-user").to_owned();
        let roles: Vec<String> = match header("x-roles")? {
            Some(roles) => roles
                .split(',')
                .map(|r| r.trim().to_lowercase())
                .filter(|r| !r.is_empty())
                .collect(),
            None => vec!["member".to_owned(), "reader".to_owned()],
        };
        if roles.is_empty() {
            return Err(ApiError::BadRequest("The x-roles header names no role.".into()));
        }
        Ok(Self {
            ctx: RequestContext {
                request_id,
                project_id: project,
                user_id: user,
                roles,
            },
            policy: Arc::clone(&state.config.policy),
        })
    }
}

impl Caller {
    /// The server, if `rule` lets the caller act on servers, it exists and the
    /// caller may see it; 404 otherwise (Nova does not reveal other projects' servers).
    pub async fn server(
        &self,
        state: &AppState,
        id: &str,
        rule: &'static str,
    ) -> ApiResult<netcache_domain::server::Server> {
        self.server_read_deleted(state, id, rule, false).await
    }

    /// The same, a deleted server too (until purged) where `read_deleted`
    /// (Nova's `read_deleted='yes'`).
    pub async fn server_read_deleted(
        &self,
        state: &AppState,
        id: &str,
        rule: &'static str,
        read_deleted: bool,
    ) -> ApiResult<netcache_domain::server::Server> {
        self.authorize(rule)?;
        let not_found = || ApiError::NotFound(format!("Instance {id} could not be found."));
        let server_id: ServerId = id.parse().map_err(|_| not_found())?;
        let found = if read_deleted {
            state.servers().server_or_deleted(server_id).await
        } else {
            state.servers().server(server_id).await
        };
        let server = found.map_err(|e| match e {
            netcache_compute::Error::ServerNotFound(_) => not_found(),
            other => other.into(),
        })?;
        if !self.ctx.is_admin() && server.project_id.as_str() != self.ctx.project_id {
            return Err(not_found());
        }
        Ok(server)
    }
}
