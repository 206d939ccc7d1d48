//! `GET /v2.1/servers/{id}/diagnostics` (admin): the fake hypervisor's report
//! of the server's guest. Before 2.48 it is the driver's own dictionary (here
//! libvirt's keys, as Nova's libvirt driver names them); from 2.48 Nova's
//! standard form. From 2.102 any query parameter is refused.

use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::diagnostics::GuestDiagnostics;
use serde_json::{Map, Value, json};

use crate::AppState;
use crate::error::ApiResult;
use crate::request::{NovaRead, NovaRequest};

/// The standard form's `driver` is one of Nova's enum (libvirt, ironic,
/// vmwareapi, xenapi) — no "fake" — so, as Nova's own fake driver, libvirt;
/// `hypervisor` says what it is, as os-hypervisors does.
const DRIVER: &str = "libvirt";
const HYPERVISOR: &str = "fake";

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}/diagnostics", get(show))
}

async fn show(NovaRead(NovaRequest { state, caller, version }, id): NovaRead<String>) -> ApiResult<Json<Value>> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-server-diagnostics")
        .await?;
    let report = state.servers().diagnostics(&server).await?;
    Ok(Json(if version.at_least(48) {
        standard(&report)
    } else {
        libvirt_keys(&report)
    }))
}

/// 2.48's form. A fake guest moves no data: its counters are zero.
fn standard(report: &GuestDiagnostics) -> Value {
    json!({
        "state": report.state,
        "driver": DRIVER,
        "hypervisor": HYPERVISOR,
        "hypervisor_os": null,
        "uptime": null,
        "config_drive": false,
        "num_cpus": report.cpus,
        "num_nics": report.nics.len(),
        "num_disks": report.disks.len(),
        "cpu_details": (0..report.cpus).map(|id| json!({"id": id, "time": 0, "utilisation": 0})).collect::<Vec<_>>(),
        "nic_details": report.nics.iter().map(|nic| json!({
            "mac_address": nic.mac_address,
            "rx_octets": 0, "rx_errors": 0, "rx_drop": 0, "rx_packets": 0, "rx_rate": 0,
            "tx_octets": 0, "tx_errors": 0, "tx_drop": 0, "tx_packets": 0, "tx_rate": 0,
        })).collect::<Vec<_>>(),
        "disk_details": report.disks.iter().map(|_| json!({
            "read_bytes": 0, "read_requests": 0, "write_bytes": 0, "write_requests": 0, "errors_count": 0,
        })).collect::<Vec<_>>(),
        "memory_details": {"maximum": report.memory_mb, "used": 0},
    })
}

/// The form before 2.48: the driver's flat dictionary, with libvirt's keys
/// (`cpu0_time`, `memory` in KiB, `vda_read`, `tap…_rx`, …).
fn libvirt_keys(report: &GuestDiagnostics) -> Value {
    let mut keys = Map::new();
    for cpu in 0..report.cpus {
        keys.insert(format!("cpu{cpu}_time"), json!(0));
    }
    keys.insert("memory".into(), json!(report.memory_mb * 1024));
    for disk in &report.disks {
        for counter in ["read", "read_req", "write", "write_req", "errors"] {
            keys.insert(format!("{disk}_{counter}"), json!(0));
        }
    }
    for nic in &report.nics {
        for counter in [
            "rx",
            "rx_drop",
            "rx_errors",
            "rx_packets",
            "tx",
            "tx_drop",
            "tx_errors",
            "tx_packets",
        ] {
            keys.insert(format!("{}_{counter}", nic.device), json!(0));
        }
    }
    Value::Object(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netcache_domain::diagnostics::GuestNic;

    fn report() -> GuestDiagnostics {
        GuestDiagnostics {
            state: "running",
            cpus: 2,
            memory_mb: 512,
            disks: vec!["vda".into()],
            nics: vec![GuestNic {
                device: "tap5d3c7e2a-9b".into(),
                mac_address: "fa:16:3e:00:00:01".into(),
            }],
        }
    }

    #[test]
    fn before_2_48_the_keys_are_libvirts() {
        let keys = libvirt_keys(&report());
        assert_eq!(keys["memory"], 524_288);
        assert_eq!(keys["cpu1_time"], 0);
        assert_eq!(keys["vda_write_req"], 0);
        assert_eq!(keys["tap5d3c7e2a-9b_rx_packets"], 0);
        assert_eq!(keys.as_object().unwrap().len(), 2 + 1 + 5 + 8);
    }

    #[test]
    fn from_2_48_the_standard_form_counts_what_the_guest_has() {
        let view = standard(&report());
        assert_eq!(view["num_cpus"], 2);
        assert_eq!(view["cpu_details"][1]["id"], 1);
        assert_eq!(view["nic_details"][0]["mac_address"], "fa:16:3e:00:00:01");
        assert_eq!(view["memory_details"]["maximum"], 512);
        assert_eq!(
            (view["num_nics"].as_u64(), view["num_disks"].as_u64()),
            (Some(1), Some(1))
        );
    }
}
