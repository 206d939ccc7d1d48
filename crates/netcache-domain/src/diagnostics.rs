//! What the fake hypervisor reports of a guest (`GET /servers/{id}/diagnostics`):
//! the guest's shape from its flavor, its NICs from its VIF records, its state
//! from its power state. A fake guest runs nothing, so every counter is zero;
//! what the fake hypervisor does not track (uptime) is unknown (`None`).

use crate::server::Server;
use crate::vif::VifRecord;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestDiagnostics {
    /// Nova's diagnostics state: `pending`, `running`, `paused`, `shutdown`,
    /// `crashed` or `suspended`.
    pub state: &'static str,
    pub cpus: i64,
    pub memory_mb: i64,
    /// The guest's disk devices, root first (`vda`, then ephemeral and swap).
    pub disks: Vec<String>,
    pub nics: Vec<GuestNic>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestNic {
    /// The host-side device, as libvirt names a port's tap (`tap` + 11 characters of its id).
    pub device: String,
    pub mac_address: String,
}

impl GuestDiagnostics {
    /// The report of `server`'s guest with the NICs of its `vifs` (attached ones, in order).
    #[must_use]
    pub fn of(server: &Server, vifs: &[VifRecord]) -> Self {
        let flavor = server.flavor.as_ref();
        let size = |field: fn(&crate::flavor::FlavorSnapshot) -> i64| flavor.map_or(0, field);
        let extra_disks = usize::from(size(|f| f.ephemeral_gb) > 0) + usize::from(size(|f| f.swap_mb) > 0);
        let disks = (0..=extra_disks)
            .map(|i| format!("vd{}", char::from(b'a' + u8::try_from(i).unwrap_or(0))))
            .collect();
        let nics = vifs
            .iter()
            .filter_map(|vif| {
                let details = vif.details.as_ref()?;
                let id = vif.port_id.to_string();
                Some(GuestNic {
                    device: format!("tap{}", &id[..id.len().min(11)]),
                    mac_address: details.mac_address.clone(),
                })
            })
            .collect();
        Self {
            state: state_of(server.power_state()),
            cpus: size(|f| f.vcpus),
            memory_mb: size(|f| f.ram_mb),
            disks,
            nics,
        }
    }
}

/// Nova's diagnostics state of a power state number.
fn state_of(power_state: u8) -> &'static str {
    match power_state {
        1 => "running",
        3 => "paused",
        4 => "shutdown",
        6 => "crashed",
        7 => "suspended",
        _ => "pending",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::server as fixture;
    use crate::server::VmState;
    use crate::vif::{PortDetails, VifOrigin, VifState};
    use crate::{NetworkId, PortId};

    fn vif(server: &Server, port: &str, mac: &str) -> VifRecord {
        VifRecord {
            port_id: PortId::from(port),
            server_id: server.id,
            position: 0,
            origin: VifOrigin::Created,
            state: VifState::Attached,
            intent_id: None,
            network_id: NetworkId::from("net"),
            requested_fixed_ip: None,
            tag: None,
            details: Some(PortDetails {
                mac_address: mac.into(),
                ..PortDetails::default()
            }),
        }
    }

    #[test]
    fn the_report_follows_the_flavor_the_ports_and_the_power_state() {
        let server = Server {
            vm_state: VmState::Active,
            ..fixture()
        };
        let port = "5d3c7e2a-9b1f-4e6d-8c0a-1f2e3d4c5b6a";
        let report = GuestDiagnostics::of(&server, &[vif(&server, port, "fa:16:3e:00:00:01")]);
        assert_eq!(report.state, "running");
        assert_eq!((report.cpus, report.memory_mb), (1, 512), "m1.tiny");
        assert_eq!(report.disks, vec!["vda"]);
        assert_eq!(
            report.nics,
            vec![GuestNic {
                device: "tap5d3c7e2a-9b".into(),
                mac_address: "fa:16:3e:00:00:01".into()
            }]
        );
        for (vm_state, state) in [
            (VmState::Stopped, "shutdown"),
            (VmState::Paused, "paused"),
            (VmState::Suspended, "suspended"),
            (VmState::Rescued, "running"),
            (VmState::Error, "pending"),
        ] {
            let server = Server { vm_state, ..fixture() };
            assert_eq!(GuestDiagnostics::of(&server, &[]).state, state, "{vm_state}");
        }
    }

    #[test]
    fn ephemeral_and_swap_are_disks_of_their_own() {
        let mut server = fixture();
        let flavor = server.flavor.as_mut().unwrap();
        flavor.ephemeral_gb = 1;
        flavor.swap_mb = 512;
        assert_eq!(GuestDiagnostics::of(&server, &[]).disks, vec!["vda", "vdb", "vdc"]);
    }
}
