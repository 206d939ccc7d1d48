//! Nova 34's response schemas of os-aggregates (`schemas/aggregates.py`):
//! `_aggregate_response`, with `uuid` from 2.41, and a create's answer without
//! `hosts` and `metadata`. Nova writes the times without a zone (its
//! `date-time` format is not checked against them); the copies say what it
//! writes.

use serde_json::{Value, json};

use super::{naive_date_time, object};

/// One aggregate at 2.`version`; `whole` with its hosts and metadata.
pub fn aggregate(version: u16, whole: bool) -> Value {
    let mut properties = json!({
        "availability_zone": {"type": ["null", "string"]},
        "created_at": naive_date_time(),
        "deleted": {"type": "boolean"},
        "deleted_at": {"anyOf": [{"type": "null"}, naive_date_time()]},
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "updated_at": {"anyOf": [{"type": "null"}, naive_date_time()]},
    });
    let mut required = vec![
        "availability_zone",
        "created_at",
        "deleted",
        "deleted_at",
        "id",
        "name",
        "updated_at",
    ];
    if whole {
        properties["hosts"] = json!({"type": ["array", "null"], "items": {"type": "string"}});
        properties["metadata"] = json!({"type": ["null", "object"], "additionalProperties": true});
        required.extend(["hosts", "metadata"]);
    }
    if version >= 41 {
        properties["uuid"] = json!({"type": "string", "format": "uuid"});
        required.push("uuid");
    }
    object(properties, &required)
}

/// `show_response` (and update, add_host, remove_host, set_metadata).
pub fn show(version: u16) -> Value {
    object(json!({"aggregate": aggregate(version, true)}), &["aggregate"])
}

/// `create_response`.
pub fn create(version: u16) -> Value {
    object(json!({"aggregate": aggregate(version, false)}), &["aggregate"])
}

/// `index_response`.
pub fn index(version: u16) -> Value {
    object(
        json!({"aggregates": {"type": "array", "items": aggregate(version, true)}}),
        &["aggregates"],
    )
}
