//! Routers: external gateway and interfaces (both ports the service owns).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input::{Attr, Attributes, JsonList, StdBody, Uuid, parse, parse_only};
use super::ports::{FixedIpView, Port, fixed_ips_view};
use super::{Caller, Kind, Obj, StdAttrs, Store, found, update_field};
use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct Router {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub admin_state_up: bool,
    pub gw_network: Option<String>,
    pub gw_port: Option<String>,
    pub enable_snat: bool,
    pub std: StdAttrs,
}

const ROUTER_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["name", "admin_state_up", "external_gateway_info"],
    create_only: &[],
    create_only_unknown_to_update: &["distributed", "ha", "availability_zone_hints", "flavor_id"],
    update_only: &["routes"],
    read_only: &["status"],
};

/// A router create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RouterBody {
    #[serde(flatten)]
    std: StdBody,
    name: Attr<String>,
    admin_state_up: Attr<bool>,
    /// Read by [`GatewayBody`]; `null` or `{}` removes the gateway.
    external_gateway_info: Attr<Value>,
}

/// `external_gateway_info`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GatewayBody {
    network_id: Attr<Uuid>,
    enable_snat: Attr<bool>,
    external_fixed_ips: Attr<JsonList>,
}

/// An `add_router_interface` / `remove_router_interface` body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InterfaceBody {
    subnet_id: Attr<Uuid>,
    port_id: Attr<Uuid>,
}

impl InterfaceBody {
    fn parse(obj: &Obj) -> Result<(Option<String>, Option<String>)> {
        let b: InterfaceBody = parse_only(obj, &["subnet_id", "port_id"])?;
        let sid = b.subnet_id.get("subnet_id")?.map(|u| u.0);
        let pid = b.port_id.get("port_id")?.map(|u| u.0);
        Ok((sid, pid))
    }
}

fn neither_subnet_nor_port() -> Error {
    Error::BadRequest(
        "BadRequest",
        "Bad router request: Either subnet_id or port_id must be specified.".into(),
    )
}

impl Store {
    pub fn create_router(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: RouterBody = ROUTER_ATTRIBUTES.parse(obj, true)?;
        let id = self.new_id();
        let std = StdAttrs::new(
            b.std.description.get("description")?.unwrap_or_default(),
            b.std.tags.tags()?,
            0,
        );
        let r = Router {
            id: id.clone(),
            name: b.name.get("name")?.unwrap_or_default(),
            project_id: Self::project_for(caller, b.std.project()?),
            admin_state_up: b.admin_state_up.get("admin_state_up")?.unwrap_or(true),
            gw_network: None,
            gw_port: None,
            enable_snat: true,
            std,
        };
        self.routers.insert(id.clone(), r);
        if let Some(gw) = b.external_gateway_info.raw().filter(|v| !v.is_null())
            && let Err(e) = self.set_gateway(caller, &id, gw)
        {
            self.routers.remove(&id);
            return Err(e);
        }
        // Real Neutron ends a create with the gateway at revision 2.
        if let Some(r) = self.routers.get_mut(&id) {
            r.std.revision = if r.gw_network.is_some() { 2 } else { 1 };
        }
        Ok(id)
    }

