//! `GET /v2.1/limits` at microversion 2.1: the caller's project's absolute
//! limits (`max*`, from its quotas) and usage (`total*Used`, counted), with no
//! rate limits; an admin may ask for another project's (`?tenant_id=`).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::ProjectId;
use netcache_domain::quota::{QuotaSet, Resource, Usage};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/limits", get(show))
}

/// Nova's absolute limit names of each resource (`metadata_items` is both the
/// servers' and, at 2.1, the images' metadata limit).
const MAX_NAMES: &[(Resource, &str)] = &[
    (Resource::Ram, "maxTotalRAMSize"),
    (Resource::Instances, "maxTotalInstances"),
    (Resource::Cores, "maxTotalCores"),
    (Resource::KeyPairs, "maxTotalKeypairs"),
    (Resource::FloatingIps, "maxTotalFloatingIps"),
    (Resource::MetadataItems, "maxServerMeta"),
    (Resource::MetadataItems, "maxImageMeta"),
    (Resource::InjectedFiles, "maxPersonality"),
    (Resource::InjectedFileContentBytes, "maxPersonalitySize"),
    (Resource::SecurityGroups, "maxSecurityGroups"),
    (Resource::SecurityGroupRules, "maxSecurityGroupRules"),
    (Resource::ServerGroups, "maxServerGroups"),
    (Resource::ServerGroupMembers, "maxServerGroupMembers"),
];

/// Nova's usage names (floating IPs, security groups and server groups are
/// counted by nobody here: 0, as Nova shows them without nova-network).
const USED_NAMES: &[(Resource, &str)] = &[
    (Resource::Ram, "totalRAMUsed"),
    (Resource::Cores, "totalCoresUsed"),
    (Resource::Instances, "totalInstancesUsed"),
    (Resource::FloatingIps, "totalFloatingIpsUsed"),
    (Resource::SecurityGroups, "totalSecurityGroupsUsed"),
    (Resource::ServerGroups, "totalServerGroupsUsed"),
];

/// The 2.1 view.
#[must_use]
pub fn limits_view(limits: &QuotaSet, usage: &Usage) -> Value {
    let mut absolute = Map::new();
    for (resource, name) in MAX_NAMES {
        absolute.insert((*name).into(), json!(limits.get(*resource)));
    }
    for (resource, name) in USED_NAMES {
        absolute.insert((*name).into(), json!(usage.in_use(*resource)));
    }
    json!({"limits": {"rate": [], "absolute": absolute}})
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:limits")?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let project = match pairs.into_iter().find(|(key, _)| key == "tenant_id") {
        Some((_, tenant)) => {
            caller.authorize_project("os_compute_api:limits:other_project", &tenant)?;
            tenant
        }
        None => caller.ctx.project_id.clone(),
    };
    let quotas = state
        .compute
        .quota_usage(&ProjectId::from(project.as_str()), None)
        .await?;
    Ok(Json(limits_view(&quotas.limits, &quotas.usage)))
}
