//! `/v2.1/os-hosts` (admin, gone at 2.43): the older view of the zone's hosts.
//! The list is one row per enabled `nova-compute` service (Nova leaves disabled
//! ones out; netcache has no scheduler or conductor rows to add), filtered by
//! `zone`; a host's detail is its capacity, its usage and its usage by
//! project, as Nova's `(total)`, `(used_now)`, `(used_max)` and per-project
//! resources. `status` enables or disables the host's compute service (what a
//! driver that supports it does); maintenance mode and the power actions need
//! a hypervisor netcache does not drive, so after the host is found they are
//! Nova's 501 for a driver without them.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::{ServiceKey, StoredService};
use netcache_domain::service::{
    COMPUTE_BINARY, HOST_LOCAL_GB, HOST_MEMORY_MB, HOST_VCPUS, HostUsage, ServiceUpdate, Status,
};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::hypervisors::server_counts;
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::services::last_value;
use crate::{AppState, Caller, schema, wire};

/// The last microversion that serves `os-hosts`.
const LAST_VERSION: u16 = 42;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-hosts", get(list))
        .route("/v2.1/os-hosts/{host}", get(show).put(update))
        .route("/v2.1/os-hosts/{host}/reboot", get(reboot))
        .route("/v2.1/os-hosts/{host}/shutdown", get(shutdown))
        .route("/v2.1/os-hosts/{host}/startup", get(startup))
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize("os_compute_api:os-hosts:list")?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    // A blank zone filters nothing, as Nova's `if zone:`.
    let wanted = last_value(&pairs, "zone").filter(|z| !z.is_empty());
    let aggregates = state.aggregates().aggregates().await?;
    let default = &state.compute.config().availability_zone;
    let hosts: Vec<Value> = state
        .services()
        .services()
        .await?
        .iter()
        .filter(|s| !s.service.disabled)
        .map(|s| (s, aggregates.zone_of(&s.service.host, default)))
        .filter(|(_, zone)| wanted.is_none_or(|w| w == *zone))
        .map(|(s, zone)| json!({"host_name": s.service.host.as_str(), "service": "compute", "zone": zone}))
        .collect();
    Ok(Json(json!({"hosts": hosts})))
}

/// The host's compute service: Nova's 404 when it has none.
async fn compute_service(state: &AppState, host: &str) -> ApiResult<StoredService> {
    state
        .services()
        .services()
        .await?
        .into_iter()
        .find(|s| s.service.host.as_str() == host && s.service.binary == COMPUTE_BINARY)
        .ok_or_else(|| netcache_compute::Error::HostNotMapped(host.to_owned()).into())
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, Path(host): Path<String>) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize("os_compute_api:os-hosts:show")?;
    compute_service(&state, &host).await?;
    let mut total = HostUsage::default();
    let mut by_project: BTreeMap<String, HostUsage> = BTreeMap::new();
    for count in server_counts(&state, Some(&host)).await? {
        count.add_to(&mut total);
        count.add_to(by_project.entry(count.project_id.to_string()).or_default());
    }
    let resource = |project: &str, cpu: u64, memory_mb: u64, disk_gb: u64| json!({"resource": {"host": host, "project": project, "cpu": cpu, "memory_mb": memory_mb, "disk_gb": disk_gb}});
    let mut resources = vec![
        resource("(total)", HOST_VCPUS, HOST_MEMORY_MB, HOST_LOCAL_GB),
        resource("(used_now)", total.vcpus, total.memory_mb, total.local_gb),
        resource("(used_max)", total.vcpus, total.memory_mb, total.local_gb),
    ];
    resources.extend(
        by_project
            .iter()
            .map(|(project, usage)| resource(project, usage.vcpus, usage.memory_mb, usage.local_gb)),
    );
    Ok(Json(json!({"host": resources})))
}

/// Nova's `enable`/`disable` in any of its three spellings.
fn enable_word(field: &str, value: &Value) -> ApiResult<bool> {
    const WORDS: [&str; 6] = ["enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE"];
    match value.as_str() {
        Some(word) if WORDS.contains(&word) => Ok(word.eq_ignore_ascii_case("enable")),
        _ => Err(schema::invalid(
            field,
            value,
            &format!(
                "{} is not one of ['enable', 'disable', 'Enable', 'Disable', 'ENABLE', 'DISABLE']",
                schema::python_repr(value)
            ),
        )),
    }
}

async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(host): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    // Nova validates the body before its policy.
    let body: Value = wire::parse_body(&body)?;
    let fields = schema::object(None, &body, &["status", "maintenance_mode"], &[])?;
    if fields.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "{} is not valid under any of the given schemas",
            schema::python_repr(&body)
        )));
    }
    let enable = fields.get("status").map(|v| enable_word("status", v)).transpose()?;
    let maintenance = fields
        .get("maintenance_mode")
        .map(|v| enable_word("maintenance_mode", v))
        .transpose()?;
    caller.authorize("os_compute_api:os-hosts:update")?;
    compute_service(&state, &host).await?;
    // Refused before the status changes: the request does all or nothing.
    if maintenance.is_some() {
        return Err(not_supported());
    }
    let mut answer = json!({"host": host});
    if let Some(enable) = enable {
        let update = ServiceUpdate {
            status: Some(if enable { Status::Enabled } else { Status::Disabled }),
            ..ServiceUpdate::default()
        };
        let key = ServiceKey::HostBinary {
            host: host.clone(),
            binary: COMPUTE_BINARY.to_owned(),
        };
        state.services().update_service(&key, &update).await?;
        answer["status"] = json!(if enable { "enabled" } else { "disabled" });
    }
    Ok(Json(answer))
}

/// Nova's `raise_feature_not_supported`.
fn not_supported() -> ApiError {
    ApiError::NotImplemented("The requested functionality is not supported.".into())
}

/// A host power action: the host's 404 or 403 as Nova, then its 501.
async fn power_action(
    state: AppState,
    caller: Caller,
    version: Microversion,
    host: &str,
    rule: &'static str,
) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize(rule)?;
    compute_service(&state, host).await?;
    Err(not_supported())
}

async fn reboot(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(host): Path<String>,
) -> ApiResult<Json<Value>> {
    power_action(state, caller, version, &host, "os_compute_api:os-hosts:reboot").await
}

async fn shutdown(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(host): Path<String>,
) -> ApiResult<Json<Value>> {
    power_action(state, caller, version, &host, "os_compute_api:os-hosts:shutdown").await
}

async fn startup(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(host): Path<String>,
) -> ApiResult<Json<Value>> {
    power_action(state, caller, version, &host, "os_compute_api:os-hosts:start").await
}
