//! Nova 34's response schemas of os-floating-ips and os-floating-ip-pools
//! (`schemas/floating_ips.py`, `schemas/floating_ip_pools.py`).

use serde_json::{Value, json};

use super::object;

fn floating_ip() -> Value {
    object(
        json!({
            "fixed_ip": {"type": ["string", "null"], "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
            "id": {"type": "string", "format": "uuid"},
            "instance_id": {"type": ["string", "null"], "format": "uuid"},
            "ip": {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
            "pool": {"type": "string"},
        }),
        &["fixed_ip", "id", "instance_id", "ip", "pool"],
    )
}

/// `show_response` (and `create_response`).
pub fn show() -> Value {
    object(json!({"floating_ip": floating_ip()}), &["floating_ip"])
}

/// `index_response`.
pub fn index() -> Value {
    object(
        json!({"floating_ips": {"type": "array", "items": floating_ip()}}),
        &["floating_ips"],
    )
}

/// The pools' `index_response`.
pub fn pools() -> Value {
    let pool = object(json!({"name": {"type": "string"}}), &["name"]);
    json!({
        "type": "object",
        "properties": {"floating_ip_pools": {"type": "array", "items": pool}},
        "required": ["floating_ip_pools"],
    })
}
