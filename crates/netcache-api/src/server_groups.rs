//! `/v2.1/os-server-groups`: create (2.1 `policies`, 2.15 the soft policies,
//! 2.64 `policy` and `rules`), list (an admin's `all_projects`, `limit` and
//! `offset`), show and delete, with Nova's request schemas, messages, policy
//! rules and views per microversion (2.13 adds `project_id` and `user_id`).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::{GroupView, NewServerGroup};
use netcache_domain::server_group::GroupPolicy;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{AppState, Caller, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-server-groups", get(list).post(create))
        .route("/v2.1/os-server-groups/{id}", get(show).delete(delete))
}

/// A server's `server_groups` (its group's id, or none) from 2.71, for show,
/// update and rebuild: `None` before it.
pub(crate) async fn of_server(
    state: &AppState,
    version: Microversion,
    server: netcache_domain::ServerId,
) -> ApiResult<Option<Vec<String>>> {
    if !version.at_least(71) {
        return Ok(None);
    }
    let groups = state.server_groups().groups_of_server(server).await?;
    Ok(Some(groups.iter().map(|g| g.hyphenated().to_string()).collect()))
}

/// Nova's `max_limit`, which `limited` caps a list at.
const MAX_LIMIT: usize = 1000;

/// The view of a group at `version`: only its live members.
fn view(group: &GroupView, version: Microversion) -> Value {
    let g = &group.group;
    let mut view = json!({
        "id": g.id.hyphenated().to_string(),
        "name": g.name,
        "members": group.members.iter().map(ToString::to_string).collect::<Vec<_>>(),
    });
    if version.at_least(64) {
        view["policy"] = json!(g.policy.name());
        view["rules"] = match g.max_server_per_host {
            Some(n) => json!({"max_server_per_host": n}),
            None => json!({}),
        };
    } else {
        view["policies"] = json!([g.policy.name()]);
        view["metadata"] = json!({});
    }
    if version.at_least(13) {
        view["project_id"] = json!(g.project_id.as_str());
        view["user_id"] = json!(g.user_id);
    }
    view
}

fn group_id(text: &str) -> ApiResult<uuid::Uuid> {
    // Nova looks any other text up and finds no group.
    uuid::Uuid::parse_str(text).map_err(|_| ApiError::NotFound(format!("Instance group {text} could not be found.")))
}

async fn show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> ApiResult<Json<Value>> {
    if version.at_least(102) {
        no_other_query(&query, &[])?;
    }
    let group = state.server_groups().server_group(group_id(&id)?).await?;
    caller.authorize_project("os_compute_api:os-server-groups:show", group.group.project_id.as_str())?;
    Ok(Json(json!({"server_group": view(&group, version)})))
}

async fn delete(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let id = group_id(&id)?;
    let group = state.server_groups().server_group(id).await?;
    caller.authorize_project(
        "os_compute_api:os-server-groups:delete",
        group.group.project_id.as_str(),
    )?;
    state.server_groups().delete_server_group(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list(
    NovaRequest { state, caller, version }: NovaRequest,
    Query(query): Query<Vec<(String, String)>>,
) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-server-groups:index")?;
    if version.at_least(75) {
        no_other_query(&query, &["all_projects", "limit", "offset"])?;
    }
    let number = |key: &str| -> ApiResult<Option<usize>> {
        let Some((_, text)) = query.iter().find(|(k, _)| k == key) else {
            return Ok(None);
        };
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ApiError::BadRequest(format!(
                "Invalid input for query parameters {key}. Value: {text}. '{text}' does not match '^[0-9]*$'"
            )));
        }
        Ok(Some(text.parse().unwrap_or(usize::MAX)))
    };
    let (limit, offset) = (number("limit")?, number("offset")?.unwrap_or(0));
    let all = query.iter().any(|(k, _)| k == "all_projects") && caller.ctx.is_admin();
    let project = caller.project();
    let groups = if all {
        caller.authorize("os_compute_api:os-server-groups:index:all_projects")?;
        state.server_groups().server_groups(None).await?
    } else {
        state.server_groups().server_groups(Some(&project)).await?
    };
    // Nova's `limited`: no limit (or 0) is its max_limit.
    let limit = limit.filter(|l| *l > 0).unwrap_or(MAX_LIMIT).min(MAX_LIMIT);
    let views: Vec<Value> = groups
        .iter()
        .skip(offset)
        .take(limit)
        .map(|g| view(g, version))
        .collect();
    Ok(Json(json!({"server_groups": views})))
}

