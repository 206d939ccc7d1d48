//! `/v2.1/os-services` (admin): each host's `nova-compute` service — up while
//! its process's heartbeat is live, enabled or disabled, forced down (2.11) —
//! filtered by `host` and `binary`; before 2.53 changed by host and binary
//! (`PUT /os-services/{enable,disable,disable-log-reason,force-down}`) with
//! integer ids, from 2.53 by uuid (`PUT /os-services/{uuid}`); deleted by id,
//! never while its host has servers (Nova's 409). netcache registers no
//! scheduler or conductor: they run inside each process, and an admin could
//! neither disable nor delete them to any effect.

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use netcache_compute::{ServiceKey, StoredService};
use netcache_domain::service::{COMPUTE_BINARY, ServiceUpdate, Status};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::{AppState, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-services", get(list))
        .route("/v2.1/os-services/{id}", put(update).delete(delete))
}

/// A service as Nova's `_get_service_detail` shows it at `version`.
#[must_use]
pub fn service_view(stored: &StoredService, zone: &str, version: Microversion) -> Value {
    let service = &stored.service;
    let id = if version.at_least(53) {
        json!(service.uuid)
    } else {
        json!(service.id)
    };
    let mut view = json!({
        "binary": service.binary,
        "host": service.host.as_str(),
        "id": id,
        "zone": zone,
        "status": if service.disabled { "disabled" } else { "enabled" },
        "state": if service.is_up(stored.heartbeat_live) { "up" } else { "down" },
        "updated_at": service.updated_at.map(wire::iso_micro),
        "disabled_reason": service.disabled_reason,
    });
    if version.at_least(11) {
        view["forced_down"] = json!(service.forced_down);
    }
    view
}

/// webob's `req.GET[key]`: the last value of `key` in the query.
pub(crate) fn last_value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-services:list")?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    if version.at_least(75) {
        let params: Map<String, Value> = pairs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        schema::object(None, &Value::Object(params), &["host", "binary"], &[])?;
    }
    // An empty value filters nothing.
    let filter = |key: &str| last_value(&pairs, key).filter(|v| !v.is_empty());
    let (host, binary) = (filter("host"), filter("binary"));
    let aggregates = state.aggregates().aggregates().await?;
    let zone = |s: &StoredService| {
        aggregates
            .zone_of(&s.service.host, &state.compute.config().availability_zone)
            .to_owned()
    };
    let services: Vec<Value> = state
        .services()
        .services()
        .await?
        .iter()
        .filter(|s| host.is_none_or(|h| s.service.host.as_str() == h))
        .filter(|s| binary.is_none_or(|b| s.service.binary == b))
        .map(|s| service_view(s, &zone(s), version))
        .collect();
    Ok(Json(json!({"services": services})))
}

async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-services:update")?;
    let body: Value = wire::parse_body(&body)?;
    if version.at_least(53) {
        let uuid = parse_uuid(&id)?;
        let update = parse_update_v253(&body)?;
        let stored = state
            .services()
            .update_service(&ServiceKey::Uuid(uuid), &update)
            .await?;
        let aggregates = state.aggregates().aggregates().await?;
        let zone = aggregates.zone_of(&stored.service.host, &state.compute.config().availability_zone);
        return Ok(Json(json!({"service": service_view(&stored, zone, version)})));
    }
    legacy_update(&state, version, &id, &body).await.map(Json)
}

