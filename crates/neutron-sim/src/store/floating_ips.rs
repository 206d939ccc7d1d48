//! Floating IPs: an address from an external network (held by a port the service owns),
//! associated with a port's fixed IP through a router.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input::{Attr, AttrType, Attributes, StdBody, Uuid};
use super::ports::Port;
use super::{Caller, Kind, Obj, StdAttrs, Store, found};
use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct FloatingIp {
    pub id: String,
    pub project_id: String,
    pub network_id: String,
    pub address: IpAddr,
    /// The port on the external network that holds `address`.
    pub own_port: String,
    pub port_id: Option<String>,
    pub fixed_ip: Option<IpAddr>,
    pub router_id: Option<String>,
    pub std: StdAttrs,
}

impl FloatingIp {
    pub fn disassociate(&mut self) {
        self.port_id = None;
        self.fixed_ip = None;
        self.router_id = None;
    }
}

const FLOATING_IP_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["port_id", "fixed_ip_address"],
    create_only: &["floating_network_id", "floating_ip_address"],
    create_only_unknown_to_update: &["subnet_id", "dns_name", "dns_domain"],
    update_only: &[],
    read_only: &["status", "router_id", "port_details"],
};

/// A floating IP create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FloatingIpBody {
    #[serde(flatten)]
    std: StdBody,
    floating_network_id: Attr<Uuid>,
    /// Passed on to the floating IP's own port, which validates it.
    floating_ip_address: Attr<Value>,
    subnet_id: Attr<Uuid>,
    /// `null` disassociates (on update).
    port_id: Attr<Uuid>,
    fixed_ip_address: Attr<IpAddr>,
}

impl Store {
    /// Resolves the (fixed ip, router) for associating a floating IP on `fip_net` with
    /// `port_id`; `fip_id` is the floating IP itself on update.
    fn fip_target(
        &self,
        caller: &Caller,
        fip_net: &str,
        fip_id: Option<&str>,
        port_id: &str,
        fixed: Option<IpAddr>,
    ) -> Result<(IpAddr, String)> {
        self.check_visible(caller, Kind::Port, port_id)?;
        let p = &self.ports[port_id];
        let fixed_ip = match fixed {
            Some(ip) => {
                if !p.fixed_ips.iter().any(|(_, i)| *i == ip) {
                    return Err(Error::BadRequest(
                        "BadRequest",
                        format!("Bad floatingip request: Port {port_id} does not have fixed ip {ip}."),
                    ));
                }
                ip
            }
            None => p
                .fixed_ips
                .iter()
                .map(|(_, i)| *i)
                .find(IpAddr::is_ipv4)
                .ok_or_else(|| {
                    Error::BadRequest(
                        "BadRequest",
                        format!("Bad floatingip request: Port {port_id} does not have any IPv4 address."),
                    )
                })?,
        };
        let subnet = p
            .fixed_ips
            .iter()
            .find(|(_, i)| *i == fixed_ip)
            .map(|(s, _)| s.clone())
            .unwrap_or_default();
        let router = self
            .routers
            .values()
            .filter(|r| r.gw_network.as_deref() == Some(fip_net))
            .find(|r| self.router_interfaces(&r.id).iter().any(|ip| ip.fixed_ips.iter().any(|(s, _)| *s == subnet)))
            .map(|r| r.id.clone())
            .ok_or_else(|| {
                Error::NotFound(
                    "ExternalGatewayForFloatingIPNotFound",
                    format!(
                        "External network {fip_net} is not reachable from subnet {subnet}.  Therefore, cannot associate Port {port_id} with a Floating IP."
                    ),
                )
            })?;
        if let Some(other) = self.fips.values().find(|f| {
            f.port_id.as_deref() == Some(port_id) && f.fixed_ip == Some(fixed_ip) && Some(f.id.as_str()) != fip_id
        }) {
            return Err(Error::Conflict(
                "FloatingIPPortAlreadyAssociated",
                format!(
                    "Cannot associate floating IP {} ({}) with port {port_id} using fixed IP {fixed_ip}, as that fixed IP already has a floating IP on external network {}.",
                    other.address, other.id, other.network_id
                ),
            ));
        }
        Ok((fixed_ip, router))
    }

    fn notify_port_changed(&mut self, port_id: Option<&str>) {
        if let Some(p) = port_id.and_then(|p| self.ports.get(p)).filter(|p| p.is_compute()) {
            let (dev, id) = (p.device_id.clone(), p.id.clone());
            self.emit("network-changed", &dev, &id);
        }
    }

