//! IP address management: next-fit allocation from a subnet's pools, SLAAC (EUI-64)
//! addresses, and a port's `fixed_ips` requests.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::Deserialize;
use serde_json::Value;

use super::input::{Attr, Uuid, parse_only, pyrepr};
use super::subnets::Subnet;
use super::{Kind, Store, found};
use crate::error::{Error, Result};

/// Addresses of a port: `(subnet_id, address)`.
pub(super) type FixedIps = Vec<(String, IpAddr)>;

pub(super) fn ip_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

pub(super) fn u128_ip(v: u128, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(v.into())
    } else {
        IpAddr::V4((v as u32).into())
    }
}

/// SLAAC (EUI-64) address for `mac` in a /64.
fn eui64(cidr: IpNet, mac: &str) -> IpAddr {
    let b: Vec<u8> = mac.split(':').filter_map(|x| u8::from_str_radix(x, 16).ok()).collect();
    let b = if b.len() == 6 { b } else { vec![0; 6] };
    let iid = u64::from_be_bytes([b[0] ^ 0x02, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]]);
    let prefix = ip_u128(cidr.network()) & !((1u128 << 64) - 1);
    u128_ip(prefix | u128::from(iid), true)
}

impl Subnet {
    /// Next free address from the pools, or `None` when exhausted.
    fn alloc_next(&mut self) -> Option<IpAddr> {
        let v6 = self.v6();
        self.alloc_any().map(|ip| u128_ip(ip, v6))
    }
    /// Records and returns the SLAAC address of `mac` on this (IPv6) subnet.
    fn alloc_slaac(&mut self, mac: &str) -> IpAddr {
        let ip = eui64(self.cidr, mac);
        self.allocated.insert(ip_u128(ip));
        ip
    }
    /// Next free address from the pools (next-fit, wrapping), or `None` when exhausted.
    fn alloc_any(&mut self) -> Option<u128> {
        let first = self.pools.first()?.0;
        let total: u128 = self.pools.iter().map(|(s, e)| e - s + 1).fold(0, u128::saturating_add);
        let mut cand = if self.in_pools(self.cursor) { self.cursor } else { first };
        // Bounded, so a huge IPv6 pool that is nearly full fails instead of spinning.
        for _ in 0..total.min(1 << 20) {
            let next = self.next_in_pools(cand);
            if !self.allocated.contains(&cand) {
                self.allocated.insert(cand);
                self.cursor = next;
                return Some(cand);
            }
            cand = next;
        }
        None
    }
    fn in_pools(&self, x: u128) -> bool {
        self.pools.iter().any(|(s, e)| (*s..=*e).contains(&x))
    }
    fn next_in_pools(&self, x: u128) -> u128 {
        for (i, (s, e)) in self.pools.iter().enumerate() {
            if (*s..=*e).contains(&x) {
                return if x < *e {
                    x + 1
                } else {
                    self.pools[(i + 1) % self.pools.len()].0
                };
            }
        }
        self.pools[0].0
    }
}

/// One entry of a port's `fixed_ips`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FixedIpBody {
    subnet_id: Attr<Uuid>,
    ip_address: Attr<IpAddr>,
}

/// The `(subnet_id, ip_address)` of a `fixed_ips` entry, if well-formed.
pub(super) fn parse_fixed_ip(r: &Value) -> Result<(Option<String>, Option<IpAddr>)> {
    let Some(r) = r.as_object() else {
        return Err(Error::invalid(format!(
            "Invalid data format for fixed IP: {}",
            pyrepr(r)
        )));
    };
    let b: FixedIpBody = parse_only(r, &["subnet_id", "ip_address"])?;
    let sid = b.subnet_id.get("subnet_id")?.map(|u| u.0);
    let ip = b.ip_address.get("ip_address")?;
    Ok((sid, ip))
}

impl Store {
    /// Allocates the requested fixed IPs (or the defaults) on `network_id` for a port with `mac`.
    /// `keep` are addresses the port already holds (on update) and may keep. All or nothing.
    pub(super) fn allocate(
        &mut self,
        network_id: &str,
        mac: &str,
        requested: Option<&[Value]>,
        keep: &[(String, IpAddr)],
        device_owner: &str,
    ) -> Result<FixedIps> {
        let mut out = Vec::new();
        let result = match requested {
            None => self.allocate_default(network_id, mac, &mut out),
            Some(reqs) => {
                let router_port =
                    device_owner.starts_with("network:router") || device_owner.starts_with("network:ha_router");
                self.allocate_requested(network_id, mac, reqs, keep, &mut out, router_port)
            }
        };
        if result.is_err() {
            self.release_except(&out, keep);
        }
        result.map(|()| out)
    }

    /// Default: one IPv4 and one stateful IPv6 address; every SLAAC subnet auto-addresses.
    fn allocate_default(&mut self, network_id: &str, mac: &str, out: &mut FixedIps) -> Result<()> {
        let (mut got_v4, mut got_v6, mut any_v4) = (false, false, false);
        for sid in self.subnet_ids(network_id) {
            let Some(s) = self.subnets.get_mut(&sid) else {
                continue;
            };
            if s.v6() && s.slaac() {
                out.push((sid, s.alloc_slaac(mac)));
                continue;
            }
            let v6 = s.v6();
            any_v4 |= !v6;
            if (v6 && got_v6) || (!v6 && got_v4) {
                continue;
            }
            if let Some(ip) = s.alloc_next() {
                out.push((sid, ip));
                if v6 { got_v6 = true } else { got_v4 = true }
            }
        }
        if any_v4 && !got_v4 {
            return Err(exhausted(network_id));
        }
        out.sort_by_key(|(sid, ip)| {
            (
                ip.is_ipv6(),
                self.subnets.get(sid).map(super::subnets::Subnet::slaac),
                sid.clone(),
            )
        });
        Ok(())
    }

