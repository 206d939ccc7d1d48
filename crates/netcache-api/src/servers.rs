//! `/v2.1/servers` (lists, show, delete; a boot is `server_create`), addresses
//! and instance actions.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::ServerId;
use netcache_domain::network_info::CacheAddresses;
use netcache_domain::server::Server;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::server_query::ServerQuery;
use crate::server_view::{Addresses, DetailPage, ServerDetail, ViewOptions};
use crate::wire;
use crate::{AppState, Caller, server_create};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers", get(list).post(server_create::create))
        .route("/v2.1/servers/detail", get(list_detail))
        .route("/v2.1/servers/{id}", get(show).delete(delete))
        .route("/v2.1/servers/{id}/ips", get(ips))
        .route("/v2.1/servers/{id}/ips/{network}", get(ips_of_network))
}

/// The policy rules of a server list: listing, and listing every project's.
#[derive(Clone, Copy)]
struct ListRules {
    list: &'static str,
    all_tenants: &'static str,
}

const INDEX: ListRules = ListRules {
    list: "os_compute_api:servers:index",
    all_tenants: "os_compute_api:servers:index:get_all_tenants",
};

const DETAIL: ListRules = ListRules {
    list: "os_compute_api:servers:detail",
    all_tenants: "os_compute_api:servers:detail:get_all_tenants",
};

/// One page of the servers the caller may list (its project's; every project's,
/// or the one its `tenant_id` names, with `all_tenants`, admins only — an admin
/// without it sees its own project's, as in Nova), filtered and sorted as
/// asked: those after `marker`, at most `limit` (at most, and by default,
/// `max_limit`).
async fn page_of_servers(
    state: &AppState,
    caller: &Caller,
    query: RawQuery,
    rules: ListRules,
    version: Microversion,
) -> ApiResult<(Vec<Server>, wire::Paging)> {
    caller.authorize(rules.list)?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let query = ServerQuery::parse(&pairs, caller.ctx.is_admin(), state.config.max_limit, version)?;
    let all_tenants = pairs
        .iter()
        .any(|(k, v)| k == "all_tenants" && !matches!(v.to_lowercase().as_str(), "0" | "false" | "off" | "no"));
    // Nova's `_get_servers`: an admin's `tenant_id`/`project_id` narrows an
    // all_tenants list (and is dropped without one).
    let (visible, project) = if all_tenants {
        caller.authorize(rules.all_tenants)?;
        (None, query.project.as_deref())
    } else {
        let own = Some(caller.ctx.project_id.as_str());
        (own, own)
    };
    let after = marker(state, visible, &query).await?;
    let servers = filtered_page(state, project, after, &query).await?;
    Ok((servers, query.paging))
}

/// The marker's server: any the caller can see, wherever the filters would
/// place it (Nova looks it up by id, filters aside); 400 if there is none.
async fn marker(state: &AppState, visible: Option<&str>, query: &ServerQuery) -> ApiResult<Option<Server>> {
    let Some(marker) = &query.paging.marker else {
        return Ok(None);
    };
    let not_found = || ApiError::BadRequest(format!("marker [{marker}] not found"));
    let id = marker.parse().map_err(|_| not_found())?;
    let server = match state.servers().server(id).await {
        Err(netcache_compute::Error::ServerNotFound(_)) => return Err(not_found()),
        other => other?,
    };
    if visible.is_some_and(|p| server.project_id.as_str() != p) {
        return Err(not_found());
    }
    Ok(Some(server))
}

/// Keyset pages from the store in the query's order, after `after`, filtered
/// here until this page is full, so a request reads about one page of rows
/// whatever the number of servers and whatever the order.
async fn filtered_page(
    state: &AppState,
    project: Option<&str>,
    mut after: Option<Server>,
    query: &ServerQuery,
) -> ApiResult<Vec<Server>> {
    let limit = query.paging.limit.unwrap_or(state.config.max_limit);
    let mut page = Vec::new();
    while page.len() < limit {
        let chunk = state
            .servers()
            .servers_page(project, query.with_deleted(), query.order(), after.as_ref(), limit)
            .await?;
        let exhausted = chunk.len() < limit;
        let infos = infos_to_filter(state, query, &chunk).await?;
        after = chunk.last().cloned();
        page.extend(
            chunk
                .into_iter()
                .filter(|s| query.matches(s, infos.get(&s.id)))
                .take(limit - page.len()),
        );
        if exhausted {
            break;
        }
    }
    Ok(page)
}

/// The network infos of `servers` if the query filters by address; else none.
async fn infos_to_filter(
    state: &AppState,
    query: &ServerQuery,
    servers: &[Server],
) -> ApiResult<HashMap<ServerId, CacheAddresses>> {
    if !query.needs_addresses() {
        return Ok(HashMap::new());
    }
    let ids: Vec<_> = servers.iter().map(|s| s.id).collect();
    Ok(state.servers().addresses_of(&ids).await?)
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    let base = &state.config.public_url;
    let (servers, paging) = page_of_servers(&state, &caller, query, INDEX, version).await?;
    let views = servers.iter().map(|s| wire::server_summary(base, s)).collect();
    Ok(Json(wire::page("servers", base, "servers", views, paging.limit)))
}

async fn list_detail(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Response> {
    let base = &state.config.public_url;
    // Never closed, so always a turn: held until the body is serialized.
    let _turn = state.config.detail_pages.acquire().await;
    let (servers, paging) = page_of_servers(&state, &caller, query, DETAIL, version).await?;
    let ids: Vec<_> = servers.iter().map(|s| s.id).collect();
    // Two reads on two pooled connections, so their decoding runs side by side.
    let (groups, infos) = tokio::try_join!(
        state.attachments().security_groups_of(&ids),
        state.servers().addresses_of(&ids)
    )?;
    let (no_info, no_groups) = (CacheAddresses::default(), Vec::new());
    let options = ViewOptions::of(&caller, version);
    let views = servers
        .iter()
        .map(|server| {
            let info = infos.get(&server.id).unwrap_or(&no_info);
            let names = groups.get(&server.id).unwrap_or(&no_groups);
            ServerDetail::new(base, server, info, names, options)
        })
        .collect();
    Ok(Json(DetailPage::new(base, views, paging.limit)).into_response())
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = caller.server(&state, &id, "os_compute_api:servers:show").await?;
    let shown = crate::server_answer::shown(&state, &caller, version, &server).await?;
    Ok(Json(json!({ "server": shown })))
}

async fn delete(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let server = caller.server(&state, &id, "os_compute_api:servers:delete").await?;
    state.servers().delete_server(&caller.ctx, server.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn ips(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = caller.server(&state, &id, "os_compute_api:ips:index").await?;
    let info = state.servers().addresses(server.id).await?;
    Ok(Json(json!({"addresses": Addresses::of(&server, &info, false)})))
}

async fn ips_of_network(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, network)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let server = caller.server(&state, &id, "os_compute_api:ips:show").await?;
    let info = state.servers().addresses(server.id).await?;
    let list = Addresses::of(&server, &info, false)
        .of_network(&network)
        .ok_or_else(|| ApiError::NotFound("Instance is not a member of specified network".into()))?;
    Ok(Json(json!({ network: list })))
}
