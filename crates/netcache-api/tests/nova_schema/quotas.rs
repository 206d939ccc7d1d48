//! Nova's response schemas (Tempest's copies) of os-quota-sets,
//! os-quota-class-sets, limits and the extensions list: 2.1's, and Nova 34's
//! `*_v236`, `*_v239`, `*_v250` and `*_v257` of each (the `_at(minor)` forms),
//! which drop the nova-network, image and personality resources.

use serde_json::{Value, json};

use super::{date_time, object};

/// The 2.1 quota resources (`server_groups`/`server_group_members` may be left
/// out; netcache shows them as Nova does).
const REQUIRED: [&str; 12] = [
    "instances",
    "cores",
    "ram",
    "floating_ips",
    "fixed_ips",
    "metadata_items",
    "key_pairs",
    "security_groups",
    "security_group_rules",
    "injected_files",
    "injected_file_content_bytes",
    "injected_file_path_bytes",
];
const OPTIONAL: [&str; 2] = ["server_group_members", "server_groups"];

/// The quota resources Nova 34 leaves out at `2.minor` (`FILTERED_QUOTAS_v236`, `_v257`).
fn quotas_left_out(minor: u16) -> Vec<&'static str> {
    let mut out = Vec::new();
    if minor >= 36 {
        out.extend(["fixed_ips", "floating_ips", "security_group_rules", "security_groups"]);
    }
    if minor >= 57 {
        out.extend([
            "injected_files",
            "injected_file_content_bytes",
            "injected_file_path_bytes",
        ]);
    }
    out
}

fn quota_set(item: &Value, with_id: bool) -> Value {
    quota_set_at(item, with_id, 1)
}

fn quota_set_at(item: &Value, with_id: bool, minor: u16) -> Value {
    let out = quotas_left_out(minor);
    let mut properties = serde_json::Map::new();
    for name in REQUIRED.iter().chain(&OPTIONAL).filter(|n| !out.contains(n)) {
        properties.insert((*name).to_owned(), item.clone());
    }
    let mut required: Vec<&str> = REQUIRED.iter().copied().filter(|n| !out.contains(n)).collect();
    if with_id {
        properties.insert("id".into(), json!({"type": "string"}));
        required.push("id");
    }
    object(
        json!({"quota_set": object(Value::Object(properties), &required)}),
        &["quota_set"],
    )
}

/// `PUT /os-quota-sets/{id}`: the limits, without `id`.
pub fn update_quota_set() -> Value {
    quota_set(&json!({"type": "integer"}), false)
}

/// `GET /os-quota-sets/{id}` and `…/defaults`.
pub fn get_quota_set() -> Value {
    quota_set(&json!({"type": "integer"}), true)
}

/// `GET /os-quota-sets/{id}/detail`: each resource's limit, usage and reservation.
pub fn get_quota_set_details() -> Value {
    let detail = json!({"type": "object", "properties": {
        "reserved": {"type": "integer"},
        "limit": {"type": "integer"},
        "in_use": {"type": "integer"},
    }});
    quota_set(&detail, true)
}

/// `PUT /os-quota-sets/{id}` at `2.minor`.
pub fn update_quota_set_at(minor: u16) -> Value {
    quota_set_at(&json!({"type": "integer"}), false, minor)
}

/// `GET /os-quota-sets/{id}` and `…/defaults` at `2.minor`.
pub fn get_quota_set_at(minor: u16) -> Value {
    quota_set_at(&json!({"type": "integer"}), true, minor)
}

/// `GET /os-quota-sets/{id}/detail` at `2.minor`.
pub fn get_quota_set_details_at(minor: u16) -> Value {
    let detail = json!({"type": "object", "properties": {
        "reserved": {"type": "integer"},
        "limit": {"type": "integer"},
        "in_use": {"type": "integer"},
    }});
    quota_set_at(&detail, true, minor)
}

/// The resources Nova 34's quota class views have at `2.minor` (its
/// `quota_classes` response schemas, which Tempest's `v2_1`/`v2_50`/`v2_57`
/// copies match): 2.1's twelve, without the server group ones, until 2.49; from
/// 2.50 the nova-network ones gone and the server group ones in; from 2.57 the
/// personality ones gone too.
fn quota_class_keys(minor: u16) -> Vec<&'static str> {
    let mut keys: Vec<&str> = REQUIRED.to_vec();
    if minor >= 50 {
        keys.retain(|k| !["fixed_ips", "floating_ips", "security_group_rules", "security_groups"].contains(k));
        keys.extend(OPTIONAL);
    }
    if minor >= 57 {
        keys.retain(|k| {
            ![
                "injected_files",
                "injected_file_content_bytes",
                "injected_file_path_bytes",
            ]
            .contains(k)
        });
    }
    keys
}