/// Nova's query schemas that allow no other parameter (2.75 for the list,
/// 2.102 for show).
fn no_other_query(query: &[(String, String)], allowed: &[&str]) -> ApiResult<()> {
    let mut keys = Map::new();
    for (key, _) in query {
        keys.insert(key.clone(), Value::Null);
    }
    schema::object(None, &Value::Object(keys), allowed, &[]).map(|_| ())
}

/// Nova answers 200 (not 201).
async fn create(NovaRequest { state, caller, version }: NovaRequest, body: Bytes) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-server-groups:create")?;
    let body: Value = wire::parse_body(&body)?;
    let new = parse_create(&body, version)?;
    let group = state.server_groups().create_server_group(&caller.ctx, new).await?;
    let group = GroupView {
        group,
        members: Vec::new(),
    };
    Ok(Json(json!({"server_group": view(&group, version)})))
}

/// Nova's `create` schemas: `policies` (one item) before 2.64, `policy` and
/// `rules` from it.
fn parse_create(body: &Value, version: Microversion) -> ApiResult<NewServerGroup> {
    let top = schema::object(None, body, &["server_group"], &["server_group"])?;
    let (allowed, required): (&[&str], &[&str]) = if version.at_least(64) {
        (&["name", "policy", "rules"], &["name", "policy"])
    } else {
        (&["name", "policies"], &["name", "policies"])
    };
    let fields = schema::object(Some("server_group"), &top["server_group"], allowed, required)?;
    let name = schema::name(&fields["name"])?;
    let mut names = vec!["anti-affinity", "affinity"];
    if version.at_least(15) {
        names.extend(["soft-anti-affinity", "soft-affinity"]);
    }
    if !version.at_least(64) {
        let policy = one_policy(&fields["policies"], &names)?;
        return Ok(NewServerGroup {
            name,
            policy,
            max_server_per_host: None,
        });
    }
    let policy = policy_named("policy", &fields["policy"], &names)?;
    let max_server_per_host = match fields.get("rules") {
        None => None,
        Some(rules) => {
            let rules = schema::object(Some("rules"), rules, &["max_server_per_host"], &[])?;
            let rule = rules.get("max_server_per_host").map(positive_integer).transpose()?;
            if policy != GroupPolicy::AntiAffinity && !rules.is_empty() {
                return Err(ApiError::BadRequest("Only anti-affinity policy supports rules.".into()));
            }
            rule
        }
    };
    Ok(NewServerGroup {
        name,
        policy,
        max_server_per_host,
    })
}

/// `policies` before 2.64: an array of exactly one of `names`.
fn one_policy(value: &Value, names: &[&str]) -> ApiResult<GroupPolicy> {
    let Value::Array(items) = value else {
        return Err(schema::not_of_type("policies", value, "array"));
    };
    let repr = schema::python_repr(value);
    match items.as_slice() {
        [] => Err(schema::invalid(
            "policies",
            value,
            &format!("{repr} should be non-empty"),
        )),
        [one] => policy_named("0", one, names),
        _ => Err(schema::invalid("policies", value, &format!("{repr} is too long"))),
    }
}

fn policy_named(field: &str, value: &Value, names: &[&str]) -> ApiResult<GroupPolicy> {
    match value.as_str() {
        Some(name) if names.contains(&name) => Ok(name.parse().expect("a policy's name")),
        _ => Err(schema::invalid(
            field,
            value,
            &format!(
                "{} is not one of [{}]",
                schema::python_repr(value),
                names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// Nova's `positive_integer`: an integer, or a string of digits, at least 1.
fn positive_integer(value: &Value) -> ApiResult<u32> {
    let field = "max_server_per_host";
    let number = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        Value::String(_) => {
            return Err(schema::invalid(
                field,
                value,
                &format!("{} does not match '^[0-9]*$'", schema::python_repr(value)),
            ));
        }
        _ => return Err(schema::not_of_type(field, value, "integer', 'string")),
    };
    match number {
        Some(n) if n >= 1 => u32::try_from(n).map_err(|_| schema::invalid(field, value, "is too large")),
        _ => Err(schema::invalid(
            field,
            value,
            &format!("{} is less than the minimum of 1", schema::python_repr(value)),
        )),
    }
}