    pub fn create_fip(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: FloatingIpBody = FLOATING_IP_ATTRIBUTES.parse(obj, true)?;
        let net = b.floating_network_id.required("floating_network_id")?.0;
        self.check_visible(caller, Kind::Network, &net)?;
        if !self.networks.get(&net).is_some_and(|n| n.external) {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad floatingip request: Network {net} is not a valid external network."),
            ));
        }
        let port_id = b.port_id.get("port_id")?.map(|u| u.0);
        // Validated before the floating IP's own port is created, so a failure leaves none.
        let description = b.std.description.get("description")?.unwrap_or_default();
        let tags = b.std.tags.tags()?;
        let project_id = Self::project_for(caller, b.std.project()?);
        let target = match &port_id {
            Some(p) => Some(self.fip_target(caller, &net, None, p, fixed_ip(&b.fixed_ip_address)?)?),
            None => None,
        };
        let id = self.new_id();
        let mut fixed = Vec::new();
        match b.floating_ip_address.raw().filter(|v| !v.is_null()) {
            Some(ip) => fixed.push(json!({"ip_address": ip})),
            None => match b.subnet_id.get("subnet_id")? {
                Some(s) => fixed.push(json!({"subnet_id": s.0})),
                None => {
                    let v4 = self.subnets_of(&net).into_iter().find(|(_, v6)| !v6);
                    fixed.extend(v4.map(|(s, _)| json!({"subnet_id": s})));
                }
            },
        }
        if fixed.is_empty() {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad floatingip request: Network {net} has no IPv4 subnet."),
            ));
        }
        let body = json!({"network_id": net, "device_owner": "network:floatingip", "device_id": id, "project_id": "", "fixed_ips": fixed});
        let own_port = self.create_service_port(caller, body)?;
        let address = self.ports[&own_port].fixed_ips[0].1;
        let f = FloatingIp {
            id: id.clone(),
            project_id,
            network_id: net,
            address,
            own_port,
            port_id: port_id.clone(),
            fixed_ip: target.as_ref().map(|t| t.0),
            router_id: target.map(|t| t.1),
            std: StdAttrs::new(description, tags, 0),
        };
        self.fips.insert(id.clone(), f);
        self.notify_port_changed(port_id.as_deref());
        Ok(id)
    }

    pub fn update_fip(&mut self, caller: &Caller, obj: &Obj, id: &str) -> Result<()> {
        let b: FloatingIpBody = FLOATING_IP_ATTRIBUTES.parse(obj, false)?;
        let f = found(self.fips.get(id), Kind::FloatingIp, id)?;
        let (net, old_port) = (f.network_id.clone(), f.port_id.clone());
        let description = b.std.description.get("description")?;
        // `None`: unchanged; `Some(None)`: disassociate; `Some(Some(..))`: associate.
        let new_target = match b.port_id.nullable("port_id")? {
            None => None,
            Some(None) => Some(None),
            Some(Some(pid)) => {
                let t = self.fip_target(caller, &net, Some(id), &pid.0, fixed_ip(&b.fixed_ip_address)?)?;
                Some(Some((pid.0, t)))
            }
        };
        let f = found(self.fips.get_mut(id), Kind::FloatingIp, id)?;
        match &new_target {
            None => {}
            Some(None) => f.disassociate(),
            Some(Some((pid, (ip, router)))) => {
                f.port_id = Some(pid.clone());
                f.fixed_ip = Some(*ip);
                f.router_id = Some(router.clone());
            }
        }
        f.std.update(description);
        let new_port = f.port_id.clone();
        if new_target.is_some() {
            if old_port != new_port {
                self.notify_port_changed(old_port.as_deref());
            }
            self.notify_port_changed(new_port.as_deref());
        }
        Ok(())
    }

    pub fn delete_fip(&mut self, id: &str) -> Result<()> {
        let f = found(self.fips.remove(id), Kind::FloatingIp, id)?;
        let _ = self.delete_port(&f.own_port, false);
        self.notify_port_changed(f.port_id.as_deref());
        Ok(())
    }

    pub(super) fn fip_json(&self, f: &FloatingIp) -> Value {
        let port = f.port_id.as_ref().and_then(|p| self.ports.get(p));
        serde_json::to_value(FloatingIpView::new(f, port)).expect("serializable")
    }
}

/// A floating IP as the API shows it; no L3 agent brings it up, so `status` stays `DOWN`.
#[derive(Serialize)]
struct FloatingIpView<'a> {
    id: &'a str,
    tenant_id: &'a str,
    project_id: &'a str,
    floating_ip_address: IpAddr,
    floating_network_id: &'a str,
    router_id: Option<&'a str>,
    port_id: Option<&'a str>,
    fixed_ip_address: Option<IpAddr>,
    status: &'static str,
    /// `null` when not associated.
    port_details: Option<PortDetailsView<'a>>,
    #[serde(flatten)]
    std: &'a StdAttrs,
}

/// `port_details`: a summary of the associated port.
#[derive(Serialize)]
struct PortDetailsView<'a> {
    name: &'a str,
    network_id: &'a str,
    mac_address: &'a str,
    admin_state_up: bool,
    status: &'a str,
    device_id: &'a str,
    device_owner: &'a str,
}

impl<'a> FloatingIpView<'a> {
    fn new(f: &'a FloatingIp, port: Option<&'a Port>) -> Self {
        FloatingIpView {
            id: &f.id,
            tenant_id: &f.project_id,
            project_id: &f.project_id,
            floating_ip_address: f.address,
            floating_network_id: &f.network_id,
            router_id: f.router_id.as_deref(),
            port_id: f.port_id.as_deref(),
            fixed_ip_address: f.fixed_ip,
            status: "DOWN",
            port_details: port.map(|p| PortDetailsView {
                name: &p.name,
                network_id: &p.network_id,
                mac_address: &p.mac,
                admin_state_up: p.admin_state_up,
                status: &p.status,
                device_id: &p.device_id,
                device_owner: &p.device_owner,
            }),
            std: &f.std,
        }
    }
}

/// `fixed_ip_address`: `null` counts as not given.
fn fixed_ip(attr: &Attr<IpAddr>) -> Result<Option<IpAddr>> {
    match attr.raw() {
        None | Some(Value::Null) => Ok(None),
        Some(v) => IpAddr::from_json(v)
            .map(Some)
            .ok_or_else(|| IpAddr::error("fixed_ip_address", v)),
    }
}
