//! `/v2.1/os-quota-sets/{project_id}` (Nova's legacy quota driver): a
//! project's limits, or a user's in it (`?user_id=`), the defaults, the detail
//! with usage, an admin's update with Nova's request schema and checks, and
//! the delete back to the defaults. Until 2.35 every view lists all of Nova's
//! resources, the nova-network ones (`fixed_ips`, `floating_ips`,
//! `security_groups`, `security_group_rules`) included, as Nova still does;
//! from 2.36 those are left out of the views and refused in an update, from
//! 2.57 the personality ones (`injected_file*`) too. From 2.75 a query
//! parameter other than `user_id` is refused (the defaults' never are).

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::ProjectId;
use netcache_domain::quota::{QuotaSet, Resource, Usage};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::{QueryParams, RawQuery};
use crate::request::NovaRequest;
use crate::{AppState, Caller, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-quota-sets/{id}", get(show).put(update).delete(delete))
        .route("/v2.1/os-quota-sets/{id}/defaults", get(defaults))
        .route("/v2.1/os-quota-sets/{id}/detail", get(detail))
}

/// Nova's `common_quota` bounds of a new limit (-1 is unlimited; the maximum is
/// its database's integer).
const MIN_LIMIT: i64 = -1;
const MAX_LIMIT: i64 = 0x7FFF_FFFF;

/// Whether `resource` is gone at `version`: a nova-network one from
/// `2.nova_network_gone`, a personality one (`injected_file*`) from 2.57.
/// Quota sets drop the nova-network ones at 2.36, quota classes at 2.50.
pub(crate) fn dropped(version: Microversion, resource: Resource, nova_network_gone: u16) -> bool {
    match resource {
        Resource::FixedIps | Resource::FloatingIps | Resource::SecurityGroups | Resource::SecurityGroupRules => {
            version.at_least(nova_network_gone)
        }
        Resource::InjectedFiles | Resource::InjectedFileContentBytes | Resource::InjectedFilePathBytes => {
            version.at_least(57)
        }
        _ => false,
    }
}

/// Whether `version` leaves `resource` out (Nova's `FILTERED_QUOTAS_v236`,
/// `FILTERED_QUOTAS_v257`; the limits view leaves the same out).
#[must_use]
pub fn left_out(version: Microversion, resource: Resource) -> bool {
    dropped(version, resource, 36)
}

/// A quota set view: the limits (with the project's `id` but in an update's
/// answer), each resource `version` shows by name, in Nova's order.
#[must_use]
pub fn quota_set_view(project: Option<&str>, limits: &QuotaSet, version: Microversion) -> Value {
    let mut view = Map::new();
    if let Some(project) = project {
        view.insert("id".into(), json!(project));
    }
    for (resource, limit) in limits.iter().filter(|(r, _)| !left_out(version, *r)) {
        view.insert(resource.name().into(), json!(limit));
    }
    json!({"quota_set": view})
}

/// The detail view: each resource's limit, what is in use, and 0 reserved
/// (Nova reserves nothing since it counts usage).
#[must_use]
pub fn quota_set_detail_view(project: &str, limits: &QuotaSet, usage: &Usage, version: Microversion) -> Value {
    let mut view = Map::new();
    view.insert("id".into(), json!(project));
    for (resource, limit) in limits.iter().filter(|(r, _)| !left_out(version, *r)) {
        let detail = json!({"in_use": usage.in_use(resource), "limit": limit, "reserved": 0});
        view.insert(resource.name().into(), detail);
    }
    json!({"quota_set": view})
}

/// `?user_id=`: the first one given with a value (Nova reads the query with
/// blank values dropped); other parameters ignored, or refused from 2.75.
fn user_id(query: RawQuery, version: Microversion) -> ApiResult<Option<String>> {
    let query = QueryParams::read(query)?;
    if version.at_least(75) {
        query.only(&["user_id"])?;
    }
    Ok(query.first_given("user_id").map(str::to_owned))
}

