//! `/v2.1/os-migrations` (admin): Nova's record of cold and live migrations
//! and resizes. netcache never moves a server between hosts nor resizes one,
//! so there is none to list; from 2.59 a `marker` names a migration that
//! cannot be found (Nova's 400).

use axum::extract::Query;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::services::last_value;
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/os-migrations", get(index))
}

async fn index(caller: Caller, version: Microversion, query: RawQuery) -> ApiResult<Json<Value>> {
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    caller.authorize("os_compute_api:os-migrations:index")?;
    if version.at_least(59)
        && let Some(marker) = last_value(&pairs, "marker")
    {
        return Err(ApiError::BadRequest(format!("Marker {marker} could not be found.")));
    }
    Ok(Json(json!({"migrations": []})))
}
