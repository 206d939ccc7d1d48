//! `PUT /v2.1/servers/{id}`: a server's name and access addresses (Nova's
//! update at 2.1), its description (2.19), hostname (2.90) and pinned zone
//! (2.104: unpinned, or pinned to the zone it is in), a
//! compare-and-swap on the server row through Compute; answered with the basic
//! view, or from 2.75 the whole server as `GET` shows it.

use axum::body::Bytes;
use axum::extract::Path;
use axum::routing::put;
use axum::{Json, Router};
use netcache_compute::ServerEdit;
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{AppState, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}", put(update))
}

/// Nova checks the body first (400 before 404), then the caller and the server.
/// A rename is allowed in any state, a build's included: the build's own writes
/// keep it (see `Server::keeping_user_edits_of`).
async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let edit = parse_update(&wire::parse_body(&body)?, version)?;
    let server = caller.server(&state, &id, "os_compute_api:servers:update").await?;
    let server = state.servers().edit_server(&caller.ctx, server.id, &edit).await?;
    let view = crate::server_answer::server_answer(&state, &caller, version, &server).await?;
    Ok(Json(json!({ "server": view })))
}

/// Nova's `base_update` schema: `{"server": {name?, OS-DCF:diskConfig?,
/// accessIPv4?, accessIPv6?}}` and nothing else.
fn parse_update(body: &Value, version: Microversion) -> ApiResult<ServerEdit> {
    let top = schema::object(None, body, &["server"], &["server"])?;
    let mut allowed = vec!["name", "OS-DCF:diskConfig", "accessIPv4", "accessIPv6"];
    if version.at_least(19) {
        allowed.push("description");
    }
    if version.at_least(90) {
        allowed.push("hostname");
    }
    if version.at_least(104) {
        allowed.push("pinned_availability_zone");
    }
    let fields = schema::object(Some("server"), &top["server"], &allowed, &[])?;
    let auto_disk_config = fields.get("OS-DCF:diskConfig").map(schema::disk_config).transpose()?;
    Ok(ServerEdit::Update {
        auto_disk_config,
        name: fields.get("name").map(schema::name).transpose()?,
        access_ip_v4: fields.get("accessIPv4").map(schema::access_ip_v4).transpose()?,
        access_ip_v6: fields.get("accessIPv6").map(schema::access_ip_v6).transpose()?,
        description: fields.get("description").map(schema::description).transpose()?,
        hostname: fields
            .get("hostname")
            .map(|h| schema::hostname(h, version.at_least(94)))
            .transpose()?,
        pinned_availability_zone: fields
            .get("pinned_availability_zone")
            .map(|zone| match zone {
                Value::Null => Ok(None),
                zone => schema::name_of("pinned_availability_zone", zone).map(Some),
            })
            .transpose()?,
    })
}