/// The project `id` and the user in it `?user_id=` names, once the caller may
/// `rule` on that project (Nova checks its policy before the query).
fn project_and_user(
    caller: &Caller,
    version: Microversion,
    rule: &'static str,
    id: &str,
    query: RawQuery,
) -> ApiResult<(ProjectId, Option<String>)> {
    caller.authorize_project(rule, id)?;
    Ok((ProjectId::from(id), user_id(query, version)?))
}

async fn show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let (project, user) = project_and_user(&caller, version, "os_compute_api:os-quota-sets:show", &id, query)?;
    let quotas = state.quotas().quota_usage(&project, user.as_deref()).await?;
    Ok(Json(quota_set_view(Some(&id), &quotas.limits, version)))
}

async fn detail(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let (project, user) = project_and_user(&caller, version, "os_compute_api:os-quota-sets:detail", &id, query)?;
    let quotas = state.quotas().quota_usage(&project, user.as_deref()).await?;
    Ok(Json(quota_set_detail_view(&id, &quotas.limits, &quotas.usage, version)))
}

async fn defaults(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.authorize_project("os_compute_api:os-quota-sets:defaults", &id)?;
    let defaults = state.quotas().default_quotas().await?;
    Ok(Json(quota_set_view(Some(&id), &defaults, version)))
}

/// 200 with the limits in force afterwards (without `id`, as Nova answers).
async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    query: RawQuery,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let (project, user) = project_and_user(&caller, version, "os_compute_api:os-quota-sets:update", &id, query)?;
    let (limits, force) = parse_update(&body, version)?;
    let limits = state
        .quotas()
        .set_quotas(&project, user.as_deref(), limits, force)
        .await?;
    Ok(Json(quota_set_view(None, &limits, version)))
}

/// 202 with no body, as Nova answers (a project's limits go with its users').
async fn delete(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    query: RawQuery,
) -> ApiResult<StatusCode> {
    let (project, user) = project_and_user(&caller, version, "os_compute_api:os-quota-sets:delete", &id, query)?;
    state.quotas().delete_quotas(&project, user.as_deref()).await?;
    Ok(StatusCode::ACCEPTED)
}

/// Nova's update schema of `version`: `{"quota_set": {...}}` with any of the
/// resources it shows (an integer, or digits in a string, of at least -1) and
/// `force`; then `networks`, which the schema still admits, refused on its own.
fn parse_update(body: &Bytes, version: Microversion) -> ApiResult<(Vec<(Resource, i64)>, bool)> {
    let body: Value = wire::parse_body(body)?;
    let top = schema::object(None, &body, &["quota_set"], &["quota_set"])?;
    let mut allowed: Vec<&str> = Resource::ALL
        .iter()
        .filter(|r| !left_out(version, **r))
        .map(|r| r.name())
        .collect();
    allowed.extend(["force", "networks"]);
    let fields = schema::object(Some("quota_set"), &top["quota_set"], &allowed, &[])?;
    let mut limits = Vec::new();
    let mut force = false;
    for (key, value) in fields {
        if key == "force" {
            force = schema::boolean(key, value)?;
            continue;
        }
        let limit = quota_value(key, value)?;
        if let Ok(resource) = key.parse::<Resource>() {
            limits.push((resource, limit));
        }
    }
    if fields.contains_key("networks") {
        return Err(ApiError::BadRequest("The networks quota has been removed".into()));
    }
    Ok((limits, force))
}

