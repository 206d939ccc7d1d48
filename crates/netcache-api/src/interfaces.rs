//! `/v2.1/servers/{id}/os-interface`: from netcache's VIF records, so a ghost port
//! never appears here (unlike Nova, which lists Neutron ports by device_id).
//! An attach takes a device `tag` from 2.49 (kept on the VIF record), the
//! views show it from 2.70, and from 2.102 list and show refuse any query parameter.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::{AttachRequest, Interface};
use netcache_domain::{NetworkId, PortId};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::{NovaRead, NovaRequest};
use crate::schema;
use crate::wire::{self, AttachBody};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers/{id}/os-interface", get(list).post(attach))
        .route("/v2.1/servers/{id}/os-interface/{port_id}", get(show).delete(detach))
}

/// Nova's view of `version`: the device `tag` (or null) from 2.70.
fn view(interface: &Interface, version: Microversion) -> Value {
    let mut view = wire::interface_view(interface);
    if version.at_least(70) {
        view["tag"] = json!(interface.vif.tag);
    }
    view
}

async fn list(NovaRead(NovaRequest { state, caller, version }, id): NovaRead<String>) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-attach-interfaces:list")
        .await?;
    let interfaces = state.attachments().interfaces(server.id).await?;
    let views: Vec<Value> = interfaces.iter().map(|i| view(i, version)).collect();
    Ok(Json(json!({"interfaceAttachments": views})))
}

async fn show(
    NovaRead(NovaRequest { state, caller, version }, (id, port_id)): NovaRead<(String, String)>,
) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-attach-interfaces:show")
        .await?;
    let interface = state.attachments().interface(server.id, &PortId::from(port_id)).await?;
    Ok(Json(json!({"interfaceAttachment": view(&interface, version)})))
}

async fn attach(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-attach-interfaces:create")
        .await?;
    let raw: Value = wire::parse_body(&body)?;
    if let Some(fields) = raw.get("interfaceAttachment").filter(|f| f.is_object()) {
        if version.at_least(49) {
            if let Some(tag) = fields.get("tag") {
                schema::device_tag(tag)?;
            }
        } else {
            schema::object(
                Some("interfaceAttachment"),
                fields,
                &["net_id", "port_id", "fixed_ips"],
                &[],
            )?;
        }
    }
    let body: AttachBody = wire::parse_body(&body)?;
    let fields = body.interface_attachment;
    let fixed_ip = match fields.fixed_ips.as_deref() {
        None => None,
        Some([one]) => Some(wire::parse_ip(&one.ip_address)?),
        Some(_) => {
            return Err(ApiError::BadRequest(
                "fixed_ips must hold exactly one IP address".into(),
            ));
        }
    };
    let request = match (fields.net_id, fields.port_id) {
        (Some(_), Some(_)) => {
            return Err(ApiError::BadRequest(
                "Must not input both network_id and port_id".into(),
            ));
        }
        (None, Some(port)) => {
            if fixed_ip.is_some() {
                return Err(ApiError::BadRequest(
                    "Must input network_id when request IP address".into(),
                ));
            }
            AttachRequest::Port {
                port_id: PortId::from(schema::neutron_uuid(&port, "port")?),
                tag: fields.tag,
            }
        }
        (net, None) => {
            if net.is_none() && fixed_ip.is_some() {
                return Err(ApiError::BadRequest(
                    "Must input network_id when request IP address".into(),
                ));
            }
            AttachRequest::Network {
                network_id: net
                    .map(|n| schema::neutron_uuid(&n, "network"))
                    .transpose()?
                    .map(NetworkId::from),
                fixed_ip,
                tag: fields.tag,
            }
        }
    };
    let interface = state
        .attachments()
        .attach_interface(&caller.ctx, server.id, request)
        .await?;
    Ok(Json(json!({"interfaceAttachment": view(&interface, version)})))
}

async fn detach(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, port_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-attach-interfaces:delete")
        .await?;
    state
        .attachments()
        .detach_interface(&caller.ctx, server.id, &PortId::from(port_id))
        .await?;
    Ok(StatusCode::ACCEPTED)
}
