//! Version discovery documents.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::AppState;
use crate::microversion::Microversion;

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
    Json(json!({"versions": [version(&state.config.public_url)]}))
}

pub async fn v2_1(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"version": version(&state.config.public_url)}))
}
