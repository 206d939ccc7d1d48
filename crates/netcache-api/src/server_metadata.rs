//! `/v2.1/servers/{id}/metadata` and `/metadata/{key}`: a server's metadata
//! (Nova's server-metadata API). Every change is a compare-and-swap on the
//! server row through Compute, which also checks the server's state (409) and
//! the quota (403); the bodies are checked here first, as Nova's schemas do.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::ServerEdit;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::{AppState, Caller, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers/{id}/metadata", get(index).post(set_all).put(set_all))
        .route(
            "/v2.1/servers/{id}/metadata/{key}",
            get(show).put(update).delete(delete),
        )
}

fn not_found() -> ApiError {
    ApiError::NotFound("Metadata item was not found".into())
}

/// Nova's `create` and `update_all` schema: `{"metadata": {...}}` alone.
fn metadata_body(body: &Bytes) -> ApiResult<BTreeMap<String, String>> {
    let body: Value = wire::parse_body(body)?;
    let top = schema::object(None, &body, &["metadata"], &["metadata"])?;
    schema::metadata("metadata", &top["metadata"])
}

async fn index(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:server-metadata:index")
        .await?;
    Ok(Json(json!({"metadata": server.metadata})))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:server-metadata:show")
        .await?;
    let value = server.metadata.get(&key).ok_or_else(not_found)?;
    Ok(Json(json!({"meta": {key: value}})))
}

/// `POST` merges the items into the server's, `PUT` replaces the server's with
/// them (Nova's `create` and `update_all`); both answer all of them (200, as Nova).
async fn set_all(
    method: Method,
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let items = metadata_body(&body)?;
    let (rule, replace) = if method == Method::PUT {
        ("os_compute_api:server-metadata:update_all", true)
    } else {
        ("os_compute_api:server-metadata:create", false)
    };
    let server = caller.server(&state, &id, rule).await?;
    let server = state
        .servers()
        .edit_server(&caller.ctx, server.id, &ServerEdit::SetMetadata { items, replace })
        .await?;
    Ok(Json(json!({"metadata": server.metadata})))
}

/// `PUT …/metadata/{key}` with `{"meta": {key: value}}`: exactly one item, the
/// one the path names (Nova: "Request body and URI mismatch").
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: Value = wire::parse_body(&body)?;
    let top = schema::object(None, &body, &["meta"], &["meta"])?;
    let meta = &top["meta"];
    let items = schema::metadata("meta", meta)?;
    if items.len() != 1 {
        let reason = if items.is_empty() {
            "does not have enough properties"
        } else {
            "has too many properties"
        };
        return Err(schema::invalid(
            "meta",
            meta,
            &format!("{} {reason}", schema::python_repr(meta)),
        ));
    }
    if !items.contains_key(&key) {
        return Err(ApiError::BadRequest("Request body and URI mismatch".into()));
    }
    let server = caller
        .server(&state, &id, "os_compute_api:server-metadata:update")
        .await?;
    let edit = ServerEdit::SetMetadata {
        items: items.clone(),
        replace: false,
    };
    state.servers().edit_server(&caller.ctx, server.id, &edit).await?;
    Ok(Json(json!({"meta": items})))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let server = caller
        .server(&state, &id, "os_compute_api:server-metadata:delete")
        .await?;
    state
        .servers()
        .edit_server(&caller.ctx, server.id, &ServerEdit::DeleteMetadata { key })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
