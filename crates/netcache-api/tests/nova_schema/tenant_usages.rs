//! Copies of Nova 34's os-simple-tenant-usage response schemas
//! (`schemas/simple_tenant_usage.py`): `index_response`, `show_response` (a
//! project with no server in the window is `{}`), and from 2.40 their
//! `tenant_usages_links` / `tenant_usage_links`. Nova writes the times as
//! naive datetimes (`2025-06-15T10:11:12.000000`), which its own `date-time`
//! format is not checked against; the copies say what it writes. Tempest's
//! stricter needs (every size of a server, `server_usages` in a show) are
//! [`TEMPEST_SERVER_USAGE_KEYS`] and the show's required key.

use serde_json::{Value, json};

use super::keypairs::collection_links;
use super::{naive_date_time, object};

/// Every key of Tempest's server usage, all required there (Nova's schema
/// lets `local_gb`, `memory_mb` and `vcpus` be left out).
pub const TEMPEST_SERVER_USAGE_KEYS: [&str; 12] = [
    "ended_at",
    "flavor",
    "hours",
    "instance_id",
    "local_gb",
    "memory_mb",
    "name",
    "started_at",
    "state",
    "tenant_id",
    "uptime",
    "vcpus",
];

/// `parameter_types.project_id`.
fn project_id() -> Value {
    json!({"type": "string", "pattern": "^[a-zA-Z0-9-]*$", "minLength": 1, "maxLength": 255})
}

/// `_server_usage_response`.
fn server_usage() -> Value {
    object(
        json!({
            "ended_at": {"anyOf": [naive_date_time(), {"type": "null"}]},
            "flavor": {"type": "string"},
            "hours": {"type": "number"},
            "instance_id": {"type": "string", "format": "uuid"},
            "local_gb": {"type": "integer", "minimum": 0},
            "memory_mb": {"type": "integer", "minimum": 1},
            "name": {"type": "string"},
            "started_at": naive_date_time(),
            "state": {"type": "string", "enum": [
                "active", "building", "error", "paused", "rescued", "resized", "shelved",
                "shelved_offloaded", "stopped", "suspended", "terminated",
            ]},
            "tenant_id": project_id(),
            "uptime": {"type": "integer", "minimum": 0},
            "vcpus": {"type": "integer", "minimum": 1},
        }),
        &[
            "ended_at",
            "flavor",
            "hours",
            "instance_id",
            "name",
            "state",
            "started_at",
            "tenant_id",
            "uptime",
        ],
    )
}

/// `_usage_response`: a project's summary (`server_usages` required in a show).
fn usage(show: bool) -> Value {
    let mut required = vec![
        "start",
        "stop",
        "tenant_id",
        "total_hours",
        "total_local_gb_usage",
        "total_memory_mb_usage",
        "total_vcpus_usage",
    ];
    if show {
        required.push("server_usages");
    }
    object(
        json!({
            "server_usages": {"type": "array", "items": server_usage()},
            "start": naive_date_time(),
            "stop": naive_date_time(),
            "tenant_id": project_id(),
            "total_hours": {"type": "number", "minimum": 0},
            "total_local_gb_usage": {"type": "number", "minimum": 0},
            "total_memory_mb_usage": {"type": "number", "minimum": 0},
            "total_vcpus_usage": {"type": "number", "minimum": 0},
        }),
        &required,
    )
}

/// `GET /os-simple-tenant-usage` at `2.minor`: `index_response`, `_v240`.
pub fn index(minor: u16) -> Value {
    let mut properties = json!({"tenant_usages": {"type": "array", "items": usage(false)}});
    if minor >= 40 {
        properties["tenant_usages_links"] = collection_links();
    }
    object(properties, &["tenant_usages"])
}

/// `GET /os-simple-tenant-usage/{tenant_id}` at `2.minor`: `show_response`, `_v240`.
pub fn show(minor: u16) -> Value {
    let empty = object(json!({}), &[]);
    let mut properties = json!({"tenant_usage": {"oneOf": [usage(true), empty]}});
    if minor >= 40 {
        properties["tenant_usage_links"] = collection_links();
    }
    object(properties, &["tenant_usage"])
}
