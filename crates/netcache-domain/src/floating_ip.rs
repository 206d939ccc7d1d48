//! Which fixed IP of a server Nova's `addFloatingIp` associates a floating IP
//! with: the one asked for if the server has it, else its first IPv4 address,
//! in interface order; refused in Nova's order and words.

use std::fmt;
use std::net::IpAddr;

use crate::vif::VifRecord;
use crate::{PortId, ServerId};

/// A fixed IP of a server's interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedAddress {
    pub port_id: PortId,
    pub address: IpAddr,
}

/// Why no fixed IP of the server can take the floating IP (Nova's 400s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The server has no interface (Nova: an empty info cache).
    NetworkNotReady,
    NoFixedIps,
    NotAssigned,
    NoIpv4 {
        floating: IpAddr,
        server: ServerId,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NetworkNotReady => f.write_str("Instance network is not ready yet"),
            Self::NoFixedIps => f.write_str("No fixed IPs associated to instance"),
            Self::NotAssigned => f.write_str("Specified fixed address not assigned to instance"),
            Self::NoIpv4 { floating, server } => write!(
                f,
                "Unable to associate floating IP {floating} to any fixed IPs for instance {server}. Instance has no fixed IPv4 addresses to associate."
            ),
        }
    }
}

/// The fixed IP of `vifs` (the server's records, in interface order) that
/// `floating` is to be associated with; `requested` is the body's
/// `fixed_address`.
pub fn fixed_address_for(
    server: ServerId,
    vifs: &[VifRecord],
    floating: IpAddr,
    requested: Option<IpAddr>,
) -> Result<FixedAddress, Refusal> {
    let attached: Vec<&VifRecord> = vifs.iter().filter(|v| v.is_attached()).collect();
    if attached.is_empty() {
        return Err(Refusal::NetworkNotReady);
    }
    let fixed: Vec<FixedAddress> = attached
        .iter()
        .flat_map(|v| {
            let ips = v.details.iter().flat_map(|d| &d.fixed_ips);
            ips.map(|ip| FixedAddress {
                port_id: v.port_id.clone(),
                address: ip.ip_address,
            })
        })
        .collect();
    if fixed.is_empty() {
        return Err(Refusal::NoFixedIps);
    }
    match requested {
        Some(wanted) => fixed
            .into_iter()
            .find(|f| f.address == wanted)
            .ok_or(Refusal::NotAssigned),
        None => fixed
            .into_iter()
            .find(|f| f.address.is_ipv4())
            .ok_or(Refusal::NoIpv4 { floating, server }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NetworkId;
    use crate::neutron::PortFixedIp;
    use crate::vif::{PortDetails, VifOrigin, VifState};

    fn vif(server: ServerId, port: &str, state: VifState, ips: &[&str]) -> VifRecord {
        VifRecord {
            port_id: PortId::from(port),
            server_id: server,
            position: 0,
            origin: VifOrigin::Created,
            state,
            intent_id: None,
            network_id: NetworkId::from("net"),
            requested_fixed_ip: None,
            tag: None,
            details: Some(PortDetails {
                fixed_ips: ips
                    .iter()
                    .map(|ip| PortFixedIp {
                        subnet_id: "sub".into(),
                        ip_address: ip.parse().unwrap(),
                    })
                    .collect(),
                ..PortDetails::default()
            }),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_first_ipv4_address_of_the_attached_interfaces_unless_one_is_asked_for() {
        let server = ServerId(crate::fixtures::uuid(1));
        let vifs = [
            vif(server, "gone", VifState::Releasing, &["10.0.0.9"]),
            vif(server, "p1", VifState::Attached, &["fd00::5"]),
            vif(server, "p2", VifState::Attached, &["fd00::6", "10.0.1.7", "10.0.1.8"]),
        ];
        let floating = ip("172.24.4.5");
        let chosen = fixed_address_for(server, &vifs, floating, None).unwrap();
        assert_eq!(
            chosen,
            FixedAddress {
                port_id: PortId::from("p2"),
                address: ip("10.0.1.7")
            }
        );
        let asked = fixed_address_for(server, &vifs, floating, Some(ip("fd00::5"))).unwrap();
        assert_eq!(asked.port_id.as_str(), "p1");
        assert_eq!(
            fixed_address_for(server, &vifs, floating, Some(ip("10.0.0.9"))),
            Err(Refusal::NotAssigned),
            "an interface being released is not the server's"
        );
    }

    #[test]
    fn refusals_in_novas_order_and_words() {
        let server = ServerId(crate::fixtures::uuid(2));
        let floating = ip("172.24.4.5");
        let refused = |vifs: &[VifRecord], requested| fixed_address_for(server, vifs, floating, requested).unwrap_err();
        assert_eq!(refused(&[], Some(ip("10.0.0.1"))), Refusal::NetworkNotReady);
        let empty = [vif(server, "p", VifState::Attached, &[])];
        assert_eq!(refused(&empty, Some(ip("10.0.0.1"))), Refusal::NoFixedIps);
        let v6 = [vif(server, "p", VifState::Attached, &["fd00::5"])];
        let no_v4 = refused(&v6, None);
        assert_eq!(
            no_v4.to_string(),
            format!(
                "Unable to associate floating IP 172.24.4.5 to any fixed IPs for instance {server}. Instance has no fixed IPv4 addresses to associate."
            )
        );
        assert_eq!(
            Refusal::NetworkNotReady.to_string(),
            "Instance network is not ready yet"
        );
        assert_eq!(Refusal::NoFixedIps.to_string(), "No fixed IPs associated to instance");
        assert_eq!(
            Refusal::NotAssigned.to_string(),
            "Specified fixed address not assigned to instance"
        );
    }
}
