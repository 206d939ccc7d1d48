//! `GET /v2.1/servers/{id}/os-security-groups` (Nova's
//! `ServerSecurityGroupController.index` at 2.1): the groups of the server's
//! ports, whole, sorted by owner and name, with their ingress rules in Nova's
//! form. Ansible's `openstack.cloud.server` reads it on every run after the first.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::error::ApiResult;
use crate::security_group_view::sorted_views;
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}/os-security-groups", get(index))
}

async fn index(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Response> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-security-groups:list")
        .await?;
    let found = state.attachments().security_groups_in_full(server.id).await?;
    Ok(Json(sorted_views(&found, &found.groups)).into_response())
}
