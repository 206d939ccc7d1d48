//! Nova's image proxy, served until 2.35 (404 from 2.36, as Nova):
//! `/v2.1/images` (list, `detail`, one by id) over netcache's fixed, read-only
//! image catalog (`crate::images`), in Nova's views. The list honours `name`,
//! `limit` and `marker`; every image is `ACTIVE`, so Glance's other filters
//! would select them all or none, and are not applied. Deleting one is
//! Glance's refusal as Nova answers it (403): the catalog is read-only.

use axum::extract::{Path, Query};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::images::{IMAGES, find};
use crate::microversion::Microversion;
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::services::last_value;
use crate::wire::{Image, links};

/// The last microversion of the proxy.
const LAST_VERSION: u16 = 35;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/images", get(index))
        .route("/v2.1/images/detail", get(detail))
        .route("/v2.1/images/{id}", get(show).delete(delete))
}

/// Nova's three links: self, bookmark, and the image in the image service.
fn image_links(state: &AppState, image: &Image) -> Value {
    let base = &state.config.public_url;
    let mut all = json!(links(base, "images", image.id));
    all.as_array_mut().expect("a list").push(json!({
        "rel": "alternate",
        "type": "application/vnd.openstack.image",
        "href": format!("{base}/image/images/{}", image.id),
    }));
    all
}

fn basic(state: &AppState, image: &Image) -> Value {
    json!({"id": image.id, "name": image.name, "links": image_links(state, image)})
}

fn full(state: &AppState, image: &Image) -> Value {
    let created = image.created_at;
    json!({
        "id": image.id,
        "name": image.name,
        "minRam": 0,
        "minDisk": 0,
        "metadata": {},
        "created": created,
        "updated": created,
        "status": "ACTIVE",
        "progress": 100,
        "OS-EXT-IMG-SIZE:size": image.size,
        "links": image_links(state, image),
    })
}

/// The images a list shows: by `name`, from after `marker`, at most `limit`.
fn listed(query: RawQuery) -> ApiResult<Vec<&'static Image>> {
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let name = last_value(&pairs, "name");
    let mut images: Vec<&Image> = IMAGES.iter().filter(|i| name.is_none_or(|n| n == i.name)).collect();
    if let Some(marker) = last_value(&pairs, "marker") {
        let at = images
            .iter()
            .position(|i| i.id == marker)
            .ok_or_else(|| ApiError::BadRequest(format!("marker [{marker}] not found")))?;
        images.drain(..=at);
    }
    if let Some(limit) = last_value(&pairs, "limit") {
        let limit: usize = limit
            .parse()
            .map_err(|_| ApiError::BadRequest("limit param must be an integer".into()))?;
        images.truncate(limit);
    }
    Ok(images)
}

/// A list of the catalog's images, each in `view`.
fn listed_in(
    state: &AppState,
    version: Microversion,
    query: RawQuery,
    view: fn(&AppState, &Image) -> Value,
) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    let images: Vec<Value> = listed(query)?.into_iter().map(|i| view(state, i)).collect();
    Ok(Json(json!({"images": images})))
}

async fn index(NovaRequest { state, version, .. }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    listed_in(&state, version, query, basic)
}

async fn detail(NovaRequest { state, version, .. }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    listed_in(&state, version, query, full)
}

fn image(id: &str) -> ApiResult<&'static Image> {
    find(id).ok_or_else(|| ApiError::NotFound("Image not found.".into()))
}

async fn show(NovaRequest { state, version, .. }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    Ok(Json(json!({"image": full(&state, image(&id)?)})))
}

async fn delete(NovaRequest { version, .. }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    image(&id)?;
    Err(ApiError::Forbidden("You are not allowed to delete the image.".into()))
}
