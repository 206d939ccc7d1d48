//! Nova 34's response schemas of os-hosts (`schemas/hosts.py`).

use serde_json::{Value, json};

use super::object;

/// `index_response`.
pub fn index() -> Value {
    let host = object(
        json!({"host_name": {"type": "string"}, "service": {"type": "string"}, "zone": {"type": "string"}}),
        &["host_name", "service", "zone"],
    );
    object(json!({"hosts": {"type": "array", "items": host}}), &["hosts"])
}

/// `show_response`.
pub fn show() -> Value {
    let resource = object(
        json!({
            "cpu": {"type": "integer"},
            "disk_gb": {"type": "integer"},
            "host": {"type": "string"},
            "memory_mb": {"type": "integer"},
            "project": {"type": "string"},
        }),
        &["cpu", "disk_gb", "host", "memory_mb", "project"],
    );
    let item = object(json!({"resource": resource}), &["resource"]);
    object(json!({"host": {"type": "array", "items": item}}), &["host"])
}

/// `update_response`.
pub fn update() -> Value {
    object(
        json!({
            "host": {"type": "string"},
            "maintenance_mode": {"enum": ["on_maintenance", "off_maintenance"]},
            "status": {"enum": ["enabled", "disabled"]},
        }),
        &["host"],
    )
}
