//! `/v2.1/flavors`: a fixed catalog in Nova's shape, so clients can resolve a
//! flavor name (`openstack server create --flavor m1.tiny`) and show flavor
//! names; a boot's `flavorRef` must name one of them.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::wire::{self, Flavor};

/// Nova's classic default flavors.
pub const FLAVORS: &[Flavor] = &[
    Flavor {
        id: "1",
        name: "m1.tiny",
        ram_mb: 512,
        disk_gb: 1,
        vcpus: 1,
    },
    Flavor {
        id: "2",
        name: "m1.small",
        ram_mb: 2048,
        disk_gb: 20,
        vcpus: 1,
    },
    Flavor {
        id: "3",
        name: "m1.medium",
        ram_mb: 4096,
        disk_gb: 40,
        vcpus: 2,
    },
    Flavor {
        id: "4",
        name: "m1.large",
        ram_mb: 8192,
        disk_gb: 80,
        vcpus: 4,
    },
    Flavor {
        id: "5",
        name: "m1.xlarge",
        ram_mb: 16384,
        disk_gb: 160,
        vcpus: 8,
    },
];

/// The flavor with this id.
#[must_use]
pub fn find(id: &str) -> Option<&'static Flavor> {
    FLAVORS.iter().find(|f| f.id == id)
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/flavors", get(list))
        .route("/v2.1/flavors/detail", get(list_detail))
        .route("/v2.1/flavors/{id}", get(show))
}

// Query parameters (is_public, minRam, minDisk, sort_key, limit, marker) are
// accepted and ignored: the catalog is five entries.
async fn list(State(state): State<AppState>) -> Json<Value> {
    let base = &state.config.public_url;
    Json(json!({"flavors": FLAVORS.iter().map(|f| wire::flavor_summary(base, f)).collect::<Vec<_>>()}))
}

async fn list_detail(State(state): State<AppState>) -> Json<Value> {
    let base = &state.config.public_url;
    Json(json!({"flavors": FLAVORS.iter().map(|f| wire::flavor_detail(base, f)).collect::<Vec<_>>()}))
}

async fn show(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let flavor = find(&id).ok_or_else(|| ApiError::NotFound(format!("Flavor {id} could not be found.")))?;
    Ok(Json(
        json!({"flavor": wire::flavor_detail(&state.config.public_url, flavor)}),
    ))
}
