//! `POST /v2.1/os-server-external-events` (Nova's bodies and codes) and
//! netcache's own `GET /netcache/v1/audit`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use netcache_compute::{EVENT_NAMES, ExternalEvent};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::{AppState, Caller, wire};

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

/// Nova's schema: at least one event, known names and statuses, tags ≤ 255.
fn validate(body: &EventsBody) -> ApiResult<()> {
    if body.events.is_empty() {
        return Err(ApiError::BadRequest(
            "Invalid input for field/attribute events. Value: []. [] is too short".into(),
        ));
    }
    for event in &body.events {
        if !EVENT_NAMES.contains(&event.name.as_str()) {
            return Err(ApiError::BadRequest(format!(
                "Invalid input for field/attribute name. Value: {}. '{}' is not one of {EVENT_NAMES:?}",
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

async fn create(State(state): State<AppState>, caller: Caller, body: Bytes) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.authorize("os_compute_api:os-server-external-events:create")?;
    let body: EventsBody = wire::parse_body(&body)?;
    validate(&body)?;
    let mut results = Vec::with_capacity(body.events.len());
    let mut all_accepted = true;
    for event in body.events {
        let code = state
            .compute
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
    let report = state.compute.audit(&|_, _| {}).await?;
    Ok(Json(wire::audit_view(&report)))
}
