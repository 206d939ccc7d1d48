//! `/v2.1/flavors`: a fixed catalog in Nova's shape, so clients can resolve a
//! flavor name (`openstack server create --flavor m1.tiny`) and show flavor
//! names; a boot's `flavorRef` must name one of them.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::wire::{self, Flavor};

pub use netcache_domain::flavor::{FLAVORS, find};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/flavors", get(list))
        .route("/v2.1/flavors/detail", get(list_detail))
        .route("/v2.1/flavors/{id}", get(show))
}

/// The flavors a list query asks for, as Nova reads it: `minRam` and `minDisk`
/// (at least that much; 400 if not a number), ordered by id, after `marker` (400
/// if it names none), at most `limit`; `is_public` and sorting are accepted and
/// change nothing (every flavor is public).
fn page(pairs: &[(String, String)]) -> ApiResult<(Vec<&'static Flavor>, Option<usize>)> {
    let mut flavors: Vec<&'static Flavor> = FLAVORS.iter().collect();
    let mut limit = None;
    let mut marker = None;
    for (key, value) in pairs {
        let number = |what: &str| {
            value
                .parse::<u32>()
                .map_err(|_| ApiError::BadRequest(format!("Invalid {what} filter [{value}]")))
        };
        match key.as_str() {
            "minRam" => {
                let min = number("minRam")?;
                flavors.retain(|f| f.ram_mb >= min);
            }
            "minDisk" => {
                let min = number("minDisk")?;
                flavors.retain(|f| f.disk_gb >= min);
            }
            "limit" => {
                let parsed = value.parse::<usize>().map_err(|_| {
                    ApiError::BadRequest(format!(
                        "Invalid input for query parameters limit. Value: {value}. '{value}' does not match '^[0-9]*$'"
                    ))
                })?;
                limit = Some(parsed.min(crate::server_query::MAX_LIMIT));
            }
            "marker" => marker = Some(value.clone()),
            _ => {}
        }
    }
    if let Some(marker) = marker {
        let after = FLAVORS
            .iter()
            .position(|f| f.id == marker)
            .ok_or_else(|| ApiError::BadRequest(format!("marker [{marker}] not found")))?;
        flavors.retain(|f| FLAVORS.iter().position(|g| g.id == f.id) > Some(after));
    }
    if let Some(limit) = limit {
        flavors.truncate(limit);
    }
    Ok((flavors, limit))
}

/// A page of flavors in Nova's list form.
fn flavors_page(
    state: &AppState,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    path: &str,
    view: fn(&str, &Flavor) -> Value,
) -> ApiResult<Json<Value>> {
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let (flavors, limit) = page(&pairs)?;
    let base = &state.config.public_url;
    let views: Vec<Value> = flavors.iter().map(|f| view(base, f)).collect();
    Ok(Json(wire::page("flavors", base, path, views, limit)))
}

async fn list(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    flavors_page(&state, query, "flavors", wire::flavor_summary)
}

async fn list_detail(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    flavors_page(&state, query, "flavors/detail", wire::flavor_detail)
}

async fn show(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let flavor = find(&id).ok_or_else(|| ApiError::NotFound(format!("Flavor {id} could not be found.")))?;
    Ok(Json(
        json!({"flavor": wire::flavor_detail(&state.config.public_url, flavor)}),
    ))
}
