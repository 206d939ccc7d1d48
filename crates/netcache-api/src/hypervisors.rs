//! `/v2.1/os-hypervisors` (admin): one fake hypervisor per host, named by it,
//! its id its `nova-compute` service's (integer before 2.53, uuid from it),
//! up/down and enabled/disabled as that service; a host whose service was
//! deleted has none (Nova skips a compute node without a service). The list,
//! `detail`, one by id, with `with_servers` and `hypervisor_hostname_pattern`
//! (a substring, as Nova matches it) from 2.53, and `statistics` before 2.88.
//! Before 2.88 a detail shows the host's figures: capacity fixed
//! (`service::HOST_*`), usage from its live servers' flavors. Before 2.53 the
//! pattern search and a host's servers have routes of their own; `uptime`
//! (before 2.88) is what Nova's fake driver answers: 501.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::StoredService;
use netcache_domain::flavor::FlavorSnapshot;
use netcache_domain::service::{HOST_LOCAL_GB, HOST_MEMORY_MB, HOST_VCPUS, HostUsage};
use netcache_domain::{HostName, ProjectId, ServerId};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::services::{last_value, service_view};
use crate::{AppState, Caller, schema};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-hypervisors", get(list))
        .route("/v2.1/os-hypervisors/detail", get(detail))
        .route("/v2.1/os-hypervisors/statistics", get(statistics))
        .route("/v2.1/os-hypervisors/{id}", get(show))
        .route("/v2.1/os-hypervisors/{id}/uptime", get(uptime))
        .route("/v2.1/os-hypervisors/{id}/search", get(search))
        .route("/v2.1/os-hypervisors/{id}/servers", get(servers))
}

/// The fake driver's version, as Nova's fake driver reports it.
const HYPERVISOR_VERSION: u64 = 1000;

/// One host's hypervisor: its service, usage and (if asked) servers.
struct Hypervisor {
    service: StoredService,
    usage: HostUsage,
    servers: Option<Vec<(ServerId, String)>>,
}

impl Hypervisor {
    fn view(&self, detail: bool, version: Microversion) -> Value {
        let service = &self.service.service;
        let id = if version.at_least(53) {
            json!(service.uuid)
        } else {
            json!(service.id)
        };
        let basic = service_view(&self.service, "", version);
        let mut view = json!({
            "id": id,
            "hypervisor_hostname": service.host.as_str(),
            "state": basic["state"],
            "status": basic["status"],
        });
        if detail {
            view["hypervisor_type"] = json!("fake");
            view["hypervisor_version"] = json!(HYPERVISOR_VERSION);
            view["host_ip"] = Value::Null;
            view["service"] =
                json!({"id": id, "host": service.host.as_str(), "disabled_reason": service.disabled_reason});
            if version.at_least(88) {
                view["uptime"] = Value::Null;
            } else {
                let figures = figures(&self.usage);
                view.as_object_mut()
                    .expect("an object")
                    .extend(figures.as_object().expect("an object").clone());
                view["cpu_info"] = if version.at_least(28) { json!({}) } else { json!("") };
            }
        }
        if let Some(servers) = &self.servers {
            let servers: Vec<Value> = servers
                .iter()
                .map(|(id, name)| json!({"uuid": id.to_string(), "name": name}))
                .collect();
            // Nova leaves an empty list out before 2.75.
            if !servers.is_empty() || version.at_least(75) {
                view["servers"] = json!(servers);
            }
        }
        view
    }
}

/// Nova's statistics fields of one host (or, summed, of all).
fn figures(usage: &HostUsage) -> Value {
    json!({
        "vcpus": HOST_VCPUS,
        "memory_mb": HOST_MEMORY_MB,
        "local_gb": HOST_LOCAL_GB,
        "vcpus_used": usage.vcpus,
        "memory_mb_used": usage.memory_mb,
        "local_gb_used": usage.local_gb,
        "free_ram_mb": HOST_MEMORY_MB.saturating_sub(usage.memory_mb),
        "free_disk_gb": HOST_LOCAL_GB.saturating_sub(usage.local_gb),
        "current_workload": 0,
        "running_vms": usage.running_vms,
        "disk_available_least": HOST_LOCAL_GB.saturating_sub(usage.local_gb),
    })
}

