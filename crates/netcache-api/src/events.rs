//! `POST /v2.1/os-server-external-events` (Nova's bodies and codes, and the
//! event names of each microversion: `volume-extended` from 2.51,
//! `power-update` from 2.76, `accelerator-request-bound` from 2.82,
//! `volume-reimaged` from 2.93) and netcache's own `GET /netcache/v1/audit`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use netcache_compute::{EVENT_NAMES, ExternalEvent};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{AppState, Caller, wire};

/// The event names Nova's schema of `version` allows, in its order.
fn event_names(version: Microversion) -> Vec<&'static str> {
    let mut names = EVENT_NAMES.to_vec();
    for (minor, name) in [
        (51, "volume-extended"),
        (76, "power-update"),
        (82, "accelerator-request-bound"),
        (93, "volume-reimaged"),
    ] {
        if version.at_least(minor) {
            names.push(name);
        }
    }
    names
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-server-external-events", post(create))
        .route("/netcache/v1/audit", get(audit))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsBody {
    events: Vec<EventBody>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventBody {
    name: String,
    server_uuid: String,
    status: Option<String>,
    tag: Option<String>,
}

/// Nova's schema of `version`: at least one event, known names and statuses, tags ≤ 255.
fn validate(body: &EventsBody, version: Microversion) -> ApiResult<()> {
    let names = event_names(version);
    if body.events.is_empty() {
        return Err(ApiError::BadRequest(
            "Invalid input for field/attribute events. Value: []. [] is too short".into(),
        ));
    }
    for event in &body.events {
        if !names.contains(&event.name.as_str()) {
            let listed = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
            return Err(ApiError::BadRequest(format!(
                "Invalid input for field/attribute name. Value: {}. '{}' is not one of [{listed}]",
                event.name, event.name
            )));
        }
        if let Some(status) = &event.status
            && !["failed", "completed", "in-progress"].contains(&status.as_str())
        {
            return Err(ApiError::BadRequest(format!(
                "Invalid input for field/attribute status. Value: {status}."
            )));
        }
        if event.tag.as_ref().is_some_and(|t| t.len() > 255) {
            return Err(ApiError::BadRequest(
                "Invalid input for field/attribute tag: longer than 255".into(),
            ));
        }
    }
    Ok(())
}

async fn create(
    NovaRequest { state, caller, version }: NovaRequest,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let body: EventsBody = wire::parse_body(&body)?;
    validate(&body, version)?;
    caller.authorize("os_compute_api:os-server-external-events:create")?;
    let mut results = Vec::with_capacity(body.events.len());
    let mut all_accepted = true;
    for event in body.events {
        let code = state
            .attachments()
            .external_event(&ExternalEvent {
                name: event.name.clone(),
                server_uuid: event.server_uuid.clone(),
                tag: event.tag.clone(),
            })
            .await?
            .http();
        all_accepted &= code == 200;
        let mut echoed = json!({"name": event.name, "server_uuid": event.server_uuid, "code": code,
            "status": if code == 200 { event.status.as_deref().unwrap_or("completed") } else { "failed" }});
        if let Some(tag) = event.tag {
            echoed["tag"] = json!(tag);
        }
        results.push(echoed);
    }
    let status = if all_accepted {
        StatusCode::OK
    } else {
        StatusCode::MULTI_STATUS
    };
    Ok((status, Json(json!({"events": results}))))
}

async fn audit(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.authorize("netcache:audit")?;
    let report = state.attachments().audit(&|_, _| {}).await?;
    Ok(Json(wire::audit_view(&report)))
}