    fn set_gateway(&mut self, caller: &Caller, router_id: &str, gw: &Value) -> Result<()> {
        if let Some(old) = self.routers.get_mut(router_id).and_then(|r| r.gw_port.take()) {
            self.delete_port(&old, false)?;
        }
        if let Some(r) = self.routers.get_mut(router_id) {
            r.gw_network = None;
        }
        if gw.is_null() || gw.as_object().is_some_and(serde_json::Map::is_empty) {
            return Ok(());
        }
        let gw = gw
            .as_object()
            .ok_or_else(|| Error::invalid("external_gateway_info is not a dict"))?;
        let b: GatewayBody = parse(gw)?;
        let net = b.network_id.required("network_id")?.0;
        if !self.networks.get(&net).is_some_and(|n| n.external) {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad router request: Network {net} is not an external network."),
            ));
        }
        let snat = b.enable_snat.get("enable_snat")?.unwrap_or(true);
        let mut body = json!({"network_id": net, "device_owner": "network:router_gateway", "device_id": router_id});
        if let Some(ips) = b.external_fixed_ips.valid() {
            body["fixed_ips"] = ips.0;
        }
        let port = self.create_service_port(caller, body)?;
        if let Some(r) = self.routers.get_mut(router_id) {
            r.gw_network = Some(net);
            r.gw_port = Some(port);
            r.enable_snat = snat;
        }
        Ok(())
    }

    pub fn update_router(&mut self, caller: &Caller, obj: &Obj, id: &str) -> Result<()> {
        let b: RouterBody = ROUTER_ATTRIBUTES.parse(obj, false)?;
        let name = b.name.get("name")?;
        let description = b.std.description.get("description")?;
        let admin = b.admin_state_up.get("admin_state_up")?;
        if let Some(gw) = b.external_gateway_info.raw() {
            self.set_gateway(caller, id, gw)?;
        }
        let r = found(self.routers.get_mut(id), Kind::Router, id)?;
        update_field(&mut r.name, name);
        update_field(&mut r.admin_state_up, admin);
        r.std.update(description);
        Ok(())
    }

    pub(super) fn router_interfaces(&self, router_id: &str) -> Vec<&Port> {
        self.by_device
            .get(router_id)
            .into_iter()
            .flatten()
            .filter_map(|p| self.ports.get(p))
            .filter(|p| p.device_owner == "network:router_interface")
            .collect()
    }

    pub fn delete_router(&mut self, id: &str) -> Result<()> {
        found(self.routers.get(id), Kind::Router, id)?;
        let ifaces: Vec<String> = self.router_interfaces(id).iter().map(|p| p.id.clone()).collect();
        if !ifaces.is_empty() {
            return Err(Error::Conflict(
                "RouterInUse",
                format!("Router {id} has ports still attached: {}", ifaces.join(", ")),
            ));
        }
        if self.fips.values().any(|f| f.router_id.as_deref() == Some(id)) {
            return Err(Error::Conflict(
                "RouterInUse",
                format!("Router {id} still has floating IPs associated"),
            ));
        }
        if let Some(gw) = self.routers.get_mut(id).and_then(|r| r.gw_port.take()) {
            self.delete_port(&gw, false)?;
        }
        self.routers.remove(id);
        Ok(())
    }

    pub fn router_by_name(&self, name: &str) -> Option<String> {
        self.routers.values().find(|r| r.name == name).map(|r| r.id.clone())
    }

    pub fn add_router_interface(&mut self, caller: &Caller, id: &str, obj: &Obj) -> Result<Value> {
        let (sid, pid) = InterfaceBody::parse(obj)?;
        let project = found(self.routers.get(id), Kind::Router, id)?.project_id.clone();
        let port_id = match (sid, pid) {
            (Some(sid), None) => self.add_subnet_interface(caller, id, &project, &sid)?,
            (None, Some(pid)) => self.add_port_interface(caller, id, &pid)?,
            _ => return Err(neither_subnet_nor_port()),
        };
        if let Some(r) = self.routers.get_mut(id) {
            r.std.bump();
        }
        Ok(interface_json(id, &project, &self.ports[&port_id]))
    }

    /// A new interface port with the subnet's gateway address.
    fn add_subnet_interface(&mut self, caller: &Caller, id: &str, project: &str, sid: &str) -> Result<String> {
        self.check_visible(caller, Kind::Subnet, sid)?;
        let s = &self.subnets[sid];
        let gw = s.gateway.ok_or_else(|| {
            Error::BadRequest(
                "BadRequest",
                format!("Bad router request: Subnet {sid} does not have a gateway IP."),
            )
        })?;
        if self
            .router_interfaces(id)
            .iter()
            .any(|p| p.fixed_ips.iter().any(|(s, _)| s == sid))
        {
            return Err(Error::BadRequest(
                "BadRequest",
                format!("Bad router request: Router already has a port on subnet {sid}."),
            ));
        }
        let body = json!({
            "network_id": s.network_id, "device_owner": "network:router_interface", "device_id": id,
            "fixed_ips": [{"subnet_id": sid, "ip_address": gw.to_string()}], "project_id": project,
        });
        self.create_service_port(caller, body)
    }

    /// An existing, unattached port becomes an interface.
    fn add_port_interface(&mut self, caller: &Caller, id: &str, pid: &str) -> Result<String> {
        self.check_visible(caller, Kind::Port, pid)?;
        let mut p = found(self.ports.get(pid), Kind::Port, pid)?.clone();
        if !p.device_id.is_empty() {
            return Err(Error::Conflict(
                "PortInUse",
                format!(
                    "Unable to complete operation on port {pid} for network {}. Port already has an attached device {}.",
                    p.network_id, p.device_id
                ),
            ));
        }
        self.index_port(&p, false);
        p.device_id = id.to_string();
        p.device_owner = "network:router_interface".into();
        p.std.bump();
        self.index_port(&p, true);
        self.ports.insert(pid.to_string(), p);
        Ok(pid.to_string())
    }

    pub fn remove_router_interface(&mut self, id: &str, obj: &Obj) -> Result<Value> {
        let (sid, pid) = InterfaceBody::parse(obj)?;
        found(self.routers.get(id), Kind::Router, id)?;
        let port = self
            .router_interfaces(id)
            .into_iter()
            .find(|p| pid.as_deref() == Some(p.id.as_str()) || p.fixed_ips.iter().any(|(s, _)| Some(s) == sid.as_ref()))
            .cloned();
        let Some(port) = port else {
            return Err(match (sid, pid) {
                (Some(s), _) => Error::NotFound(
                    "RouterInterfaceNotFoundForSubnet",
                    format!("Router {id} has no interface on subnet {s}"),
                ),
                (_, Some(p)) => Error::NotFound(
                    "RouterInterfaceNotFound",
                    format!("Router {id} does not have an interface with id {p}"),
                ),
                _ => neither_subnet_nor_port(),
            });
        };
        let subnets: Vec<String> = port.fixed_ips.iter().map(|(s, _)| s.clone()).collect();
        if self.fips.values().any(|f| {
            f.router_id.as_deref() == Some(id)
                && f.port_id
                    .as_ref()
                    .and_then(|p| self.ports.get(p))
                    .is_some_and(|p| p.fixed_ips.iter().any(|(s, _)| subnets.contains(s)))
        }) {
            return Err(Error::Conflict(
                "RouterInterfaceInUseByFloatingIP",
                format!(
                    "Router interface for subnet {} on router {id} cannot be deleted, as it is required by one or more floating IPs.",
                    subnets.first().cloned().unwrap_or_default()
                ),
            ));
        }
        self.delete_port(&port.id, false)?;
        if let Some(r) = self.routers.get_mut(id) {
            r.std.bump();
        }
        Ok(interface_json(id, &port.project_id, &port))
    }

    pub(super) fn router_json(&self, r: &Router) -> Value {
        let gateway = r.gw_network.as_deref().map(|network_id| GatewayView {
            network_id,
            external_fixed_ips: r
                .gw_port
                .as_ref()
                .and_then(|p| self.ports.get(p))
                .map(|p| fixed_ips_view(&p.fixed_ips))
                .unwrap_or_default(),
            enable_snat: r.enable_snat,
        });
        serde_json::to_value(RouterView::new(r, gateway)).expect("serializable")
    }
}

