//! `/v2.1/os-availability-zone`: the one zone of this process's hosts.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use crate::error::ApiResult;
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
    let config = state.compute.config();
    let hosts: Vec<String> = config.hosts.iter().map(ToString::to_string).collect();
    Ok(Json(wire::availability_zones(&config.availability_zone, Some(&hosts))))
}
