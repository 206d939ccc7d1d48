//! A private flavor's projects (Nova's `flavor_access.py`): the admin's list,
//! `addTenantAccess` and `removeTenantAccess` (projects are not looked up in
//! Keystone, which Nova does to refuse an unknown one).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use netcache_domain::flavor::Flavor;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::request::NovaRequest;
use crate::schema::{self, invalid, python_repr};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/flavors/{id}/os-flavor-access", get(list))
        .route("/v2.1/flavors/{id}/action", post(action))
}

/// Nova's `flavor_access` list of a flavor.
fn access_list(flavor: &Flavor) -> Json<Value> {
    let items: Vec<Value> = flavor
        .projects
        .iter()
        .map(|project| json!({"flavor_id": flavor.id, "tenant_id": project}))
        .collect();
    Json(json!({ "flavor_access": items }))
}

async fn list(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-flavor-access")?;
    let flavor = state.flavors().flavor(&caller.ctx, &id).await?;
    if flavor.is_public {
        return Err(ApiError::NotFound(
            "Access list not available for public flavors.".into(),
        ));
    }
    Ok(access_list(&flavor))
}

/// The project of an access action's body (`{"<action>": {"tenant": "…"}}`).
fn tenant(body: &Value, action: &str) -> ApiResult<String> {
    let outer = schema::object(None, body, &[action], &[action])?;
    let fields = schema::object(Some(action), &outer[action], &["tenant"], &["tenant"])?;
    let value = &fields["tenant"];
    let text = schema::string("tenant", value)?;
    if text.is_empty() {
        return Err(invalid(
            "tenant",
            value,
            &format!("{} is too short", python_repr(value)),
        ));
    }
    if text.chars().count() > 255 {
        return Err(invalid("tenant", value, &format!("{} is too long", python_repr(value))));
    }
    Ok(text.to_owned())
}

async fn action(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: Value =
        serde_json::from_slice(&body).map_err(|_| ApiError::BadRequest("Malformed request body".into()))?;
    let name = body
        .as_object()
        .and_then(|o| o.keys().next())
        .cloned()
        .unwrap_or_default();
    let flavor = match name.as_str() {
        "addTenantAccess" => {
            let project = tenant(&body, &name)?;
            caller.authorize("os_compute_api:os-flavor-access:add_tenant_access")?;
            // From 2.7 a public flavor's access list is refused (409).
            state
                .flavors()
                .add_flavor_access(&caller.ctx, &id, &project, version.at_least(7))
                .await?
        }
        "removeTenantAccess" => {
            let project = tenant(&body, &name)?;
            caller.authorize("os_compute_api:os-flavor-access:remove_tenant_access")?;
            state.flavors().remove_flavor_access(&caller.ctx, &id, &project).await?
        }
        other => return Err(ApiError::BadRequest(format!("There is no such action: {other}"))),
    };
    Ok(access_list(&flavor))
}
