//! `/v2.1/servers/{id}/os-server-password`: the password a guest posted,
//! encrypted, to Nova's metadata service. netcache runs no metadata service,
//! so no guest ever posts one: the show is Nova's answer for a server without
//! one (`""`) and the clear (204) has nothing to remove; both with Nova's
//! policy and 404, and from 2.102 no query parameter.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::request::{NovaRead, NovaRequest};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}/os-server-password", get(show).delete(clear))
}

async fn show(NovaRead(NovaRequest { state, caller, .. }, id): NovaRead<String>) -> ApiResult<Json<Value>> {
    caller
        .server(&state, &id, "os_compute_api:os-server-password:show")
        .await?;
    Ok(Json(json!({"password": ""})))
}

async fn clear(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller
        .server(&state, &id, "os_compute_api:os-server-password:clear")
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
