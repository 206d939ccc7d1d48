//! APIs Nova removed but still routes, answered as Nova answers them: 410,
//! whatever the server or the caller. `os-consoles` (the Xen console proxy,
//! gone in Ussuri) is the one clients still find in the extensions list.

use axum::Router;
use axum::routing::get;

use crate::AppState;
use crate::error::ApiError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers/{id}/consoles", get(gone).post(gone))
        .route("/v2.1/servers/{id}/consoles/{console}", get(gone).delete(gone))
}

async fn gone() -> ApiError {
    ApiError::Gone
}
