//! `/v2.1/os-quota-class-sets/{id}` (admin): Nova's quota classes, as its
//! database driver keeps them. Any class name is a class: one never set shows
//! the deployment's defaults (`[quota]`), never 404. An update sets each value
//! given (the class's values are kept per resource, in the store) and answers
//! the class without its `id`. The `default` class's values are every
//! project's defaults, so an update of it changes `os-quota-sets`' defaults and
//! what boots, key pairs, server groups and metadata are held to.
//!
//! The views follow Nova's own microversions for classes, not the quota sets':
//! until 2.49 the nova-network resources are shown and the server group ones
//! are not (an update still sets them); from 2.50 the server group ones are
//! shown and the nova-network ones are left out and refused in an update;
//! from 2.57 the personality ones (`injected_file*`) too. From 2.102 a query
//! parameter of the show is refused.

use axum::body::Bytes;
use axum::extract::Path;
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::quota::{QuotaSet, Resource};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::quota_sets::{dropped, quota_value};
use crate::request::{NovaRead, NovaRequest};
use crate::{AppState, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/os-quota-class-sets/{id}", get(show).put(update))
}

/// The longest class name Nova stores (`check_string_length`).
const MAX_CLASS_NAME: usize = 255;

/// The resources in the order of Nova's update schema (`_quota_resources`),
/// which is the order its jsonschema checks the values in.
const SCHEMA_ORDER: [Resource; 14] = [
    Resource::Instances,
    Resource::Cores,
    Resource::Ram,
    Resource::FloatingIps,
    Resource::FixedIps,
    Resource::MetadataItems,
    Resource::KeyPairs,
    Resource::SecurityGroups,
    Resource::SecurityGroupRules,
    Resource::InjectedFiles,
    Resource::InjectedFileContentBytes,
    Resource::InjectedFilePathBytes,
    Resource::ServerGroups,
    Resource::ServerGroupMembers,
];

/// Whether an update at `version` refuses `resource` (Nova's `update_v250`,
/// `update_v257`).
fn refused(version: Microversion, resource: Resource) -> bool {
    dropped(version, resource, 50)
}

/// Whether the views of `version` leave `resource` out: what an update refuses,
/// and before 2.50 the server group ones (Nova's `EXTENDED_QUOTAS`).
fn left_out(version: Microversion, resource: Resource) -> bool {
    match resource {
        Resource::ServerGroups | Resource::ServerGroupMembers => !version.at_least(50),
        _ => refused(version, resource),
    }
}

/// A quota class set view: the values (with the class's `id` but in an
/// update's answer), each resource `version` shows by name, in Nova's order.
fn quota_class_set_view(class_name: Option<&str>, values: &QuotaSet, version: Microversion) -> Value {
    let mut view = Map::new();
    if let Some(class_name) = class_name {
        view.insert("id".into(), json!(class_name));
    }
    for (resource, value) in values.iter().filter(|(r, _)| !left_out(version, *r)) {
        view.insert(resource.name().into(), json!(value));
    }
    json!({"quota_class_set": view})
}

async fn show(NovaRead(NovaRequest { state, caller, version }, id): NovaRead<String>) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-quota-class-sets:show")?;
    let values = state.quotas().quota_class(&id).await?;
    Ok(Json(quota_class_set_view(Some(&id), &values, version)))
}

/// 200 with the class's values afterwards (without `id`, as Nova answers).
/// The body is checked before the policy, the class name after, as in Nova.
async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let limits = parse_update(&body, version)?;
    caller.authorize("os_compute_api:os-quota-class-sets:update")?;
    let length = id.chars().count();
    if length > MAX_CLASS_NAME {
        return Err(ApiError::BadRequest(format!(
            "quota_class_name has {length} characters, more than {MAX_CLASS_NAME}."
        )));
    }
    let values = state.quotas().set_quota_class(&id, limits).await?;
    Ok(Json(quota_class_set_view(None, &values, version)))
}

