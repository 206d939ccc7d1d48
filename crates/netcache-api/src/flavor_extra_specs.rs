//! A flavor's extra specs (Nova's `flavors_extraspecs.py`): list and show for
//! project readers, create, update and delete for an admin. Values may be
//! given as numbers (kept as their text); the answers to a create or an update
//! echo the request. 2.86's validation of the specs Nova knows is not done:
//! netcache's fake hypervisor reads none, so every key is kept as given.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::schema::{self, python_repr};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/flavors/{id}/os-extra_specs", get(list).post(create))
        .route(
            "/v2.1/flavors/{id}/os-extra_specs/{key}",
            get(show).put(update).delete(delete),
        )
}

fn body(bytes: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(bytes).map_err(|_| ApiError::BadRequest("Malformed request body".into()))
}

/// Nova's extra specs schema: its metadata's keys, each value a string or a
/// number (stored as its text) of at most 255 characters.
fn specs(field: &str, value: &Value) -> ApiResult<BTreeMap<String, String>> {
    let as_text = match value {
        Value::Object(map) => {
            let mut texts = Map::new();
            for (key, item) in map {
                let text = match item {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(schema::not_of_type(key, item, "string', 'number")),
                };
                texts.insert(key.clone(), Value::String(text));
            }
            Value::Object(texts)
        }
        other => other.clone(),
    };
    schema::metadata(field, &as_text)
}

async fn list(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.authorize_own_project("os_compute_api:os-flavor-extra-specs:index")?;
    let flavor = state.flavors().flavor(&caller.ctx, &id).await?;
    Ok(Json(json!({"extra_specs": flavor.extra_specs})))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    caller.authorize_own_project("os_compute_api:os-flavor-extra-specs:show")?;
    let flavor = state.flavors().flavor(&caller.ctx, &id).await?;
    let value = flavor
        .extra_specs
        .get(&key)
        .ok_or_else(|| ApiError::NotFound(format!("Flavor {id} has no extra specs with key {key}.")))?;
    Ok(Json(json!({ key: value })))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let body = body(&bytes)?;
    let outer = schema::object(None, &body, &["extra_specs"], &["extra_specs"])?;
    let specs = specs("extra_specs", &outer["extra_specs"])?;
    caller.authorize("os_compute_api:os-flavor-extra-specs:create")?;
    state.flavors().set_flavor_extra_specs(&caller.ctx, &id, specs).await?;
    Ok(Json(body))
}

async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let body = body(&bytes)?;
    if let Value::Object(map) = &body {
        // Nova's `minProperties`/`maxProperties` of 1, on the body itself.
        let repr = python_repr(&body);
        if map.is_empty() {
            return Err(ApiError::BadRequest(format!("{repr} does not have enough properties")));
        }
        if map.len() > 1 {
            return Err(ApiError::BadRequest(format!("{repr} has too many properties")));
        }
    }
    let specs = specs("extra_specs", &body)?;
    caller.authorize("os_compute_api:os-flavor-extra-specs:update")?;
    if !specs.contains_key(&key) {
        return Err(ApiError::BadRequest("Request body and URI mismatch".into()));
    }
    state.flavors().set_flavor_extra_specs(&caller.ctx, &id, specs).await?;
    Ok(Json(body))
}

/// Nova answers 200 without a body.
async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<()> {
    caller.authorize("os_compute_api:os-flavor-extra-specs:delete")?;
    state
        .flavors()
        .delete_flavor_extra_spec(&caller.ctx, &id, &key)
        .await
        .map_err(Into::into)
}
