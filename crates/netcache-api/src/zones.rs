//! `/v2.1/os-availability-zone`: the one zone of this process's hosts; its
//! admin `detail` lists each host whose `nova-compute` service is enabled,
//! with whether it is up and its last heartbeat (as Nova's, which leaves
//! disabled services out). netcache has no scheduler or conductor service,
//! so Nova's `internal` zone, which lists those, is never shown.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use crate::error::ApiResult;
use crate::wire::ZoneHost;
use crate::{AppState, Caller, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-availability-zone", get(list))
        .route("/v2.1/os-availability-zone/detail", get(detail))
}

async fn list(State(state): State<AppState>) -> Json<Value> {
    Json(wire::availability_zones(
        &state.compute.config().availability_zone,
        None,
    ))
}

async fn detail(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-availability-zone:detail")?;
    let hosts: Vec<ZoneHost> = state
        .compute
        .services()
        .await?
        .iter()
        .filter(|s| !s.service.disabled)
        .map(|s| ZoneHost {
            host: s.service.host.to_string(),
            available: s.service.is_up(s.heartbeat_live),
            active: true,
            updated_at: s.service.updated_at,
        })
        .collect();
    Ok(Json(wire::availability_zones(
        &state.compute.config().availability_zone,
        Some(&hosts),
    )))
}