fn quota_class_set_at(with_id: bool, minor: u16) -> Value {
    let mut required = quota_class_keys(minor);
    let mut properties = serde_json::Map::new();
    for name in &required {
        properties.insert((*name).to_owned(), json!({"type": "integer", "minimum": -1}));
    }
    if with_id {
        properties.insert("id".into(), json!({"type": "string"}));
        required.push("id");
    }
    object(
        json!({"quota_class_set": object(Value::Object(properties), &required)}),
        &["quota_class_set"],
    )
}

/// `GET /os-quota-class-sets/{id}` at `2.minor`: the class's values and its `id`.
pub fn get_quota_class_set_at(minor: u16) -> Value {
    quota_class_set_at(true, minor)
}

/// `PUT /os-quota-class-sets/{id}` at `2.minor`: the values, without `id`.
pub fn update_quota_class_set_at(minor: u16) -> Value {
    quota_class_set_at(false, minor)
}

/// `GET /limits` at 2.1.
pub fn get_limit() -> Value {
    get_limit_at(1)
}

/// `GET /limits` at `2.minor`: `index_response_v236` drops the network
/// proxies' limits, `_v239` `maxImageMeta`, `_v257` the personality ones.
pub fn get_limit_at(minor: u16) -> Value {
    let mut out = Vec::new();
    if minor >= 36 {
        out.extend([
            "maxSecurityGroups",
            "maxSecurityGroupRules",
            "maxTotalFloatingIps",
            "totalFloatingIpsUsed",
            "totalSecurityGroupsUsed",
        ]);
    }
    if minor >= 39 {
        out.push("maxImageMeta");
    }
    if minor >= 57 {
        out.extend(["maxPersonality", "maxPersonalitySize"]);
    }
    let integer = json!({"type": "integer"});
    let required = [
        "maxImageMeta",
        "maxPersonality",
        "maxPersonalitySize",
        "maxSecurityGroupRules",
        "maxSecurityGroups",
        "maxServerMeta",
        "maxTotalCores",
        "maxTotalFloatingIps",
        "maxTotalInstances",
        "maxTotalKeypairs",
        "maxTotalRAMSize",
        "totalCoresUsed",
        "totalFloatingIpsUsed",
        "totalInstancesUsed",
        "totalRAMUsed",
        "totalSecurityGroupsUsed",
    ];
    let required: Vec<&str> = required.into_iter().filter(|n| !out.contains(n)).collect();
    let mut properties = serde_json::Map::new();
    for name in required
        .iter()
        .chain(&["maxServerGroupMembers", "maxServerGroups", "totalServerGroupsUsed"])
    {
        properties.insert((*name).to_owned(), integer.clone());
    }
    let rate_limit = object(
        json!({
            "next-available": {"type": "string"},
            "remaining": {"type": "integer"},
            "unit": {"type": "string"},
            "value": {"type": "integer"},
            "verb": {"type": "string"},
        }),
        &[],
    );
    let rate = object(
        json!({
            "limit": {"type": "array", "items": rate_limit},
            "regex": {"type": "string"},
            "uri": {"type": "string"},
        }),
        &[],
    );
    object(
        json!({"limits": object(json!({
            "absolute": object(Value::Object(properties), &required),
            "rate": {"type": "array", "items": rate},
        }), &["absolute", "rate"])}),
        &["limits"],
    )
}

fn extension() -> Value {
    object(
        json!({
            "updated": date_time(),
            "name": {"type": "string"},
            "links": {"type": "array"},
            "namespace": {"type": "string", "format": "uri"},
            "alias": {"type": "string"},
            "description": {"type": "string"},
        }),
        &["updated", "name", "links", "namespace", "alias", "description"],
    )
}

/// `GET /extensions`.
pub fn list_extensions() -> Value {
    object(
        json!({"extensions": {"type": "array", "items": extension()}}),
        &["extensions"],
    )
}

/// `GET /extensions/{alias}` (Tempest checks no schema; the list's entry).
pub fn get_extension() -> Value {
    object(json!({"extension": extension()}), &["extension"])
}