/// The flavor a server count is of, stored or built in (`None`: no longer known).
pub(crate) async fn flavor_snapshot(state: &AppState, flavor_ref: &str) -> Option<FlavorSnapshot> {
    match state.compute.store().flavor(flavor_ref).await {
        Ok(Some(flavor)) => Some(flavor.snapshot()),
        _ => netcache_domain::flavor::built_in_snapshot(flavor_ref),
    }
}

/// How many live servers of one flavor a project has on a host, with that
/// flavor: what a host's usage (`os-hosts`, `os-hypervisors`) is summed from.
pub(crate) struct CountedServers {
    pub host: HostName,
    pub project_id: ProjectId,
    flavor: Option<FlavorSnapshot>,
    servers: u64,
}

impl CountedServers {
    /// Adds these servers to `usage`.
    pub fn add_to(&self, usage: &mut HostUsage) {
        usage.add(self.flavor.as_ref(), self.servers);
    }
}

/// The live servers of every host (or of `only` that one), counted by
/// project and flavor; flavors are read for the counts kept alone.
pub(crate) async fn server_counts(state: &AppState, only: Option<&str>) -> ApiResult<Vec<CountedServers>> {
    let mut counts = Vec::new();
    for count in state
        .compute
        .store()
        .server_counts_by_host()
        .await
        .map_err(netcache_compute::Error::from)?
        .into_iter()
        .filter(|c| only.is_none_or(|host| c.host.as_str() == host))
    {
        counts.push(CountedServers {
            flavor: flavor_snapshot(state, &count.flavor_ref).await,
            servers: u64::try_from(count.servers).unwrap_or_default(),
            host: count.host,
            project_id: count.project_id,
        });
    }
    Ok(counts)
}

/// Every host's hypervisor, by service id; with each one's servers if asked.
async fn hypervisors(state: &AppState, with_servers: bool) -> ApiResult<Vec<Hypervisor>> {
    let compute = &state.compute;
    let mut usage: HashMap<HostName, HostUsage> = HashMap::new();
    for count in server_counts(state, None).await? {
        count.add_to(usage.entry(count.host.clone()).or_default());
    }
    let mut found = Vec::new();
    for service in state.services().services().await? {
        let servers = if with_servers {
            let host = &service.service.host;
            Some(
                compute
                    .store()
                    .servers_on_host(host)
                    .await
                    .map_err(netcache_compute::Error::from)?,
            )
        } else {
            None
        };
        found.push(Hypervisor {
            usage: usage.get(&service.service.host).copied().unwrap_or_default(),
            service,
            servers,
        });
    }
    Ok(found)
}

/// 2.53's `hypervisor_hostname_pattern` and `with_servers`; ignored before.
fn list_query(query: RawQuery, version: Microversion) -> ApiResult<(Option<String>, bool)> {
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    if !version.at_least(53) {
        return Ok((None, false));
    }
    let last = |key: &str| last_value(&pairs, key);
    let with_servers = last("with_servers")
        .map(|v| schema::boolean("with_servers", &json!(v)))
        .transpose()?
        .unwrap_or(false);
    let pattern = last("hypervisor_hostname_pattern").map(str::to_owned);
    if pattern.is_some() && (last("limit").is_some() || last("marker").is_some()) {
        return Err(ApiError::BadRequest(
            "Paging over hypervisors with the hypervisor_hostname_pattern query parameter is not supported.".into(),
        ));
    }
    Ok((pattern, with_servers))
}

async fn listed(state: &AppState, version: Microversion, query: RawQuery, detail: bool) -> ApiResult<Json<Value>> {
    let (pattern, with_servers) = list_query(query, version)?;
    let mut found = hypervisors(state, with_servers).await?;
    if let Some(pattern) = &pattern {
        found = matching(found, pattern)?;
    }
    let views: Vec<Value> = found.iter().map(|h| h.view(detail, version)).collect();
    Ok(Json(json!({"hypervisors": views})))
}

