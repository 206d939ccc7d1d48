//! `PUT /v2.1/servers/{id}`: a server's name and access addresses (Nova's
//! update at 2.1), a compare-and-swap on the server row through Compute.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::put;
use axum::{Json, Router};
use netcache_compute::ServerEdit;
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::{AppState, Caller, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}", put(update))
}

/// What the detail view adds to Nova's basic server view, which is what an
/// update answers below microversion 2.75.
const DETAIL_ONLY: &[&str] = &[
    "key_name",
    "security_groups",
    "config_drive",
    "OS-EXT-AZ:availability_zone",
    "OS-SRV-USG:launched_at",
    "OS-SRV-USG:terminated_at",
    "OS-EXT-STS:task_state",
    "OS-EXT-STS:vm_state",
    "OS-EXT-STS:power_state",
    "OS-EXT-SRV-ATTR:host",
    "OS-EXT-SRV-ATTR:hypervisor_hostname",
    "OS-EXT-SRV-ATTR:instance_name",
    "os-extended-volumes:volumes_attached",
];

/// Nova checks the body first (400 before 404), then the caller and the server.
/// A rename is allowed in any state, a build's included: the build's own writes
/// keep it (see `Server::keeping_user_edits_of`).
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let edit = parse_update(&wire::parse_body(&body)?)?;
    let server = caller.server(&state, &id, "os_compute_api:servers:update").await?;
    let server = state.compute.edit_server(&caller.ctx, server.id, &edit).await?;
    let info = state.compute.network_info(server.id).await?;
    // Without the detail view's groups: no Neutron look-up for them.
    let mut view = wire::server_detail(&state.config.public_url, &server, &info, &[]);
    if let Value::Object(fields) = &mut view {
        fields.retain(|key, _| !DETAIL_ONLY.contains(&key.as_str()));
    }
    view["addresses"] = Value::Object(wire::addresses(&server, &info, false));
    Ok(Json(json!({ "server": view })))
}

/// Nova's `base_update` schema: `{"server": {name?, OS-DCF:diskConfig?,
/// accessIPv4?, accessIPv6?}}` and nothing else. netcache's disk config is
/// always `MANUAL`: a valid `OS-DCF:diskConfig` is accepted and changes nothing.
fn parse_update(body: &Value) -> ApiResult<ServerEdit> {
    let top = schema::object(None, body, &["server"], &["server"])?;
    let fields = schema::object(
        Some("server"),
        &top["server"],
        &["name", "OS-DCF:diskConfig", "accessIPv4", "accessIPv6"],
        &[],
    )?;
    if let Some(disk_config) = fields.get("OS-DCF:diskConfig")
        && !matches!(disk_config.as_str(), Some("AUTO" | "MANUAL"))
    {
        return Err(schema::invalid(
            "OS-DCF:diskConfig",
            disk_config,
            &format!("{} is not one of ['AUTO', 'MANUAL']", schema::python_repr(disk_config)),
        ));
    }
    Ok(ServerEdit::Update {
        name: fields.get("name").map(schema::name).transpose()?,
        access_ip_v4: fields.get("accessIPv4").map(schema::access_ip_v4).transpose()?,
        access_ip_v6: fields.get("accessIPv6").map(schema::access_ip_v6).transpose()?,
    })
}
