//! Version discovery documents.

use axum::Json;
use axum::extract::State;
use axum::http::Extensions;
use serde_json::{Value, json};

use crate::AppState;
use crate::legacy_v2::LegacyV2;
use crate::microversion::Microversion;

/// The legacy v2.0 API (`/v2`), as Nova lists it: supported, without microversions.
fn version_2_0(base: &str) -> Value {
    json!({
        "id": "v2.0",
        "status": "SUPPORTED",
        "version": "",
        "min_version": "",
        "updated": "2011-01-21T11:33:21Z",
        "links": [{"rel": "self", "href": format!("{base}/v2/")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2"}],
    })
}

fn version(base: &str) -> Value {
    json!({
        "id": "v2.1",
        "status": "CURRENT",
        "version": Microversion::MAX.to_string(),
        "min_version": Microversion::MIN.to_string(),
        "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self", "href": format!("{base}/v2.1/")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}],
    })
}

pub async fn root(State(state): State<AppState>) -> Json<Value> {
    let base = &state.config.public_url;
    Json(json!({"versions": [version_2_0(base), version(base)]}))
}

/// `GET /v2.1/`, or `GET /v2/` (rewritten to it, marked [`LegacyV2`]).
pub async fn v2_1(State(state): State<AppState>, extensions: Extensions) -> Json<Value> {
    let base = &state.config.public_url;
    if extensions.get::<LegacyV2>().is_some() {
        return Json(json!({"version": version_2_0(base)}));
    }
    Json(json!({"version": version(base)}))
}
