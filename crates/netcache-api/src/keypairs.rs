//! `/v2.1/os-keypairs`: a user's key pairs, with Nova's request checks and
//! views of each microversion: 2.2 `type` (ssh or x509) and 201/204, 2.10 an
//! admin's `user_id` (query, or create body), 2.35 `limit`/`marker` paging with
//! `keypairs_links`, 2.75 unknown query parameters refused, 2.92 no generation
//! (`public_key` required) and names with `@` and `.`.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::{KeyPairRequest, StoredKeyPair};
use netcache_domain::keypair::{KeyPair, KeyType};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::{QueryParams, RawQuery};
use crate::request::NovaRequest;
use crate::schema;
use crate::wire::{self, iso_micro};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-keypairs", get(list).post(create))
        .route("/v2.1/os-keypairs/{name}", get(show).delete(delete))
}

/// `POST /os-keypairs` body: every key any version knows; [`check_create`]
/// refuses those the request's version does not.
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
    #[serde(rename = "type")]
    key_type: Option<String>,
    user_id: Option<String>,
}

/// Nova's create schema of `version`: `type` from 2.2, `user_id` from 2.10,
/// `public_key` required from 2.92.
fn check_create(version: Microversion, body: &[u8]) -> ApiResult<CreateKeypairBody> {
    let raw: Value = wire::parse_body(body)?;
    schema::object(None, &raw, &["keypair"], &["keypair"])?;
    let mut allowed = vec!["name", "public_key"];
    if version.at_least(2) {
        allowed.push("type");
    }
    if version.at_least(10) {
        allowed.push("user_id");
    }
    let required: &[&str] = if version.at_least(92) {
        &["name", "public_key"]
    } else {
        &["name"]
    };
    schema::object(Some("keypair"), &raw["keypair"], &allowed, required)?;
    let parsed: CreateKeypairBody = wire::parse_body(body)?;
    if let Some(key_type) = &parsed.keypair.key_type
        && key_type.parse::<KeyType>().is_err()
    {
        return Err(schema::invalid(
            "type",
            &json!(key_type),
            &format!("'{key_type}' is not one of ['ssh', 'x509']"),
        ));
    }
    Ok(parsed)
}

/// The user a request acts for: the caller, or (from 2.10) the query's
/// first `user_id`, as Nova reads it.
fn target_user<'a>(caller: &'a Caller, version: Microversion, query: &'a QueryParams) -> &'a str {
    version
        .at_least(10)
        .then(|| query.first("user_id"))
        .flatten()
        .unwrap_or(&caller.ctx.user_id)
}

/// Nova's query schema of `version` for show and delete (list adds paging).
fn check_query(version: Microversion, query: &QueryParams, paging: bool) -> ApiResult<()> {
    if !version.at_least(75) {
        return Ok(());
    }
    if paging {
        query.only(&["user_id", "limit", "marker"])
    } else {
        query.only(&["user_id"])
    }
}

/// The fields every view shows (and `type` from 2.2).
fn summary(keypair: &KeyPair, version: Microversion) -> Value {
    let mut view = json!({
        "name": keypair.name,
        "public_key": keypair.public_key,
        "fingerprint": keypair.fingerprint,
    });
    if version.at_least(2) {
        view["type"] = json!(keypair.key_type.as_str());
    }
    view
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    let query = QueryParams::read(query)?;
    check_query(version, &query, true)?;
    let user = target_user(&caller, version, &query);
    caller.authorize_user("os_compute_api:os-keypairs:index", user)?;
    let mut keypairs = state.key_pairs().keypairs(user).await?;
    if !version.at_least(35) {
        let views: Vec<Value> = keypairs
            .iter()
            .map(|k| json!({"keypair": summary(&k.keypair, version)}))
            .collect();
        return Ok(Json(json!({"keypairs": views})));
    }
    // A user's key pairs are few (its quota): paged here, by name as Nova orders them.
    let (limit, marker) = query.limit_and_marker(state.config.max_limit)?;
    page_after(&mut keypairs, marker, limit)?;
    let views: Vec<Value> = keypairs
        .iter()
        .map(|k| json!({"keypair": summary(&k.keypair, version)}))
        .collect();
    let mut body = json!({"keypairs": views});
    let last = keypairs.last().map(|k| k.keypair.name.as_str());
    if let Some(links) = query.next_links(&state.config.public_url, "os-keypairs", limit, keypairs.len(), last) {
        body["keypairs_links"] = links;
    }
    Ok(Json(body))
}

/// Keeps those after the key pair named `marker` (a 400 if it has none), at most `limit`.
fn page_after(keypairs: &mut Vec<StoredKeyPair>, marker: Option<&str>, limit: usize) -> ApiResult<()> {
    if let Some(marker) = marker {
        let at = keypairs
            .iter()
            .position(|k| k.keypair.name == marker)
            .ok_or_else(|| ApiError::BadRequest(format!("Marker {marker} could not be found.")))?;
        keypairs.drain(..=at);
    }
    keypairs.truncate(limit);
    Ok(())
}

/// 200 at 2.1, 201 from 2.2; `private_key` only for a generated key pair.
async fn create(
    NovaRequest { state, caller, version }: NovaRequest,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let body = check_create(version, &body)?.keypair;
    let user = body.user_id.as_deref().unwrap_or(&caller.ctx.user_id);
    caller.authorize_user("os_compute_api:os-keypairs:create", user)?;
    let key_type = body
        .key_type
        .as_deref()
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let request = KeyPairRequest {
        user_id: user,
        name: &body.name,
        public_key: body.public_key,
        key_type,
        names_with_at_and_dot: version.at_least(92),
    };
    let created = state.key_pairs().create_keypair(&caller.ctx, request).await?;
    let mut view = summary(&created.keypair, version);
    view["user_id"] = json!(created.keypair.user_id);
    if let Some(private_key) = created.private_key {
        view["private_key"] = json!(private_key);
    }
    let status = if version.at_least(2) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(json!({"keypair": view}))))
}

/// Nova's show: the record's columns too (a live key pair is never deleted
/// or updated).
async fn show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(name): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let query = QueryParams::read(query)?;
    check_query(version, &query, false)?;
    let user = target_user(&caller, version, &query);
    caller.authorize_user("os_compute_api:os-keypairs:show", user)?;
    let stored = state.key_pairs().keypair(user, &name).await?;
    let mut view = summary(&stored.keypair, version);
    view["user_id"] = json!(stored.keypair.user_id);
    view["id"] = json!(stored.id);
    view["created_at"] = json!(iso_micro(stored.keypair.created_at));
    view["updated_at"] = Value::Null;
    view["deleted_at"] = Value::Null;
    view["deleted"] = json!(false);
    Ok(Json(json!({"keypair": view})))
}

/// 202 at 2.1, 204 from 2.2.
async fn delete(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(name): Path<String>,
    query: RawQuery,
) -> ApiResult<StatusCode> {
    let query = QueryParams::read(query)?;
    check_query(version, &query, false)?;
    let user = target_user(&caller, version, &query);
    caller.authorize_user("os_compute_api:os-keypairs:delete", user)?;
    state.key_pairs().delete_keypair(user, &name).await?;
    Ok(if version.at_least(2) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::ACCEPTED
    })
}
