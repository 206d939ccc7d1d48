//! `/v2.1/servers`, addresses and instance actions.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::CreateServer;
use netcache_domain::server::{NetworkRequest, NetworkRequests, Server};
use netcache_domain::{NetworkId, PortId};
use rand::Rng;
use rand::distr::Alphanumeric;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::server_query::ServerQuery;
use crate::wire::{self, CreateServerBody, NetworksField};
use crate::{AppState, Caller, flavors, images, schema};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers", get(list).post(create))
        .route("/v2.1/servers/detail", get(list_detail))
        .route("/v2.1/servers/{id}", get(show).delete(delete))
        .route("/v2.1/servers/{id}/ips", get(ips))
        .route("/v2.1/servers/{id}/ips/{network}", get(ips_of_network))
        .route("/v2.1/servers/{id}/os-instance-actions", get(actions))
        .route("/v2.1/servers/{id}/os-instance-actions/{request_id}", get(action))
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

/// One page of the servers the caller may list (its project's; every project's
/// with `all_tenants`, admins only — an admin without it sees its own project's,
/// as in Nova), filtered and sorted as asked: those after `marker` (400 if it is
/// not one of them, as in Nova), at most `limit`.
async fn page_of_servers(
    state: &AppState,
    caller: &Caller,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    rules: ListRules,
) -> ApiResult<(Vec<Server>, wire::Paging)> {
    caller.authorize(rules.list)?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let query = ServerQuery::parse(&pairs, caller.ctx.is_admin())?;
    let all_tenants = pairs
        .iter()
        .any(|(k, v)| k == "all_tenants" && !matches!(v.to_lowercase().as_str(), "0" | "false" | "off" | "no"));
    let project = if all_tenants {
        caller.authorize(rules.all_tenants)?;
        None
    } else {
        Some(caller.ctx.project_id.as_str())
    };
    let with_deleted = query.deleted || query.changes_since.is_some();
    let mut servers = Vec::new();
    for server in state.compute.servers(project, with_deleted).await? {
        let info = if query.needs_addresses() {
            Some(state.compute.network_info(server.id).await?)
        } else {
            None
        };
        if query.matches(&server, info.as_ref()) {
            servers.push(server);
        }
    }
    query.sort(&mut servers);
    let paging = query.paging;
    if let Some(marker) = &paging.marker {
        let position = servers
            .iter()
            .position(|s| s.id.to_string() == *marker)
            .ok_or_else(|| ApiError::BadRequest(format!("marker [{marker}] not found")))?;
        servers.drain(..=position);
    }
    if let Some(limit) = paging.limit {
        servers.truncate(limit);
    }
    Ok((servers, paging))
}

/// `{"servers": [...]}` plus Nova's `servers_links` when the page is full.
fn servers_page(base: &str, path: &str, views: Vec<Value>, paging: &wire::Paging) -> Value {
    let mut body = json!({});
    if let Some(links) = wire::next_links(base, path, paging.limit, &views) {
        body["servers_links"] = links;
    }
    body["servers"] = Value::Array(views);
    body
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let base = &state.config.public_url;
    let (servers, paging) = page_of_servers(&state, &caller, query, INDEX).await?;
    let views = servers.iter().map(|s| wire::server_summary(base, s)).collect();
    Ok(Json(servers_page(base, "servers", views, &paging)))
}

async fn list_detail(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let base = &state.config.public_url;
    let (servers, paging) = page_of_servers(&state, &caller, query, DETAIL).await?;
    let mut views = Vec::new();
    for server in servers {
        let info = state.compute.network_info(server.id).await?;
        views.push(wire::server_detail(base, &server, &info));
    }
    Ok(Json(servers_page(base, "servers/detail", views, &paging)))
}

async fn show(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = caller.server(&state, &id, "os_compute_api:servers:show").await?;
    let info = state.compute.network_info(server.id).await?;
    Ok(Json(
        json!({"server": wire::server_detail(&state.config.public_url, &server, &info)}),
    ))
}

async fn create(State(state): State<AppState>, caller: Caller, body: Bytes) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.authorize("os_compute_api:servers:create")?;
    let body: CreateServerBody = wire::parse_body(&body)?;
    let request = parse_create(body)?;
    let server = state.compute.create_server(&caller.ctx, request).await?;
    let password: String = rand::rng()
        .sample_iter(&Alphanumeric)
        .take(12)
        .map(char::from)
        .collect();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"server": wire::server_created(&state.config.public_url, &server, &password)})),
    ))
}