/// A router as the API shows it. The constant fields are the extensions the sim does not
/// model (DVR, HA, extra routes, flavors), with the values Neutron shows when they are off.
#[derive(Serialize)]
struct RouterView<'a> {
    id: &'a str,
    name: &'a str,
    project_id: &'a str,
    admin_state_up: bool,
    status: &'static str,
    /// `null` without a gateway.
    external_gateway_info: Option<GatewayView<'a>>,
    availability_zones: [&'static str; 0],
    distributed: bool,
    ha: bool,
    availability_zone_hints: [&'static str; 0],
    routes: [&'static str; 0],
    flavor_id: Option<&'static str>,
    #[serde(flatten)]
    std: &'a StdAttrs,
    tenant_id: &'a str,
}

/// `external_gateway_info`, with the addresses of the gateway port.
#[derive(Serialize)]
struct GatewayView<'a> {
    network_id: &'a str,
    external_fixed_ips: Vec<FixedIpView<'a>>,
    enable_snat: bool,
}

impl<'a> RouterView<'a> {
    fn new(r: &'a Router, external_gateway_info: Option<GatewayView<'a>>) -> Self {
        RouterView {
            id: &r.id,
            name: &r.name,
            project_id: &r.project_id,
            admin_state_up: r.admin_state_up,
            status: "ACTIVE",
            external_gateway_info,
            availability_zones: [],
            distributed: false,
            ha: false,
            availability_zone_hints: [],
            routes: [],
            flavor_id: None,
            std: &r.std,
            tenant_id: &r.project_id,
        }
    }
}

/// The answer to adding or removing a router interface.
#[derive(Serialize)]
struct InterfaceView<'a> {
    id: &'a str,
    project_id: &'a str,
    port_id: &'a str,
    network_id: &'a str,
    /// The port's first subnet, `null` if it has no address.
    subnet_id: Option<&'a str>,
    subnet_ids: Vec<&'a str>,
    tenant_id: &'a str,
}

fn interface_json(router_id: &str, project_id: &str, port: &Port) -> Value {
    let subnet_ids: Vec<&str> = port.fixed_ips.iter().map(|(s, _)| s.as_str()).collect();
    let view = InterfaceView {
        id: router_id,
        project_id,
        port_id: &port.id,
        network_id: &port.network_id,
        subnet_id: subnet_ids.first().copied(),
        subnet_ids,
        tenant_id: project_id,
    };
    serde_json::to_value(view).expect("serializable")
}