/// Before 2.53: the action in the path, the service by `host` and `binary`.
async fn legacy_update(state: &AppState, version: Microversion, action: &str, body: &Value) -> ApiResult<Value> {
    let mut allowed = vec!["host", "binary", "disabled_reason"];
    if version.at_least(11) {
        allowed.push("forced_down");
    }
    let fields = schema::object(None, body, &allowed, &["host", "binary"])?;
    let host = schema::string("host", &fields["host"])?;
    if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) {
        let reason = format!(
            "{} does not match '^[a-zA-Z0-9-._]*$'",
            schema::python_repr(&fields["host"])
        );
        return Err(schema::invalid("host", &fields["host"], &reason));
    }
    let binary = bounded_string("binary", &fields["binary"])?;
    let reason = fields
        .get("disabled_reason")
        .map(|v| bounded_string("disabled_reason", v))
        .transpose()?;
    let forced_down = fields
        .get("forced_down")
        .map(|v| schema::boolean("forced_down", v))
        .transpose()?;
    let (update, answer) = match action {
        "enable" => (status(Status::Enabled, None), json!({"status": "enabled"})),
        "disable" => (status(Status::Disabled, None), json!({"status": "disabled"})),
        "disable-log-reason" => {
            let reason = reason.ok_or_else(|| ApiError::BadRequest("Missing disabled reason field".into()))?;
            (
                status(Status::Disabled, Some(reason)),
                json!({"status": "disabled", "disabled_reason": reason}),
            )
        }
        "force-down" if version.at_least(11) => {
            let forced_down = forced_down.ok_or_else(|| ApiError::BadRequest("Missing forced_down field".into()))?;
            let update = ServiceUpdate {
                forced_down: Some(forced_down),
                ..ServiceUpdate::default()
            };
            (update, json!({"forced_down": forced_down}))
        }
        _ => return Err(ApiError::NotFound("Unknown action".into())),
    };
    if binary != COMPUTE_BINARY {
        return Err(netcache_compute::Error::ServiceNotUpdatable(binary.to_owned()).into());
    }
    let key = ServiceKey::HostBinary {
        host: host.to_owned(),
        binary: binary.to_owned(),
    };
    state.services().update_service(&key, &update).await?;
    let mut service = json!({"host": host, "binary": binary});
    service
        .as_object_mut()
        .expect("an object")
        .extend(answer.as_object().expect("an object").clone());
    Ok(json!({"service": service}))
}

fn status(status: Status, reason: Option<&str>) -> ServiceUpdate {
    ServiceUpdate {
        status: Some(status),
        disabled_reason: reason.map(str::to_owned),
        forced_down: None,
    }
}

/// Nova's `update_v253` body.
fn parse_update_v253(body: &Value) -> ApiResult<ServiceUpdate> {
    let fields = schema::object(None, body, &["status", "disabled_reason", "forced_down"], &[])?;
    let status = fields
        .get("status")
        .map(|v| match v.as_str() {
            Some("enabled") => Ok(Status::Enabled),
            Some("disabled") => Ok(Status::Disabled),
            _ => Err(schema::invalid(
                "status",
                v,
                &format!("{} is not one of ['enabled', 'disabled']", schema::python_repr(v)),
            )),
        })
        .transpose()?;
    Ok(ServiceUpdate {
        status,
        disabled_reason: fields
            .get("disabled_reason")
            .map(|v| bounded_string("disabled_reason", v).map(str::to_owned))
            .transpose()?,
        forced_down: fields
            .get("forced_down")
            .map(|v| schema::boolean("forced_down", v))
            .transpose()?,
    })
}

/// A string of 1 to 255 characters (Nova's `binary` and `disabled_reason`).
fn bounded_string<'a>(field: &str, value: &'a Value) -> ApiResult<&'a str> {
    let text = schema::string(field, value)?;
    let length = text.chars().count();
    if length == 0 {
        return Err(schema::invalid(field, value, "'' should be non-empty"));
    }
    if length > 255 {
        let reason = format!("{} is too long", schema::python_repr(value));
        return Err(schema::invalid(field, value, &reason));
    }
    Ok(text)
}

fn parse_uuid(id: &str) -> ApiResult<uuid::Uuid> {
    uuid::Uuid::parse_str(id).map_err(|_| ApiError::BadRequest(format!("Invalid uuid {id}")))
}

async fn delete(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.authorize("os_compute_api:os-services:delete")?;
    let key = if version.at_least(53) {
        ServiceKey::Uuid(parse_uuid(&id)?)
    } else {
        let id: i64 = id
            .trim()
            .parse()
            .map_err(|_| ApiError::BadRequest("Invalid input received: id must be an integer".into()))?;
        ServiceKey::Id(id)
    };
    match state.services().delete_service(&key).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(netcache_compute::Error::ServiceNotFound(_)) => Err(ApiError::NotFound(format!("Service {id} not found."))),
        Err(e) => Err(e.into()),
    }
}
