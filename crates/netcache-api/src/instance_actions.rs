//! `/v2.1/servers/{id}/os-instance-actions`: a server's action log in Nova's
//! views of each microversion: 2.21 a deleted server's too (until purged),
//! 2.51 events for non-admins (without `traceback`), 2.58 `limit`/`marker`/
//! `changes-since` (unknown parameters refused), `updated_at` and `links`,
//! 2.62 events' `hostId` (and `host` for those the events rule admits), 2.66
//! `changes-before`, 2.84 events' `details` (policy `events:details`), 2.102
//! show refuses query parameters.

use axum::extract::Path;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::instance_action_view::{EventFields, action_view, event_view, updated_at};
use crate::query_params::{QueryParams, RawQuery, invalid_query};
use crate::request::{NovaRead, NovaRequest};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers/{id}/os-instance-actions", get(list))
        .route("/v2.1/servers/{id}/os-instance-actions/{request_id}", get(show))
}

/// Nova's `date-time` query value.
fn query_time(key: &str, value: &str) -> ApiResult<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|t| t.and_utc())
        .map_err(|_| invalid_query(key, value, &format!("'{value}' is not a 'date-time'")))
}

async fn list(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let query = QueryParams::read(query)?;
    if version.at_least(66) {
        query.only(&["limit", "marker", "changes-since", "changes-before"])?;
    } else if version.at_least(58) {
        query.only(&["limit", "marker", "changes-since"])?;
    }
    let server = caller
        .server_read_deleted(
            &state,
            &id,
            "os_compute_api:os-instance-actions:list",
            version.at_least(21),
        )
        .await?;
    let mut actions = state.servers().actions(server.id).await?;
    if !version.at_least(58) {
        let views: Vec<Value> = actions.iter().map(|a| action_view(a, version)).collect();
        return Ok(Json(json!({"instanceActions": views})));
    }
    let since = query
        .last("changes-since")
        .map(|v| query_time("changes-since", v))
        .transpose()?;
    let before = query
        .last("changes-before")
        .map(|v| query_time("changes-before", v))
        .transpose()?;
    if let (Some(since), Some(before)) = (since, before)
        && before < since
    {
        return Err(ApiError::BadRequest(
            "The value of changes-since must be less than or equal to changes-before.".into(),
        ));
    }
    let (limit, marker) = query.limit_and_marker(state.config.max_limit)?;
    // Newest first, as recorded; a page follows its marker in that order.
    if let Some(marker) = marker {
        let at = actions
            .iter()
            .position(|a| a.request_id == marker)
            .ok_or_else(|| ApiError::BadRequest(format!("Marker {marker} could not be found.")))?;
        actions.drain(..=at);
    }
    actions.retain(|a| {
        let updated = updated_at(a);
        since.is_none_or(|s| updated.is_some_and(|u| u >= s)) && before.is_none_or(|b| updated.is_some_and(|u| u <= b))
    });
    actions.truncate(limit);
    let views: Vec<Value> = actions.iter().map(|a| action_view(a, version)).collect();
    let mut body = json!({"instanceActions": views});
    let path = format!("servers/{id}/os-instance-actions");
    let last = actions.last().map(|a| a.request_id.as_str());
    if let Some(links) = query.next_links(&state.config.public_url, &path, limit, actions.len(), last) {
        body["links"] = links;
    }
    Ok(Json(body))
}

async fn show(
    NovaRead(NovaRequest { state, caller, version }, (id, request_id)): NovaRead<(String, String)>,
) -> ApiResult<Json<Value>> {
    let server = caller
        .server_read_deleted(
            &state,
            &id,
            "os_compute_api:os-instance-actions:show",
            version.at_least(21),
        )
        .await?;
    let actions = state.servers().actions(server.id).await?;
    let action = actions
        .iter()
        .find(|a| a.request_id == request_id)
        .ok_or_else(|| ApiError::NotFound(format!("Action {request_id} not found")))?;
    let mut view = action_view(action, version);
    let admitted = caller.may("os_compute_api:os-instance-actions:events");
    if admitted || version.at_least(51) {
        let fields = EventFields {
            traceback: admitted,
            host: admitted && version.at_least(62),
            host_id: version.at_least(62),
            details: version.at_least(84) && caller.may("os_compute_api:os-instance-actions:events:details"),
        };
        let project = if action.project_id.is_empty() {
            server.project_id.as_str()
        } else {
            action.project_id.as_str()
        };
        view["events"] = action.events.iter().map(|e| event_view(e, project, fields)).collect();
    }
    Ok(Json(json!({"instanceAction": view})))
}
