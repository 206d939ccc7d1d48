//! Nova 34's response schemas of os-hypervisors (`schemas/hypervisors.py`):
//! the list (2.1, 2.53 with uuid ids and servers), the detail (2.1, 2.28 with
//! `cpu_info` an object, 2.53, 2.88 without the figures and with `uptime`)
//! and the statistics; before 2.53 the search (the list's) and a pattern's
//! servers.

use serde_json::{Value, json};

use super::object;

fn id(version: u16) -> Value {
    if version >= 53 {
        json!({"type": "string", "format": "uuid"})
    } else {
        json!({"type": "integer"})
    }
}

fn servers() -> Value {
    json!({"type": "array", "items": object(
        json!({"name": {"type": "string"}, "uuid": {"type": "string", "format": "uuid"}}),
        &["name", "uuid"],
    )})
}

fn hypervisor(version: u16) -> Value {
    let mut properties = json!({
        "id": id(version),
        "hypervisor_hostname": {"type": "string"},
        "state": {"enum": ["up", "down"]},
        "status": {"enum": ["enabled", "disabled"]},
    });
    if version >= 53 {
        properties["servers"] = servers();
    }
    object(properties, &["id", "hypervisor_hostname", "state", "status"])
}

const FIGURES: [&str; 11] = [
    "cpu_info",
    "current_workload",
    "free_disk_gb",
    "free_ram_mb",
    "local_gb",
    "local_gb_used",
    "memory_mb",
    "memory_mb_used",
    "running_vms",
    "vcpus",
    "vcpus_used",
];

/// A figure's type: some may be null.
fn figure(field: &str) -> Value {
    match field {
        "current_workload" | "free_disk_gb" | "free_ram_mb" | "running_vms" => json!({"type": ["null", "integer"]}),
        _ => json!({"type": "integer"}),
    }
}

/// `_hypervisor_detail_response` at `version`.
pub fn detail_item(version: u16) -> Value {
    let service = object(
        json!({"disabled_reason": {"type": ["null", "string"]}, "host": {"type": "string"}, "id": id(version)}),
        &["disabled_reason", "host", "id"],
    );
    let mut properties = json!({
        "disk_available_least": {"type": ["null", "integer"]},
        "host_ip": {"type": ["null", "string"]},
        "hypervisor_hostname": {"type": "string"},
        "hypervisor_type": {"type": "string"},
        "hypervisor_version": {"type": ["string", "integer"]},
        "id": id(version),
        "service": service,
        "state": {"enum": ["up", "down"]},
        "status": {"enum": ["enabled", "disabled"]},
    });
    let mut required = vec![
        "host_ip",
        "hypervisor_hostname",
        "hypervisor_type",
        "hypervisor_version",
        "id",
        "service",
        "state",
        "status",
    ];
    if version >= 53 {
        properties["servers"] = servers();
    }
    if version >= 88 {
        properties["uptime"] = json!({"type": ["string", "null"]});
        required.push("uptime");
    } else {
        for field in FIGURES {
            properties[field] = match field {
                "cpu_info" if version >= 28 => json!({"type": "object"}),
                "cpu_info" => json!({"type": "string"}),
                _ => figure(field),
            };
            required.push(field);
        }
    }
    object(properties, &required)
}

pub fn index(version: u16) -> Value {
    object(
        json!({"hypervisors": {"type": "array", "items": hypervisor(version)}}),
        &["hypervisors"],
    )
}

/// `servers_response` (before 2.53): the matching hosts, each with its servers.
pub fn servers_by_pattern() -> Value {
    let mut item = hypervisor(1);
    item["properties"]["servers"] = servers();
    object(
        json!({"hypervisors": {"type": "array", "items": item}}),
        &["hypervisors"],
    )
}

pub fn detail(version: u16) -> Value {
    object(
        json!({"hypervisors": {"type": "array", "items": detail_item(version)}}),
        &["hypervisors"],
    )
}

pub fn show(version: u16) -> Value {
    object(json!({"hypervisor": detail_item(version)}), &["hypervisor"])
}

pub fn statistics() -> Value {
    let mut properties = json!({"count": {"type": "integer"}, "disk_available_least": {"type": ["null", "integer"]}});
    let mut required = vec!["count", "disk_available_least"];
    for field in FIGURES.iter().filter(|f| **f != "cpu_info") {
        properties[*field] = figure(field);
        required.push(field);
    }
    object(
        json!({"hypervisor_statistics": object(properties, &required)}),
        &["hypervisor_statistics"],
    )
}
