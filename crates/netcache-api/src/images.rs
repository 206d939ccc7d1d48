//! `/image`: a read-only subset of the Glance v2 image API over a fixed
//! catalog, which is also what a boot's `imageRef` is checked against (Nova
//! asks Glance). It lets clients that resolve images through Glance (`openstack server create
//! --image cirros`, image names in `openstack server list`) work when their
//! image endpoint points here (`image_endpoint_override: <netcache>/image`).

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::query_params::RawQuery;
use crate::wire::{self, Image};

/// Two images, as Tempest wants (`image_ref` and `image_ref_alt`); the first
/// is what clients pick when asked for none.
pub const IMAGES: &[Image] = &[
    Image {
        id: "9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11",
        name: "cirros-0.6.3-x86_64-disk",
        disk_format: "qcow2",
        size: 21_692_416,
        created_at: "2024-09-26T00:00:00Z",
    },
    Image {
        id: "4d6e0b2c-8a51-4f3e-b1c7-2e9f5a3d8c20",
        name: "cirros-0.6.2-x86_64-disk",
        disk_format: "qcow2",
        size: 21_430_272,
        created_at: "2023-05-30T00:00:00Z",
    },
];

/// The image with this id.
#[must_use]
pub fn find(id: &str) -> Option<&'static Image> {
    IMAGES.iter().find(|i| i.id == id)
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/image", get(versions))
        .route("/image/", get(versions))
        .route("/image/v2/images", get(list))
        .route("/image/v2/images/{id}", get(show))
}

async fn versions(State(state): State<AppState>) -> Json<Value> {
    Json(wire::image_versions(&state.config.public_url))
}

/// Honours Glance's `id` (`in:a,b` or one id) and `name` filters; other
/// parameters (`limit`, `marker`, `sort`, `visibility`…) are ignored.
async fn list(query: RawQuery) -> ApiResult<Json<Value>> {
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let matches = |image: &Image| {
        pairs.iter().all(|(key, value)| match key.as_str() {
            "id" => value
                .strip_prefix("in:")
                .unwrap_or(value)
                .split(',')
                .any(|id| id == image.id),
            "name" => value
                .strip_prefix("in:")
                .unwrap_or(value)
                .split(',')
                .any(|name| name == image.name),
            _ => true,
        })
    };
    let images: Vec<Value> = IMAGES.iter().filter(|i| matches(i)).map(wire::image_view).collect();
    Ok(Json(
        json!({"images": images, "first": "/v2/images", "schema": "/v2/schemas/images"}),
    ))
}

async fn show(Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let image = find(&id).ok_or_else(|| ApiError::NotFound(format!("No image found with ID {id}")))?;
    Ok(Json(wire::image_view(image)))
}