/// Nova's checks of a boot request, with its messages, in its order: the
/// schema (name, image id, flavor, metadata, access addresses, networks), an
/// image at all (only a boot from volume may go without, and netcache has no
/// volumes), the flavor, then the image.
fn parse_create(body: CreateServerBody) -> ApiResult<CreateServer> {
    let fields = body.server;
    let name = schema::name(fields.name.as_ref().ok_or_else(|| {
        ApiError::BadRequest("Invalid input for field/attribute server. Value: 'name' is a required property".into())
    })?)?;
    let image_ref = fields.image_ref.unwrap_or_default();
    if !image_ref.is_empty() && uuid::Uuid::try_parse(&image_ref).is_err() {
        return Err(schema::invalid(
            "imageRef",
            &Value::String(image_ref.clone()),
            &format!("'{image_ref}' is not valid under any of the given schemas"),
        ));
    }
    let flavor_ref = match fields.flavor_ref {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            return Err(ApiError::BadRequest(
                "Invalid input for field/attribute server. Value: 'flavorRef' is a required property".into(),
            ));
        }
    };
    let metadata = fields
        .metadata
        .as_ref()
        .map(|m| schema::metadata("metadata", m))
        .transpose()?
        .unwrap_or_default();
    let access_ip_v4 = fields.access_ip_v4.as_ref().map(schema::access_ip_v4).transpose()?;
    let access_ip_v6 = fields.access_ip_v6.as_ref().map(schema::access_ip_v6).transpose()?;
    let networks = match fields.networks {
        None => NetworkRequests::Auto,
        Some(NetworksField::Keyword(k)) if k == "auto" => NetworkRequests::Auto,
        Some(NetworksField::Keyword(k)) if k == "none" => NetworkRequests::None,
        Some(NetworksField::Keyword(k)) => {
            return Err(ApiError::BadRequest(format!(
                "Invalid input for field/attribute networks. Value: {k}"
            )));
        }
        Some(NetworksField::List(entries)) => {
            let mut requests = Vec::with_capacity(entries.len());
            for entry in entries {
                let tag = entry.tag;
                requests.push(match (entry.port, entry.uuid) {
                    (Some(port), _) => {
                        if entry.fixed_ip.is_some() {
                            return Err(ApiError::BadRequest("Cannot give both a port and a fixed IP.".into()));
                        }
                        NetworkRequest::Port {
                            port_id: PortId::from(parse_uuid(&port, "port")?),
                            tag,
                        }
                    }
                    (None, Some(uuid)) => NetworkRequest::Network {
                        network_id: Some(NetworkId::from(parse_uuid(&uuid, "network")?)),
                        fixed_ip: entry.fixed_ip.as_deref().map(wire::parse_ip).transpose()?,
                        tag,
                    },
                    (None, None) => {
                        return Err(ApiError::BadRequest(
                            "Bad networks format: each network needs a 'uuid' or a 'port'".into(),
                        ));
                    }
                });
            }
            NetworkRequests::Explicit(requests)
        }
    };
    if image_ref.is_empty() {
        return Err(ApiError::BadRequest("Missing imageRef attribute".into()));
    }
    // Nova takes the id from a flavor's URL too.
    let flavor_id = flavor_ref.rsplit('/').next().unwrap_or_default();
    if flavors::find(flavor_id).is_none() {
        return Err(ApiError::BadRequest(format!("Flavor {flavor_id} could not be found.")));
    }
    if images::find(&image_ref).is_none() {
        return Err(ApiError::BadRequest("Can not find requested image".into()));
    }
    Ok(CreateServer {
        name,
        flavor_ref: flavor_id.to_owned(),
        image_ref,
        metadata,
        access_ip_v4,
        access_ip_v6,
        networks,
        key_name: fields.key_name,
    })
}

/// Neutron ids are UUIDs; anything else is a 400 before Neutron is asked.
pub(crate) fn parse_uuid(text: &str, what: &str) -> ApiResult<String> {
    uuid::Uuid::parse_str(text)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            ApiError::BadRequest(format!(
                "Bad networks format: {what} uuid is not in proper format ({text})"
            ))
        })
}

async fn delete(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let server = caller.server(&state, &id, "os_compute_api:servers:delete").await?;
    state.compute.delete_server(&caller.ctx, server.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn ips(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = caller.server(&state, &id, "os_compute_api:ips:index").await?;
    let info = state.compute.network_info(server.id).await?;
    Ok(Json(json!({"addresses": wire::addresses(&server, &info, false)})))
}

async fn ips_of_network(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, network)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let server = caller.server(&state, &id, "os_compute_api:ips:show").await?;
    let info = state.compute.network_info(server.id).await?;
    let mut addresses = wire::addresses(&server, &info, false);
    let list = addresses
        .remove(&network)
        .ok_or_else(|| ApiError::NotFound("Instance is not a member of specified network".into()))?;
    Ok(Json(json!({ network: list })))
}

async fn actions(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-instance-actions:list")
        .await?;
    let actions = state.compute.actions(server.id).await?;
    Ok(Json(
        json!({"instanceActions": actions.iter().map(|a| wire::action_view(a, false)).collect::<Vec<_>>()}),
    ))
}

async fn action(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, request_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-instance-actions:show")
        .await?;
    let actions = state.compute.actions(server.id).await?;
    let action = actions
        .iter()
        .find(|a| a.request_id == request_id)
        .ok_or_else(|| ApiError::NotFound(format!("Action {request_id} could not be found.")))?;
    Ok(Json(json!({"instanceAction": wire::action_view(action, true)})))
}