/// The hypervisors whose host name contains `pattern` (Nova's SQL `LIKE
/// '%pattern%'`); Nova's 404 when none does.
fn matching(found: Vec<Hypervisor>, pattern: &str) -> ApiResult<Vec<Hypervisor>> {
    let found: Vec<Hypervisor> = found
        .into_iter()
        .filter(|h| h.service.service.host.as_str().contains(pattern))
        .collect();
    if found.is_empty() {
        return Err(ApiError::NotFound(format!(
            "No hypervisor matching '{pattern}' could be found."
        )));
    }
    Ok(found)
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-hypervisors:list")?;
    listed(&state, version, query, false).await
}

async fn detail(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-hypervisors:list-detail")?;
    listed(&state, version, query, true).await
}

async fn show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-hypervisors:show")?;
    let (_, with_servers) = list_query(query, version)?;
    let hypervisor = by_id(&state, &id, version, with_servers).await?;
    Ok(Json(json!({"hypervisor": hypervisor.view(true, version)})))
}

/// The hypervisor `id` names: its service's integer id before 2.53, its uuid
/// from 2.53 (anything else there is Nova's 400).
async fn by_id(state: &AppState, id: &str, version: Microversion, with_servers: bool) -> ApiResult<Hypervisor> {
    let not_found = || ApiError::NotFound(format!("Hypervisor with ID '{id}' could not be found."));
    let (by_uuid, by_int) = if version.at_least(53) {
        let uuid = uuid::Uuid::parse_str(id).map_err(|_| ApiError::BadRequest(format!("Invalid uuid {id}")))?;
        (Some(uuid), None)
    } else {
        (None, Some(id.parse::<i64>().map_err(|_| not_found())?))
    };
    hypervisors(state, with_servers)
        .await?
        .into_iter()
        .find(|h| by_uuid.map_or(Some(h.service.service.id) == by_int, |u| h.service.service.uuid == u))
        .ok_or_else(not_found)
}

/// One hypervisor's uptime (before 2.88): the fake virt driver has none to
/// give, and Nova with that driver answers 501 once the hypervisor is found.
async fn uptime(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    version.served_until(87)?;
    caller.authorize("os_compute_api:os-hypervisors:uptime")?;
    by_id(&state, &id, version, false).await?;
    Err(ApiError::NotImplemented("Feature not supported".into()))
}

/// Before 2.53: the hypervisors whose host name contains the pattern.
async fn search(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(pattern): Path<String>,
) -> ApiResult<Json<Value>> {
    by_pattern(&state, &caller, version, &pattern, false).await
}

/// Before 2.53: the matching hypervisors, each with its servers.
async fn servers(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(pattern): Path<String>,
) -> ApiResult<Json<Value>> {
    by_pattern(&state, &caller, version, &pattern, true).await
}

async fn by_pattern(
    state: &AppState,
    caller: &Caller,
    version: Microversion,
    pattern: &str,
    with_servers: bool,
) -> ApiResult<Json<Value>> {
    version.served_until(52)?;
    caller.authorize(if with_servers {
        "os_compute_api:os-hypervisors:servers"
    } else {
        "os_compute_api:os-hypervisors:search"
    })?;
    let found = matching(hypervisors(state, with_servers).await?, pattern)?;
    let views: Vec<Value> = found.iter().map(|h| h.view(false, version)).collect();
    Ok(Json(json!({"hypervisors": views})))
}

/// Every host's figures summed (gone at 2.88: Nova's 404).
async fn statistics(NovaRequest { state, caller, version }: NovaRequest) -> ApiResult<Json<Value>> {
    version.served_until(87)?;
    caller.authorize("os_compute_api:os-hypervisors:statistics")?;
    let found = hypervisors(&state, false).await?;
    let mut totals = json!({"count": found.len()});
    for hypervisor in &found {
        for (key, value) in figures(&hypervisor.usage).as_object().expect("an object") {
            let sum = totals[key].as_u64().unwrap_or_default() + value.as_u64().unwrap_or_default();
            totals[key] = json!(sum);
        }
    }
    Ok(Json(json!({"hypervisor_statistics": totals})))
}
