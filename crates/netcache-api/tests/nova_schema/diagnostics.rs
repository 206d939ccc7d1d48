//! Nova 34's response schema of a server's diagnostics from 2.48
//! (`schemas/server_diagnostics.py`, `index_response_v248`).

use serde_json::{Value, json};

use super::object;

fn counters(names: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| ((*n).to_owned(), json!({"type": ["integer", "null"]})))
        .collect();
    object(Value::Object(properties), names)
}

/// `index_response_v248`.
pub fn index_v248() -> Value {
    let cpu = counters(&["id", "time", "utilisation"]);
    let disk = counters(&[
        "errors_count",
        "read_bytes",
        "read_requests",
        "write_bytes",
        "write_requests",
    ]);
    let mut nic = counters(&[
        "rx_drop",
        "rx_errors",
        "rx_octets",
        "rx_packets",
        "rx_rate",
        "tx_drop",
        "tx_errors",
        "tx_octets",
        "tx_packets",
        "tx_rate",
    ]);
    nic["properties"]["mac_address"] = json!({"type": ["string", "null"]});
    nic["required"].as_array_mut().unwrap().push(json!("mac_address"));
    let nullable = |t: &str| json!({"type": [t, "null"]});
    object(
        json!({
            "config_drive": {"type": "boolean"},
            "cpu_details": {"type": "array", "items": cpu},
            "disk_details": {"type": "array", "items": disk},
            "driver": {"type": "string", "enum": ["ironic", "libvirt", "vmwareapi", "xenapi"]},
            "hypervisor": nullable("string"),
            "hypervisor_os": nullable("string"),
            "memory_details": counters(&["maximum", "used"]),
            "nic_details": {"type": "array", "items": nic},
            "num_cpus": nullable("integer"),
            "num_disks": nullable("integer"),
            "num_nics": nullable("integer"),
            "state": {"type": "string", "enum": ["pending", "running", "paused", "shutdown", "crashed", "suspended"]},
            "uptime": nullable("integer"),
        }),
        &[
            "config_drive",
            "cpu_details",
            "disk_details",
            "driver",
            "hypervisor",
            "hypervisor_os",
            "memory_details",
            "nic_details",
            "num_cpus",
            "num_disks",
            "num_nics",
            "state",
            "uptime",
        ],
    )
}