    /// The addresses a `fixed_ips` list asks for (by subnet, by address, or both).
    fn allocate_requested(
        &mut self,
        network_id: &str,
        mac: &str,
        reqs: &[Value],
        keep: &[(String, IpAddr)],
        out: &mut FixedIps,
        router_port: bool,
    ) -> Result<()> {
        let subnet_ids = self.subnet_ids(network_id);
        for r in reqs {
            let (sid, ip) = parse_fixed_ip(r)?;
            let sid = self.requested_subnet(network_id, &subnet_ids, sid, ip)?;
            let s = found(self.subnets.get_mut(&sid), Kind::Subnet, &sid)?;
            match ip {
                Some(ip) => {
                    if !s.cidr.contains(&ip) {
                        return Err(Error::BadRequest(
                            "InvalidIpForSubnet",
                            format!("IP address {ip} is not a valid IP for the specified subnet."),
                        ));
                    }
                    let kept = keep.contains(&(sid.clone(), ip));
                    if !kept && !s.allocated.insert(ip_u128(ip)) {
                        return Err(Error::Conflict(
                            "IpAddressAlreadyAllocated",
                            format!("IP address {ip} already allocated in subnet {sid}"),
                        ));
                    }
                    out.push((sid, ip));
                }
                None => {
                    let reuse = keep
                        .iter()
                        .find(|(k, kip)| *k == sid && !out.iter().any(|(_, o)| o == kip));
                    if let Some((_, kip)) = reuse {
                        out.push((sid, *kip));
                    } else if s.v6() && s.slaac() {
                        out.push((sid, s.alloc_slaac(mac)));
                    } else {
                        out.push((sid, s.alloc_next().ok_or_else(|| exhausted(network_id))?));
                    }
                }
            }
        }
        // SLAAC subnets always auto-address a non-router port, even when not requested.
        if !router_port {
            for sid in &subnet_ids {
                if out.iter().any(|(s, _)| s == sid) {
                    continue;
                }
                if let Some(s) = self.subnets.get_mut(sid).filter(|s| s.v6() && s.slaac()) {
                    out.push((sid.clone(), s.alloc_slaac(mac)));
                }
            }
        }
        Ok(())
    }

    /// The subnet of one `fixed_ips` entry: the one named, else the one holding the address.
    fn requested_subnet(
        &self,
        network_id: &str,
        subnet_ids: &[String],
        sid: Option<String>,
        ip: Option<IpAddr>,
    ) -> Result<String> {
        match (sid, ip) {
            (Some(sid), _) if subnet_ids.contains(&sid) => Ok(sid),
            (Some(sid), _) => Err(Error::invalid(format!(
                "Failed to create port on network {network_id}, because fixed_ips included invalid subnet {sid}"
            ))),
            (None, Some(ip)) => subnet_ids
                .iter()
                .find(|s| self.subnets.get(*s).is_some_and(|s| s.cidr.contains(&ip)))
                .cloned()
                .ok_or_else(|| {
                    Error::BadRequest(
                        "InvalidIpForNetwork",
                        format!("IP address {ip} is not a valid IP for any of the subnets on the specified network."),
                    )
                }),
            (None, None) => Err(Error::invalid("Invalid fixed IP entry: no subnet_id nor ip_address")),
        }
    }

    /// Frees the addresses in `ips` that are not also in `kept`.
    pub(super) fn release_except(&mut self, ips: &[(String, IpAddr)], kept: &[(String, IpAddr)]) {
        for (sid, ip) in ips.iter().filter(|a| !kept.contains(a)) {
            if let Some(s) = self.subnets.get_mut(sid) {
                s.allocated.remove(&ip_u128(*ip));
            }
        }
    }
}

fn exhausted(network_id: &str) -> Error {
    Error::Conflict(
        "IpAddressGenerationFailure",
        format!("No more IP addresses available on network {network_id}."),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::{Caller, Obj};

    #[test]
    fn eui64_matches_neutron() {
        let ip = eui64(
            "fd00:9::/64".parse().unwrap_or_else(|_| unreachable!()),
            "fa:16:3e:99:fa:91",
        );
        assert_eq!(ip.to_string(), "fd00:9::f816:3eff:fe99:fa91");
    }

    #[test]
    fn allocation_exhausts_then_fails() {
        let mut st = Store::new(1, true, true);
        let c = Caller::admin();
        let net = st
            .create_network(&c, json!({"name": "n"}).as_object().unwrap_or(&Obj::new()))
            .unwrap_or_default();
        let body = json!({"network_id": net, "ip_version": 4, "cidr": "10.0.0.0/29"});
        st.create_subnet(&c, body.as_object().unwrap_or(&Obj::new()))
            .unwrap_or_default();
        let port = json!({"network_id": net});
        let port = port.as_object().unwrap_or_else(|| unreachable!());
        for _ in 0..5 {
            assert!(st.create_port(&c, port).is_ok());
        }
        let err = st.create_port(&c, port).err().map(|e| e.kind());
        assert_eq!(err, Some("IpAddressGenerationFailure"));
    }
}
