//! Nova's floating IP proxies to Neutron: `/v2.1/os-floating-ips` (list,
//! show, create, delete) and `/v2.1/os-floating-ip-pools`, served until 2.35
//! (404 from 2.36), and the server actions `addFloatingIp` and
//! `removeFloatingIp`, until 2.43 (404 from 2.44), as Nova. Bodies, checks
//! and refusals are Nova's, in its order; the floating IPs are Neutron's,
//! never kept here (see `netcache_compute::ProjectScope` for whose a caller
//! sees).

use std::net::IpAddr;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::{Error as ComputeError, PooledFloatingIp};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{AppState, Caller, schema};

/// The last microversion of the proxies.
const LAST_VERSION: u16 = 35;
/// The last microversion of the two actions.
const LAST_ACTION_VERSION: u16 = 43;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-floating-ips", get(list).post(create))
        .route("/v2.1/os-floating-ips/{id}", get(show).delete(delete))
        .route("/v2.1/os-floating-ip-pools", get(pools))
}

fn view(f: &PooledFloatingIp) -> Value {
    json!({
        "fixed_ip": f.ip.fixed_ip_address.map(|ip| ip.to_string()),
        "id": f.ip.id,
        "instance_id": f.ip.device_id,
        "ip": f.ip.floating_ip_address.to_string(),
        "pool": f.pool,
    })
}

async fn list(NovaRequest { state, caller, version }: NovaRequest) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project("os_compute_api:os-floating-ips:list")?;
    let found = state.floating_ips().project_floating_ips(&caller.project()).await?;
    let views: Vec<Value> = found.iter().map(view).collect();
    Ok(Json(json!({"floating_ips": views})))
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project("os_compute_api:os-floating-ips:show")?;
    let found = state.floating_ips().floating_ip(&id, &caller.neutron_scope()).await?;
    Ok(Json(json!({"floating_ip": view(&found)})))
}

/// Nova's create body: none, `null`, or an object whose `pool` is a string
/// or `null` (other keys ignored); an empty pool is the default one.
fn requested_pool(body: &Bytes) -> ApiResult<Option<String>> {
    if body.is_empty() {
        return Ok(None);
    }
    let body: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::BadRequest("Malformed request body".into()))?;
    match &body {
        Value::Null => Ok(None),
        Value::Object(fields) => match fields.get("pool") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(pool)) => Ok(Some(pool.clone()).filter(|p| !p.is_empty())),
            Some(other) => Err(schema::not_of_type("pool", other, "string', 'null")),
        },
        other => Err(ApiError::BadRequest(format!(
            "{} is not of type 'object', 'null'",
            schema::python_repr(other)
        ))),
    }
}

async fn create(NovaRequest { state, caller, version }: NovaRequest, body: Bytes) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    let pool = requested_pool(&body)?;
    caller.authorize_own_project("os_compute_api:os-floating-ips:create")?;
    let made = state
        .floating_ips()
        .allocate_floating_ip(&caller.project(), pool.as_deref())
        .await?;
    Ok(Json(json!({"floating_ip": view(&made)})))
}

async fn delete(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<StatusCode> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project("os_compute_api:os-floating-ips:delete")?;
    state
        .floating_ips()
        .release_floating_ip(&id, &caller.neutron_scope())
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn pools(NovaRequest { state, caller, version }: NovaRequest) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize("os_compute_api:os-floating-ip-pools")?;
    let networks = state.floating_ips().floating_ip_pools().await?;
    let views: Vec<Value> = networks
        .iter()
        .map(|n| {
            let name = if n.name.is_empty() { n.id.as_str() } else { &n.name };
            json!({"name": name})
        })
        .collect();
    Ok(Json(json!({"floating_ip_pools": views})))
}

/// Nova's `ip_address`: a string in IPv4 or IPv6 format.
fn ip_address(field: &str, value: &Value) -> ApiResult<IpAddr> {
    let Value::String(text) = value else {
        return Err(schema::not_of_type(field, value, "string"));
    };
    text.parse().map_err(|_| {
        let reason = format!(
            "{} is not valid under any of the given schemas",
            schema::python_repr(value)
        );
        schema::invalid(field, value, &reason)
    })
}

/// `{"addFloatingIp": {"address": …, "fixed_address": …}}`.
pub async fn add(state: &AppState, caller: &Caller, version: Microversion, id: &str, args: &Value) -> ApiResult<()> {
    version.served_until(LAST_ACTION_VERSION)?;
    let fields = schema::object(Some("addFloatingIp"), args, &["address", "fixed_address"], &["address"])?;
    let address = ip_address("address", &fields["address"])?;
    let fixed = fields
        .get("fixed_address")
        .map(|v| ip_address("fixed_address", v))
        .transpose()?;
    let server = caller.server(state, id, "os_compute_api:os-floating-ips:add").await?;
    state
        .floating_ips()
        .associate_floating_ip(&server, &caller.neutron_scope(), address, fixed)
        .await?;
    Ok(())
}

/// `{"removeFloatingIp": {"address": …}}`: Nova finds the floating IP and the
/// server it is on before the server the request names, and refuses with
/// 409 unless they are the same.
pub async fn remove(state: &AppState, caller: &Caller, version: Microversion, id: &str, args: &Value) -> ApiResult<()> {
    const RULE: &str = "os_compute_api:os-floating-ips:remove";
    version.served_until(LAST_ACTION_VERSION)?;
    let fields = schema::object(Some("removeFloatingIp"), args, &["address"], &["address"])?;
    let address = ip_address("address", &fields["address"])?;
    let fip = state
        .floating_ips()
        .floating_ip_by_address(address, &caller.neutron_scope())
        .await?;
    let holder = match (&fip.port_id, &fip.device_id) {
        (Some(_), Some(device)) => Some(caller.server(state, device, RULE).await?),
        _ => None,
    };
    match &holder {
        Some(server) => caller.authorize_project(RULE, server.project_id.as_str())?,
        // Nova's target is empty then: a project rule fails.
        None => caller.authorize_no_project(RULE)?,
    }
    match holder.filter(|server| server.id.to_string() == id) {
        Some(server) => Ok(state.floating_ips().dissociate_floating_ip(&server, &fip).await?),
        None => Err(ComputeError::FloatingIpNotAssociated {
            address,
            server: id.to_owned(),
        }
        .into()),
    }
}
