//! `/v2.1/flavors` as Nova 34's flavors controller: the list (summary and
//! detail) with its filters, sort keys and pages, a flavor, and an admin's
//! create, delete and description update (2.55), with Nova's views per
//! microversion (`flavor_view.rs`) and its request checks (`flavor_create.rs`).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::ProjectId;
use netcache_domain::flavor::{ListQuery, SortKey};
use regex::Regex;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::flavor_view::FlavorView;
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::server_query::{MAX_LIMIT, invalid};
use crate::{AppState, Caller, flavor_access, flavor_create, flavor_extra_specs, wire};

/// Nova's sort keys of a flavor list (2.102 drops `rxtx_factor`).
const SORT_KEYS: [&str; 15] = [
    "created_at",
    "description",
    "disabled",
    "ephemeral_gb",
    "flavorid",
    "id",
    "is_public",
    "memory_mb",
    "name",
    "root_gb",
    "rxtx_factor",
    "swap",
    "updated_at",
    "vcpu_weight",
    "vcpus",
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/flavors", get(list).post(create))
        .route("/v2.1/flavors/detail", get(list_detail))
        .route("/v2.1/flavors/{id}", get(show).delete(delete).put(update))
        .merge(flavor_access::routes())
        .merge(flavor_extra_specs::routes())
}

/// How this caller sees flavors at this version.
pub(crate) fn view<'a>(state: &'a AppState, caller: &Caller, version: Microversion) -> FlavorView<'a> {
    FlavorView {
        base: &state.config.public_url,
        version,
        extra_specs: caller
            .authorize_own_project("os_compute_api:os-flavor-extra-specs:index")
            .is_ok(),
    }
}

/// A list query's parameters, as Nova's schema and controller read them:
/// the domain's query, and the 2.102 `name` pattern its matcher applies.
struct Params<'a> {
    query: ListQuery<'a>,
    name: Option<Regex>,
}

impl<'a> Params<'a> {
    fn parse(
        pairs: &'a [(String, String)],
        project: &'a ProjectId,
        admin: bool,
        version: Microversion,
    ) -> ApiResult<Self> {
        let mut params = Self {
            query: ListQuery::new(project, admin),
            name: None,
        };
        let query = &mut params.query;
        let number = |key: &str, value: &str| {
            value
                .parse::<i64>()
                .map_err(|_| ApiError::BadRequest(format!("Invalid {key} filter [{value}]")))
        };
        for (key, value) in pairs {
            match key.as_str() {
                "minRam" => query.min_ram = Some(number("minRam", value)?),
                "minDisk" => query.min_disk = Some(number("minDisk", value)?),
                "limit" => {
                    let parsed = value
                        .parse::<usize>()
                        .map_err(|_| invalid("limit", value, &format!("'{value}' does not match '^[0-9]*$'")))?;
                    query.limit = Some(parsed.min(MAX_LIMIT));
                }
                "marker" => query.marker = Some(value),
                "sort_key" => {
                    let known =
                        SORT_KEYS.contains(&value.as_str()) && !(version.at_least(102) && value == "rxtx_factor");
                    query.sort_key = SortKey::parse(value)
                        .filter(|_| known)
                        .ok_or_else(|| invalid("sort_key", value, &format!("'{value}' is not one of the sort keys")))?;
                }
                "sort_dir" => match value.as_str() {
                    "asc" => query.descending = false,
                    "desc" => query.descending = true,
                    _ => {
                        return Err(invalid(
                            "sort_dir",
                            value,
                            &format!("'{value}' is not one of ['asc', 'desc']"),
                        ));
                    }
                },
                // Only an admin chooses (Nova ignores it for the others).
                "is_public" if admin => query.is_public = is_public(value)?,
                "is_public" => {}
                "name" if version.at_least(102) => {
                    let regex = Regex::new(value)
                        .map_err(|_| invalid("name", value, &format!("'{value}' is not a 'regex'")))?;
                    params.name = Some(regex);
                }
                // 2.75 refuses what its schema does not name.
                other if version.at_least(75) => {
                    return Err(ApiError::BadRequest(format!(
                        "Invalid input for query parameters {other}. Additional properties are not allowed ('{other}' was unexpected)"
                    )));
                }
                _ => {}
            }
        }
        Ok(params)
    }
}

/// Nova's `is_public`: `none` (any case) for all, else a strict boolean word.
fn is_public(value: &str) -> ApiResult<Option<bool>> {
    match value.to_lowercase().as_str() {
        "none" => Ok(None),
        "1" | "t" | "true" | "on" | "y" | "yes" => Ok(Some(true)),
        "0" | "f" | "false" | "off" | "n" | "no" => Ok(Some(false)),
        _ => Err(ApiError::BadRequest(format!("Invalid is_public filter [{value}]"))),
    }
}

async fn flavors_page(
    state: &AppState,
    caller: &Caller,
    version: Microversion,
    query: RawQuery,
    detail: bool,
) -> ApiResult<Json<Value>> {
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let admin = caller.ctx.is_admin();
    let project = caller.project();
    let Params { mut query, name } = Params::parse(&pairs, &project, admin, version)?;
    let name_matches = |n: &str| name.as_ref().is_none_or(|r| r.is_match(n));
    query.name = name.as_ref().map(|_| &name_matches as &(dyn Fn(&str) -> bool + Sync));
    let flavors = state.flavors().flavors(&query).await?;
    let view = view(state, caller, version);
    let (views, path): (Vec<Value>, _) = if detail {
        (flavors.iter().map(|f| view.detail(f)).collect(), "flavors/detail")
    } else {
        (flavors.iter().map(|f| view.summary(f)).collect(), "flavors")
    };
    Ok(Json(wire::page("flavors", view.base, path, views, query.limit)))
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    flavors_page(&state, &caller, version, query, false).await
}

async fn list_detail(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    flavors_page(&state, &caller, version, query, true).await
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let flavor = state.flavors().flavor(&caller.ctx, &id).await?;
    Ok(Json(json!({"flavor": view(&state, &caller, version).detail(&flavor)})))
}

/// Nova answers a create 200, with the new flavor (extra specs empty).
async fn create(NovaRequest { state, caller, version }: NovaRequest, body: Bytes) -> ApiResult<Json<Value>> {
    // Nova checks the body's schema before the policy.
    let flavor = flavor_create::parse(&body, version)?;
    caller.authorize("os_compute_api:os-flavor-manage:create")?;
    let flavor = state.flavors().create_flavor(flavor).await?;
    Ok(Json(json!({"flavor": view(&state, &caller, version).detail(&flavor)})))
}

/// Nova answers a delete 202, without a body.
async fn delete(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.authorize("os_compute_api:os-flavor-manage:delete")?;
    state.flavors().delete_flavor(&id).await?;
    Ok(StatusCode::ACCEPTED)
}

/// 2.55: the description alone may change.
async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    version.served_from(55)?;
    let description = flavor_create::parse_update(&body)?;
    caller.authorize("os_compute_api:os-flavor-manage:update")?;
    let flavor = state
        .flavors()
        .set_flavor_description(&caller.ctx, &id, description)
        .await?;
    Ok(Json(json!({"flavor": view(&state, &caller, version).detail(&flavor)})))
}
