//! Nova's security group proxies to Neutron, served until 2.35 (404 from
//! 2.36, as Nova): `/v2.1/os-security-groups` (list, with an admin's
//! `all_tenants`, `limit` and `offset`; create, show, update, delete) and
//! `/v2.1/os-security-group-rules` (create, delete). Bodies and refusals are
//! Nova's; the groups are Neutron's, never kept here (see
//! `netcache_compute::ProjectScope` for whose a caller sees).

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use netcache_domain::neutron::SecurityGroup;
use netcache_domain::security_group_rule::{NotAnInteger, PortValue, RuleRequest};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::query_params::RawQuery;
use crate::request::NovaRequest;
use crate::security_group_view::{group_view, rule_view, sorted_views, sources};
use crate::services::last_value;
use crate::{AppState, schema, wire};

/// The last microversion of the proxies.
const LAST_VERSION: u16 = 35;
/// Nova's longest name and description.
const TEXT_MAX: usize = 255;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-security-groups", get(list).post(create))
        .route("/v2.1/os-security-groups/{id}", get(show).put(update).delete(delete))
        .route("/v2.1/os-security-group-rules", post(create_rule))
        .route("/v2.1/os-security-group-rules/{id}", axum::routing::delete(delete_rule))
}

/// Nova's `validate_id`: a group's (or rule's) id is a UUID.
fn group_id(id: &str) -> ApiResult<&str> {
    if uuid::Uuid::parse_str(id).is_ok() {
        Ok(id)
    } else {
        Err(ApiError::BadRequest("Security group id should be uuid".into()))
    }
}

/// Nova's `limit`/`offset`: digits only.
fn count(pairs: &[(String, String)], key: &str) -> ApiResult<Option<usize>> {
    let Some(value) = last_value(pairs, key) else {
        return Ok(None);
    };
    match value.parse::<usize>() {
        Ok(n) if value.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(n)),
        _ => Err(ApiError::BadRequest(format!(
            "Invalid input for query parameters {key}. Value: {value}. '{value}' does not match '^[0-9]*$'"
        ))),
    }
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let (limit, offset) = (count(&pairs, "limit")?, count(&pairs, "offset")?);
    caller.authorize_own_project("os_compute_api:os-security-groups:get")?;
    // A non-admin's `all_tenants` is ignored, as Nova ignores it.
    let every_project = last_value(&pairs, "all_tenants").is_some() && caller.is_admin();
    let project = (!every_project).then(|| caller.project());
    let found = state
        .security_groups()
        .project_security_groups(project.as_ref())
        .await?;
    let max = state.config.max_limit;
    let limit = limit.filter(|n| *n > 0).map_or(max, |n| n.min(max));
    let page: Vec<SecurityGroup> = found
        .groups
        .iter()
        .skip(offset.unwrap_or(0))
        .take(limit)
        .cloned()
        .collect();
    Ok(Json(json!(sorted_views(&found, &page))))
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project("os_compute_api:os-security-groups:show")?;
    let found = state
        .security_groups()
        .security_group(group_id(&id)?, &caller.neutron_scope())
        .await?;
    one_group(&found.groups[0], &found)
}

fn one_group(group: &SecurityGroup, found: &netcache_compute::SecurityGroupsInFull) -> ApiResult<Json<Value>> {
    Ok(Json(json!({"security_group": group_view(group, &sources(found))})))
}

/// Nova's body of a create or an update: a name and a description, each a
/// string of at most 255 characters (other keys are ignored, as Nova's
/// schema allows them).
fn name_and_description(body: &Bytes) -> ApiResult<(String, String)> {
    let body: Value = wire::parse_body(body)?;
    let outer = open_object(None, &body, &["security_group"])?;
    let group = open_object(
        Some("security_group"),
        &outer["security_group"],
        &["name", "description"],
    )?;
    let text = |field: &str| -> ApiResult<String> {
        let value = &group[field];
        let s = schema::string(field, value)?;
        if s.chars().count() > TEXT_MAX {
            return Err(schema::invalid(
                field,
                value,
                &format!("{} is too long", schema::python_repr(value)),
            ));
        }
        Ok(s.to_owned())
    };
    Ok((text("name")?, text("description")?))
}

