//! Interface attach, detach and listing (Nova's os-interface). Listing comes from
//! netcache's VIF records, never from "ports with this device_id".

use std::collections::HashMap;
use std::net::IpAddr;

use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::neutron::Port;
use netcache_domain::server::VmState;
use netcache_domain::vif::VifRecord;
use netcache_domain::{NetworkId, PortId, ServerId};
use netcache_neutron::PortFilter;
use tracing::info;

use crate::allocate::NewPortSlot;
use crate::build::action;
use crate::{Compute, Error, RequestContext, Result};

/// What to attach.
#[derive(Clone, Debug)]
pub enum AttachRequest {
    /// A new port on a network (`None`: the only network available).
    Network {
        network_id: Option<NetworkId>,
        fixed_ip: Option<IpAddr>,
        tag: Option<String>,
    },
    /// A port the user created.
    Port { port_id: PortId, tag: Option<String> },
}

/// An attached interface: netcache's record plus Neutron's current details.
#[derive(Clone, Debug)]
pub struct Interface {
    pub vif: VifRecord,
    /// `None` when Neutron no longer has the port.
    pub port: Option<Port>,
}

impl Compute {
    /// Attaches an interface, serialised with every other operation on the server.
    pub async fn attach_interface(
        &self,
        ctx: &RequestContext,
        server_id: ServerId,
        request: AttachRequest,
    ) -> Result<Interface> {
        let _guard = self.locks.lock(server_id).await;
        let server = self.server(server_id).await?;
        if server.vm_state != VmState::Active || server.task_state.is_some() {
            return Err(Error::InvalidState {
                server: server_id,
                action: "attach_interface",
                vm_state: server.vm_state.to_string(),
            });
        }
        let host = server.host.clone().ok_or(Error::InvalidState {
            server: server_id,
            action: "attach_interface",
            vm_state: server.vm_state.to_string(),
        })?;
        let now = self.clock.now();
        self.store
            .commit(vec![Change::StartAction(action(
                ctx,
                server_id,
                "attach_interface",
                now,
            ))])
            .await?;
        let vifs = self.store.vifs(server_id).await?;
        let position = vifs
            .iter()
            .map(|v| v.position + 1)
            .max()
            .unwrap_or(0)
            .max(server.requested_networks.slots().len() as i64);
        let result = match request {
            AttachRequest::Port { port_id, tag } => {
                self.attach_user_port(&server, &host, position, &port_id, tag).await
            }
            AttachRequest::Network {
                network_id,
                fixed_ip,
                tag,
            } => {
                let network_id = match network_id {
                    Some(id) => {
                        let topology = self
                            .catalog
                            .topology(self.neutron.as_ref(), std::slice::from_ref(&id))
                            .await?;
                        if !topology.networks.contains_key(&id) {
                            return Err(Error::NetworkNotFound(id));
                        }
                        id
                    }
                    None => self.only_available_network(&server.project_id).await?,
                };
                let slot = NewPortSlot {
                    attempt: 0,
                    position,
                    network_id,
                    fixed_ip,
                    tag,
                };
                self.allocate_new_port(&server, &host, &slot).await
            }
        };
        let done = self.clock.now();
        let event =
            |ok, details| ActionEvent::finished("compute_attach_interface", done, ok, details, Some(host.to_string()));
        match result {
            Ok(interface) => {
                self.add_event(server_id, &ctx.request_id, event(true, None)).await?;
                Ok(interface)
            }
            Err(e) => {
                self.add_event(server_id, &ctx.request_id, event(false, Some(e.to_string())))
                    .await?;
                Err(e)
            }
        }
    }

    /// Detaches an interface: deletes the port if netcache created it, unbinds it if
    /// the user did. The cache drops it even if Neutron is unreachable; the record
    /// then stays `releasing` until the release succeeds.
    pub async fn detach_interface(&self, ctx: &RequestContext, server_id: ServerId, port_id: &PortId) -> Result<()> {
        let _guard = self.locks.lock(server_id).await;
        let server = self.server(server_id).await?;
        let vif = self.attached_vif(server_id, port_id).await?;
        let now = self.clock.now();
        self.store
            .commit(vec![Change::StartAction(action(
                ctx,
                server_id,
                "detach_interface",
                now,
            ))])
            .await?;
        let released = self.release_vif(&vif).await?;
        let remaining = self.store.vifs(server_id).await?;
        self.commit_with_cache("detach", server_id, &remaining, &HashMap::new(), vec![])
            .await?;
        let event = ActionEvent::finished(
            "compute_detach_interface",
            self.clock.now(),
            true,
            (!released).then(|| "port release left for retry".to_owned()),
            server.host.as_ref().map(ToString::to_string),
        );
        self.add_event(server_id, &ctx.request_id, event).await?;
        info!(server.id = %server_id, port.id = %port_id, released, "Detached port {port_id} from server {server_id}");
        Ok(())
    }

    async fn attached_vif(&self, server_id: ServerId, port_id: &PortId) -> Result<VifRecord> {
        self.store
            .vifs(server_id)
            .await?
            .into_iter()
            .find(|v| &v.port_id == port_id && v.is_attached())
            .ok_or_else(|| Error::InterfaceNotFound {
                server: server_id,
                port: port_id.clone(),
            })
    }

    /// The server's attached interfaces with Neutron's current details (one call).
    pub async fn interfaces(&self, server_id: ServerId) -> Result<Vec<Interface>> {
        self.server(server_id).await?;
        let vifs: Vec<VifRecord> = self
            .store
            .vifs(server_id)
            .await?
            .into_iter()
            .filter(VifRecord::is_attached)
            .collect();
        if vifs.is_empty() {
            return Ok(vec![]);
        }
        let ports = self
            .neutron
            .list_ports(&PortFilter {
                ids: vifs.iter().map(|v| v.port_id.clone()).collect(),
                ..PortFilter::default()
            })
            .await?;
        let mut by_id: HashMap<PortId, Port> = ports.into_iter().map(|p| (p.id.clone(), p)).collect();
        Ok(vifs
            .into_iter()
            .map(|vif| Interface {
                port: by_id.remove(&vif.port_id),
                vif,
            })
            .collect())
    }

    /// One attached interface; 404 unless it is in the server's VIF records.
    pub async fn interface(&self, server_id: ServerId, port_id: &PortId) -> Result<Interface> {
        self.server(server_id).await?;
        let vif = self.attached_vif(server_id, port_id).await?;
        let port = match self.neutron.show_port(port_id).await {
            Ok(port) => Some(port),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        Ok(Interface { vif, port })
    }
}