/// Nova's `common_quota`: an integer from -1 to 2³¹-1, or a string of digits
/// with an optional minus (read as Python's `int` reads it). A string beyond
/// the database's integer is refused like a number (Nova would fail storing it).
pub(crate) fn quota_value(key: &str, value: &Value) -> ApiResult<i64> {
    let reason = match value {
        Value::Number(n) => match n.as_i64() {
            Some(v) if v < MIN_LIMIT => format!("{v} is less than the minimum of {MIN_LIMIT}"),
            Some(v) if v > MAX_LIMIT => format!("{v} is greater than the maximum of {MAX_LIMIT}"),
            Some(v) => return Ok(v),
            None if n.is_u64() => format!("{n} is greater than the maximum of {MAX_LIMIT}"),
            None => format!("{} is not of type 'integer', 'string'", schema::python_repr(value)),
        },
        Value::String(text) => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                format!("{} does not match '^-?[0-9]+$'", schema::python_repr(value))
            } else {
                match text.parse::<i64>() {
                    Ok(v) if v <= MAX_LIMIT => return Ok(v),
                    _ => format!("{text} is greater than the maximum of {MAX_LIMIT}"),
                }
            }
        }
        other => format!("{} is not of type 'integer', 'string'", schema::python_repr(other)),
    };
    Err(schema::invalid(key, value, &reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: Value) -> String {
        message_at(body, 1)
    }

    fn message_at(body: Value, minor: u16) -> String {
        parse_update(&Bytes::from(body.to_string()), Microversion::new(minor))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn updates_are_read_as_novas_schema_reads_them() {
        let body = json!({"quota_set": {"ram": "5120", "cores": 2, "instances": -1, "force": "True"}});
        let (mut limits, force) = parse_update(&Bytes::from(body.to_string()), Microversion::MIN).unwrap();
        limits.sort();
        assert_eq!(
            limits,
            [(Resource::Cores, 2), (Resource::Instances, -1), (Resource::Ram, 5120)]
        );
        assert!(force);
        let (_, force) = parse_update(&Bytes::from(json!({"quota_set": {}}).to_string()), Microversion::MIN).unwrap();
        assert!(!force, "force is off unless asked for");
    }

    #[test]
    fn bad_updates_get_novas_messages() {
        for (body, want) in [
            (json!({}), "'quota_set' is a required property".to_owned()),
            (
                json!({"quota_set": {"ram": "abc"}}),
                "Invalid input for field/attribute ram. Value: abc. 'abc' does not match '^-?[0-9]+$'".into(),
            ),
            (
                json!({"quota_set": {"ram": -2}}),
                "Invalid input for field/attribute ram. Value: -2. -2 is less than the minimum of -1".into(),
            ),
            (
                json!({"quota_set": {"cores": 2_147_483_648_i64}}),
                "Invalid input for field/attribute cores. Value: 2147483648. 2147483648 is greater than the maximum of 2147483647".into(),
            ),
            (
                json!({"quota_set": {"instances": 1.5}}),
                "Invalid input for field/attribute instances. Value: 1.5. 1.5 is not of type 'integer', 'string'".into(),
            ),
            (
                json!({"quota_set": {"instances": null}}),
                "Invalid input for field/attribute instances. Value: None. None is not of type 'integer', 'string'".into(),
            ),
            (
                json!({"quota_set": {"force": "maybe"}}),
                "Invalid input for field/attribute force. Value: maybe. 'maybe' is not one of the boolean values".into(),
            ),
            (json!({"quota_set": {"networks": 5}}), "The networks quota has been removed".into()),
        ] {
            assert_eq!(message(body.clone()), want, "{body}");
        }
        let unknown = message(json!({"quota_set": {"volumes": 5}}));
        assert!(
            unknown.ends_with("Additional properties are not allowed ('volumes' was unexpected)"),
            "{unknown}"
        );
    }

    #[test]
    fn from_2_36_and_2_57_the_left_out_resources_are_refused() {
        let unexpected = |key: &str| format!("Additional properties are not allowed ('{key}' was unexpected)");
        for key in ["fixed_ips", "floating_ips", "security_groups", "security_group_rules"] {
            let body = json!({"quota_set": {key: 1}});
            assert!(
                parse_update(&Bytes::from(body.to_string()), Microversion::new(35)).is_ok(),
                "{key}"
            );
            let refused = message_at(body, 36);
            assert!(refused.ends_with(&unexpected(key)), "{refused}");
        }
        for key in [
            "injected_files",
            "injected_file_content_bytes",
            "injected_file_path_bytes",
        ] {
            let body = json!({"quota_set": {key: 1}});
            assert!(
                parse_update(&Bytes::from(body.to_string()), Microversion::new(56)).is_ok(),
                "{key}"
            );
            let refused = message_at(body, 57);
            assert!(refused.ends_with(&unexpected(key)), "{refused}");
        }
        let body = json!({"quota_set": {"instances": 3, "key_pairs": 4}});
        assert!(parse_update(&Bytes::from(body.to_string()), Microversion::MAX).is_ok());
    }
}