/// `value` as an object with every `required` key (others allowed).
fn open_object<'a>(field: Option<&str>, value: &'a Value, required: &[&str]) -> ApiResult<&'a Map<String, Value>> {
    let keys: Vec<&str> = value
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    schema::object(field, value, &keys, required)
}

async fn create(NovaRequest { state, caller, version }: NovaRequest, body: Bytes) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    let (name, description) = name_and_description(&body)?;
    caller.authorize_own_project("os_compute_api:os-security-groups:create")?;
    let group = state
        .security_groups()
        .create_security_group(&caller.project(), &name, &description)
        .await?;
    let found = netcache_compute::SecurityGroupsInFull {
        groups: vec![group],
        remote: Vec::new(),
    };
    one_group(&found.groups[0], &found)
}

async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    let (name, description) = name_and_description(&body)?;
    caller.authorize_own_project("os_compute_api:os-security-groups:update")?;
    let id = group_id(&id)?;
    let found = state
        .security_groups()
        .update_security_group(id, &caller.neutron_scope(), &name, &description)
        .await?;
    one_group(&found.groups[0], &found)
}

async fn delete(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<StatusCode> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project("os_compute_api:os-security-groups:delete")?;
    state
        .security_groups()
        .delete_security_group(group_id(&id)?, &caller.neutron_scope())
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// A port as Python's `int()` reads it (a number, a numeric string, a bool).
fn port(value: &Value) -> Option<PortValue> {
    match value {
        Value::Null => None,
        #[allow(clippy::cast_possible_truncation)]
        Value::Number(n) => Some(
            n.as_i64()
                .or_else(|| n.as_f64().map(|f| f.trunc() as i64))
                .ok_or(NotAnInteger),
        ),
        Value::String(s) => Some(s.trim().parse().map_err(|_| NotAnInteger)),
        Value::Bool(b) => Some(Ok(i64::from(*b))),
        _ => Some(Err(NotAnInteger)),
    }
}

/// A string as Python's `str()` gives it (`None` for null).
fn text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(schema::python_repr(other)),
    }
}

/// `field` of `rule`, a UUID string (`None`: absent, or null where allowed).
fn uuid_field(rule: &Map<String, Value>, field: &str) -> ApiResult<Option<String>> {
    match rule.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::String(s)) if uuid::Uuid::parse_str(s).is_err() => Err(schema::invalid(
            field,
            value,
            &format!("{} is not a 'uuid'", schema::python_repr(value)),
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(schema::not_of_type(field, other, "string")),
    }
}

async fn create_rule(NovaRequest { state, caller, version }: NovaRequest, body: Bytes) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    let body: Value = wire::parse_body(&body)?;
    let outer = open_object(None, &body, &["security_group_rule"])?;
    let rule = open_object(
        Some("security_group_rule"),
        &outer["security_group_rule"],
        &["parent_group_id"],
    )?;
    let parent = uuid_field(rule, "parent_group_id")?
        .ok_or_else(|| schema::not_of_type("parent_group_id", &Value::Null, "string"))?;
    let request = RuleRequest {
        protocol: text(rule.get("ip_protocol")),
        from_port: rule.get("from_port").and_then(port),
        to_port: rule.get("to_port").and_then(port),
        cidr: text(rule.get("cidr")),
        group_id: uuid_field(rule, "group_id")?,
    };
    caller.authorize_own_project("os_compute_api:os-security-groups:rule:create")?;
    let (made, source) = state
        .security_groups()
        .create_security_group_rule(&parent, &caller.neutron_scope(), &request)
        .await?;
    let known = source.iter().map(|g| (g.id.as_str(), g)).collect();
    let view = rule_view(&made.security_group_id, &made, &known);
    Ok(Json(json!({"security_group_rule": view})))
}

async fn delete_rule(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project("os_compute_api:os-security-groups:rule:delete")?;
    state
        .security_groups()
        .delete_security_group_rule(group_id(&id)?, &caller.neutron_scope())
        .await?;
    Ok(StatusCode::ACCEPTED)
}
