//! `GET /v2.1/limits`: the caller's project's absolute limits (`max*`, from its
//! quotas) and usage (`total*Used`, counted), with no rate limits; an admin may
//! ask for another project's (`?tenant_id=`). As in Nova, from 2.36 the
//! network proxies' limits are left out, from 2.39 `maxImageMeta`, from 2.57
//! the personality ones; from 2.75 a parameter other than `tenant_id` is refused.

use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::ProjectId;
use netcache_domain::quota::{QuotaSet, Resource, Usage};
use serde_json::{Map, Value, json};

use crate::AppState;
use crate::error::ApiResult;
use crate::microversion::Microversion;
use crate::query_params::{QueryParams, RawQuery};
use crate::quota_sets::left_out;
use crate::request::NovaRequest;

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

/// The view of `version`.
#[must_use]
pub fn limits_view(limits: &QuotaSet, usage: &Usage, version: Microversion) -> Value {
    let mut absolute = Map::new();
    for (resource, name) in MAX_NAMES {
        // The image metadata proxy went in 2.39.
        if left_out(version, *resource) || (*name == "maxImageMeta" && version.at_least(39)) {
            continue;
        }
        absolute.insert((*name).into(), json!(limits.get(*resource)));
    }
    for (resource, name) in USED_NAMES.iter().filter(|(r, _)| !left_out(version, *r)) {
        absolute.insert((*name).into(), json!(usage.in_use(*resource)));
    }
    json!({"limits": {"rate": [], "absolute": absolute}})
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    let query = QueryParams::read(query)?;
    if version.at_least(75) {
        query.only(&["tenant_id"])?;
    }
    caller.authorize("os_compute_api:limits")?;
    let project = match query.last("tenant_id") {
        Some(tenant) => {
            caller.authorize_project("os_compute_api:limits:other_project", tenant)?;
            tenant.to_owned()
        }
        None => caller.ctx.project_id.clone(),
    };
    let quotas = state
        .quotas()
        .quota_usage(&ProjectId::from(project.as_str()), None)
        .await?;
    Ok(Json(limits_view(&quotas.limits, &quotas.usage, version)))
}