/// Nova's update schema of `version`: `{"quota_class_set": {...}}` with any of
/// the resources it accepts (an integer, or digits in a string, from -1 to
/// 2³¹-1), and nothing else. Errors come in the order Nova's jsonschema meets
/// them: the class set's values, then its unexpected keys, then the body's.
fn parse_update(body: &Bytes, version: Microversion) -> ApiResult<Vec<(Resource, i64)>> {
    let body: Value = wire::parse_body(body)?;
    let accepted: Vec<Resource> = SCHEMA_ORDER.into_iter().filter(|r| !refused(version, *r)).collect();
    let mut limits = Vec::new();
    if let Some(set) = body.get("quota_class_set") {
        if let Value::Object(fields) = set {
            for resource in &accepted {
                if let Some(value) = fields.get(resource.name()) {
                    limits.push((*resource, quota_value(resource.name(), value)?));
                }
            }
        }
        let names: Vec<&str> = accepted.iter().map(|r| r.name()).collect();
        schema::object(Some("quota_class_set"), set, &names, &[])?;
    }
    schema::object(None, &body, &["quota_class_set"], &["quota_class_set"])?;
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &Value, minor: u16) -> ApiResult<Vec<(Resource, i64)>> {
        parse_update(&Bytes::from(body.to_string()), Microversion::new(minor))
    }

    fn message(body: &Value, minor: u16) -> String {
        parse(body, minor).unwrap_err().to_string()
    }

    #[test]
    fn updates_are_read_as_novas_schema_reads_them() {
        let body = json!({"quota_class_set": {"ram": "5120", "cores": 2, "server_groups": -1, "fixed_ips": "7"}});
        let mut limits = parse(&body, 1).unwrap();
        limits.sort();
        assert_eq!(
            limits,
            [
                (Resource::Cores, 2),
                (Resource::FixedIps, 7),
                (Resource::Ram, 5120),
                (Resource::ServerGroups, -1)
            ]
        );
        assert_eq!(parse(&json!({"quota_class_set": {}}), 104).unwrap(), []);
    }

    #[test]
    fn bad_updates_get_novas_messages() {
        for (body, want) in [
            (json!({}), "'quota_class_set' is a required property"),
            (
                json!({"quota_class_set": {}, "quota_set": {}}),
                "Additional properties are not allowed ('quota_set' was unexpected)",
            ),
            (
                json!({"quota_class_set": 5}),
                "Invalid input for field/attribute quota_class_set. Value: 5. 5 is not of type 'object'",
            ),
            (
                json!({"quota_class_set": {"ram": "abc"}}),
                "Invalid input for field/attribute ram. Value: abc. 'abc' does not match '^-?[0-9]+$'",
            ),
            (
                json!({"quota_class_set": {"ram": -2}}),
                "Invalid input for field/attribute ram. Value: -2. -2 is less than the minimum of -1",
            ),
            (
                json!({"quota_class_set": {"cores": 2_147_483_648_i64}}),
                "Invalid input for field/attribute cores. Value: 2147483648. 2147483648 is greater than the maximum of 2147483647",
            ),
            (
                json!({"quota_class_set": {"force": true}}),
                "Invalid input for field/attribute quota_class_set. Value: {'force': True}. Additional properties are not allowed ('force' was unexpected)",
            ),
            // The values are checked before the keys, and in Nova's order.
            (
                json!({"quota_class_set": {"volumes": 1, "ram": "x", "instances": "y"}}),
                "Invalid input for field/attribute instances. Value: y. 'y' does not match '^-?[0-9]+$'",
            ),
        ] {
            assert_eq!(message(&body, 1), want, "{body}");
        }
    }

    #[test]
    fn from_2_50_and_2_57_the_left_out_resources_are_refused() {
        let unexpected = |key: &str| {
            format!(
                "Invalid input for field/attribute quota_class_set. Value: {{'{key}': 1}}. Additional properties are not allowed ('{key}' was unexpected)"
            )
        };
        for key in ["fixed_ips", "floating_ips", "security_groups", "security_group_rules"] {
            let body = json!({"quota_class_set": {key: 1}});
            assert!(parse(&body, 49).is_ok(), "{key}");
            assert_eq!(message(&body, 50), unexpected(key));
        }
        for key in [
            "injected_files",
            "injected_file_content_bytes",
            "injected_file_path_bytes",
        ] {
            let body = json!({"quota_class_set": {key: 1}});
            assert!(parse(&body, 56).is_ok(), "{key}");
            assert_eq!(message(&body, 57), unexpected(key));
        }
        let body = json!({"quota_class_set": {"server_groups": 3, "server_group_members": 4}});
        assert!(parse(&body, 1).is_ok(), "accepted (and stored) before 2.50 too");
        assert!(parse(&body, 104).is_ok());
    }

    #[test]
    fn views_show_novas_keys_of_each_version() {
        let keys = |minor: u16| -> Vec<String> {
            let view = quota_class_set_view(Some("c"), &QuotaSet::default(), Microversion::new(minor));
            view["quota_class_set"].as_object().unwrap().keys().cloned().collect()
        };
        let v21 = [
            "id",
            "cores",
            "fixed_ips",
            "floating_ips",
            "injected_file_content_bytes",
            "injected_file_path_bytes",
            "injected_files",
            "instances",
            "key_pairs",
            "metadata_items",
            "ram",
            "security_group_rules",
            "security_groups",
        ];
        assert_eq!(keys(1), v21);
        assert_eq!(keys(49), v21);
        let v250 = [
            "id",
            "cores",
            "injected_file_content_bytes",
            "injected_file_path_bytes",
            "injected_files",
            "instances",
            "key_pairs",
            "metadata_items",
            "ram",
            "server_group_members",
            "server_groups",
        ];
        assert_eq!(keys(50), v250);
        assert_eq!(keys(56), v250);
        let v257 = [
            "id",
            "cores",
            "instances",
            "key_pairs",
            "metadata_items",
            "ram",
            "server_group_members",
            "server_groups",
        ];
        assert_eq!(keys(57), v257);
        assert_eq!(keys(104), v257);
        let update = quota_class_set_view(None, &QuotaSet::default(), Microversion::MIN);
        assert!(update["quota_class_set"].get("id").is_none());
    }
}
