//! Nova 34's `schemas/server_groups.py` response schemas, per microversion:
//! 2.1, 2.13 (`project_id`, `user_id`), 2.15 (the soft policies) and 2.64
//! (`policy` and `rules` in place of `policies` and `metadata`).

use serde_json::{Value, json};

use super::object;

fn uuid() -> Value {
    json!({"type": "string", "format": "uuid"})
}

/// A server group at `minor`.
pub fn server_group(minor: u16) -> Value {
    let mut policies = vec!["affinity", "anti-affinity"];
    if minor >= 15 {
        policies.extend(["soft-affinity", "soft-anti-affinity"]);
    }
    let mut properties = json!({
        "id": uuid(),
        "members": {"type": "array", "items": uuid()},
        "name": {"type": "string"},
    });
    let mut required = vec!["id", "members", "name"];
    if minor >= 64 {
        properties["policy"] = json!({"type": "string", "enum": policies});
        properties["rules"] = object(json!({"max_server_per_host": {"type": "integer"}}), &[]);
        required.extend(["policy", "rules"]);
    } else {
        properties["metadata"] = object(json!({}), &[]);
        properties["policies"] = json!({
            "type": "array",
            "items": {"type": "string", "enum": policies},
            "minItems": 0,
            "maxItems": 1,
        });
        required.extend(["metadata", "policies"]);
    }
    if minor >= 13 {
        properties["project_id"] = json!({"type": "string"});
        properties["user_id"] = json!({"type": "string"});
        required.extend(["project_id", "user_id"]);
    }
    object(properties, &required)
}

/// `show_response*` and `create_response*` (the same schemas).
pub fn show(minor: u16) -> Value {
    object(json!({"server_group": server_group(minor)}), &["server_group"])
}

/// `index_response*`.
pub fn index(minor: u16) -> Value {
    object(
        json!({"server_groups": {"type": "array", "items": server_group(minor)}}),
        &["server_groups"],
    )
}
