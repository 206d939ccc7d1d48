//! `/v2.1/os-keypairs` at microversion 2.1: the caller's own key pairs, with
//! Nova's request checks and its views (list, create, show) of that version.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::keypair::KeyPair;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::wire::{self, iso_micro};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-keypairs", get(list).post(create))
        .route("/v2.1/os-keypairs/{name}", get(show).delete(delete))
}

/// `POST /os-keypairs` body at 2.1: no other key is allowed (Nova's schema).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateKeypairBody {
    keypair: CreateKeypairFields,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateKeypairFields {
    name: String,
    public_key: Option<String>,
}

/// The fields every view shows.
fn summary(keypair: &KeyPair) -> Value {
    json!({
        "name": keypair.name,
        "public_key": keypair.public_key,
        "fingerprint": keypair.fingerprint,
    })
}

async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-keypairs:index")?;
    let keypairs = state.compute.keypairs(&caller.ctx).await?;
    let views: Vec<Value> = keypairs
        .iter()
        .map(|k| json!({"keypair": summary(&k.keypair)}))
        .collect();
    Ok(Json(json!({"keypairs": views})))
}

/// 200 at 2.1 (201 only from 2.2); `private_key` only for a generated key pair.
async fn create(State(state): State<AppState>, caller: Caller, body: Bytes) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-keypairs:create")?;
    let body: CreateKeypairBody = wire::parse_body(&body)?;
    let name = body.keypair.name;
    let created = state
        .compute
        .create_keypair(&caller.ctx, &name, body.keypair.public_key)
        .await?;
    let mut view = summary(&created.keypair);
    view["user_id"] = json!(created.keypair.user_id);
    if let Some(private_key) = created.private_key {
        view["private_key"] = json!(private_key);
    }
    Ok(Json(json!({"keypair": view})))
}

/// Nova's show at 2.1: the record's columns too (a live key pair is never
/// deleted or updated).
async fn show(State(state): State<AppState>, caller: Caller, Path(name): Path<String>) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-keypairs:show")?;
    let stored = state.compute.keypair(&caller.ctx, &name).await?;
    let mut view = summary(&stored.keypair);
    view["user_id"] = json!(stored.keypair.user_id);
    view["id"] = json!(stored.id);
    view["created_at"] = json!(iso_micro(stored.keypair.created_at));
    view["updated_at"] = Value::Null;
    view["deleted_at"] = Value::Null;
    view["deleted"] = json!(false);
    Ok(Json(json!({"keypair": view})))
}

/// 202 at 2.1 (204 only from 2.2).
async fn delete(State(state): State<AppState>, caller: Caller, Path(name): Path<String>) -> ApiResult<StatusCode> {
    caller.authorize("os_compute_api:os-keypairs:delete")?;
    state.compute.delete_keypair(&caller.ctx, &name).await?;
    Ok(StatusCode::ACCEPTED)
}
