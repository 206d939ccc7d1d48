//! Nova 34's response schemas of os-services (`schemas/services.py`) and
//! os-availability-zone's detail (`schemas/availability_zone.py`), per
//! microversion. Nova writes a service's `updated_at` as its database time
//! without a zone (`2012-10-29T13:42:02.000000`), which its own `date-time`
//! format is not checked against; the copies say what it writes.

use serde_json::{Value, json};

use super::{naive_date_time, object};

fn nullable_time() -> Value {
    json!({"anyOf": [{"type": "null"}, naive_date_time()]})
}

/// `_service_response` (2.1–2.10), `_v211` (forced_down), `_v253` (uuid ids).
pub fn service(version: u16) -> Value {
    let id = if version >= 53 {
        json!({"type": "string", "format": "uuid"})
    } else {
        json!({"type": "integer"})
    };
    let mut properties = json!({
        "binary": {"type": "string"},
        "disabled_reason": {"type": ["string", "null"]},
        "host": {"type": "string"},
        "id": id,
        "state": {"type": "string", "enum": ["up", "down"]},
        "status": {"type": "string", "enum": ["enabled", "disabled"]},
        "updated_at": nullable_time(),
        "zone": {"type": "string"},
    });
    let mut required = vec![
        "binary",
        "disabled_reason",
        "host",
        "id",
        "state",
        "status",
        "updated_at",
        "zone",
    ];
    if version >= 11 {
        properties["forced_down"] = json!({"type": "boolean"});
        required.push("forced_down");
    }
    object(properties, &required)
}

/// `index_response` at `version`.
pub fn index(version: u16) -> Value {
    object(
        json!({"services": {"type": "array", "items": service(version)}}),
        &["services"],
    )
}

/// `update_response` (before 2.53): a status change or a forced_down change.
pub fn legacy_update() -> Value {
    let status = object(
        json!({
            "binary": {"type": "string"},
            "disabled_reason": {"type": ["string", "null"]},
            "host": {"type": "string"},
            "status": {"type": "string", "enum": ["enabled", "disabled"]},
        }),
        &["binary", "host", "status"],
    );
    let forced = object(
        json!({"binary": {"type": "string"}, "forced_down": {"type": "boolean"}, "host": {"type": "string"}}),
        &["binary", "forced_down", "host"],
    );
    object(
        json!({"service": {"type": "object", "oneOf": [status, forced]}}),
        &["service"],
    )
}

/// `update_response_v253`: the whole service.
pub fn update_v253() -> Value {
    object(json!({"service": service(53)}), &["service"])
}

/// `detail_response` of os-availability-zone.
pub fn zone_detail() -> Value {
    let service = object(
        json!({"active": {"type": "boolean"}, "available": {"type": "boolean"}, "updated_at": nullable_time()}),
        &["active", "available", "updated_at"],
    );
    let hosts = json!({
        "type": ["null", "object"],
        "patternProperties": {"^.+$": {
            "type": "object",
            "patternProperties": {"^.+$": service},
            "additionalProperties": false,
        }},
        "additionalProperties": false,
    });
    let zone = object(
        json!({
            "zoneName": {"type": "string"},
            "zoneState": object(json!({"available": {"type": "boolean"}}), &["available"]),
            "hosts": hosts,
        }),
        &["zoneName", "zoneState", "hosts"],
    );
    object(
        json!({"availabilityZoneInfo": {"type": "array", "items": zone}}),
        &["availabilityZoneInfo"],
    )
}
