//! Interface attach, detach and listing (Nova's os-interface). Listing comes from
//! netcache's VIF records, never from "ports with this device_id".

use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::server::{Server, VmState};
use netcache_domain::vif::{VifOrigin, VifRecord};
use netcache_domain::visibility::User;
use netcache_domain::{HostName, NetworkId, PortId, ServerId};
use tracing::{info, warn};

use crate::attachment::allocate::NewPortSlot;
use crate::runner::Outcome;
use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::{Compute, Error, RequestContext, Result};

/// How long after it was asked an attach may still create its port again, when
/// a create's outcome was unknown and no port came of it: about as long as Nova's
/// API waits for the compute host's answer (its default `rpc_response_timeout`).
const ATTACH_CREATE_DEADLINE: TimeDelta = TimeDelta::seconds(60);

/// The waits before such creates: the first again at once, then longer.
const ATTACH_CREATE_BACKOFF: [TimeDelta; 4] = [
    TimeDelta::zero(),
    TimeDelta::seconds(1),
    TimeDelta::seconds(2),
    TimeDelta::seconds(5),
];

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

/// An attached interface: netcache's record, with the port's details as last seen.
#[derive(Clone, Debug)]
pub struct Interface {
    pub vif: VifRecord,
}

/// An attach; at the cap its request is answered with the cause.
pub(crate) struct AttachStep;

#[async_trait::async_trait]
impl OperationStep for AttachStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::AnswerWithCause
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        cx.compute.run_attach(op).await.map(|()| Next::Done)
    }
}

/// A detach; at the cap its instance action records the cause.
pub(crate) struct DetachStep;

#[async_trait::async_trait]
impl OperationStep for DetachStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::AnswerWithCause
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        let OperationParams::Detach { port_id } = &op.params else {
            unreachable!("the detach step runs detach operations");
        };
        cx.compute.run_detach(op, port_id).await.map(|()| Next::Done)
    }
}

/// A server's interfaces (os-interface): attach, detach, list and show.
#[async_trait]
pub trait InterfaceOps: Send + Sync {
    /// Attaches an interface: an operation of its own (409 while another one runs
    /// on the server). Waits for the outcome; a client that leaves does not stop it.
    async fn attach_interface(
        &self,
        ctx: &RequestContext,
        server_id: ServerId,
        request: AttachRequest,
    ) -> Result<Interface>;

    /// Detaches an interface (Nova's 202): an operation that deletes the port if
    /// netcache created it, unbinds it if the user did. The cache drops it when the
    /// release is recorded; the record stays `releasing` until Neutron agreed.
    async fn detach_interface(&self, ctx: &RequestContext, server_id: ServerId, port_id: &PortId) -> Result<()>;

    /// The server's attached interfaces, from netcache's records alone: no Neutron call.
    async fn interfaces(&self, server_id: ServerId) -> Result<Vec<Interface>>;

    /// One attached interface; 404 unless it is in the server's VIF records
    /// and bound.
    async fn interface(&self, server_id: ServerId, port_id: &PortId) -> Result<Interface>;
}

#[async_trait]
impl InterfaceOps for Arc<Compute> {
    async fn attach_interface(
        &self,
        ctx: &RequestContext,
        server_id: ServerId,
        request: AttachRequest,
    ) -> Result<Interface> {
        let server = self.server(server_id).await?;
        Compute::check_unlocked(ctx, &server)?;
        self.marker_mode().await?;
        // Nova attaches to a running, paused or stopped guest, with no task running.
        let attachable = matches!(server.vm_state, VmState::Active | VmState::Paused | VmState::Stopped);
        if !attachable || server.task_state.is_some() || server.host.is_none() {
            return Err(Error::InvalidState {
                server: server_id,
                action: "attach_interface",
                vm_state: server.vm_state.to_string(),
            });
        }
        let vifs = self.store.vifs(server_id).await?;
        let position = vifs
            .iter()
            .map(|v| v.position + 1)
            .max()
            .unwrap_or(0)
            .max(server.requested_networks.slots().len() as i64);
        let user = User {
            project: &server.project_id,
            admin: ctx.is_admin(),
        };
        let params = match request {
            AttachRequest::Port { port_id, tag } => {
                // Nova's checks before anything is recorded.
                self.usable_user_port(user, Some(server_id), &port_id)
                    .await
                    .map_err(Error::on_attach)?;
                if self.store.vif_by_port(&port_id).await?.is_some() {
                    return Err(Error::PortInUse(port_id));
                }
                OperationParams::Attach {
                    position,
                    network_id: None,
                    fixed_ip: None,
                    port_id: Some(port_id),
                    tag,
                }
            }
            AttachRequest::Network {
                network_id,
                fixed_ip,
                tag,
            } => {
                let network_id = match network_id {
                    Some(id) => {
                        self.usable_networks(user, std::slice::from_ref(&id))
                            .await
                            .map_err(Error::on_attach)?;
                        id
                    }
                    None => self.only_available_network(user).await?,
                };
                if let Some(ip) = fixed_ip {
                    self.fixed_ip_free(&network_id, ip).await.map_err(Error::on_attach)?;
                }
                OperationParams::Attach {
                    position,
                    network_id: Some(network_id),
                    fixed_ip,
                    port_id: None,
                    tag,
                }
            }
        };
        let op = self.new_operation(server_id, params, ctx);
        let start = Change::StartAction(ctx.action(server_id, "attach_interface", self.clock.now()));
        match self.submit_and_wait(op, vec![start]).await.map_err(Error::on_attach)? {
            Outcome::Attached(interface) => Ok(*interface),
            Outcome::Applied => unreachable!("an attach's outcome is its interface"),
        }
    }

    async fn detach_interface(&self, ctx: &RequestContext, server_id: ServerId, port_id: &PortId) -> Result<()> {
        Compute::check_unlocked(ctx, &self.server(server_id).await?)?;
        self.attached_vif(server_id, port_id).await?;
        let op = self.new_operation(
            server_id,
            OperationParams::Detach {
                port_id: port_id.clone(),
            },
            ctx,
        );
        let start = Change::StartAction(ctx.action(server_id, "detach_interface", self.clock.now()));
        self.submit(op, vec![start]).await
    }

    async fn interfaces(&self, server_id: ServerId) -> Result<Vec<Interface>> {
        self.server(server_id).await?;
        Ok(self
            .attached_vifs(server_id)
            .await?
            .into_iter()
            .map(|vif| Interface { vif })
            .collect())
    }

    async fn interface(&self, server_id: ServerId, port_id: &PortId) -> Result<Interface> {
        self.server(server_id).await?;
        let vif = self.attached_vif(server_id, port_id).await?;
        if vif.is_mid_attach() {
            return Err(Error::InterfaceNotFound {
                server: server_id,
                port: port_id.clone(),
            });
        }
        Ok(Interface { vif })
    }
}

impl Compute {
    /// The attach itself; its outcome goes to the waiting request, if any.
    async fn run_attach(&self, op: &Operation) -> Result<()> {
        let result = self.attach_step(op).await;
        // Not an outcome: the operation stops here (crash) or is retried (the
        // database failed, or Neutron's answer was lost and the lookup could not tell).
        let retried = |e: &Error| match e {
            Error::Crashed(_) | Error::Store(_) => true,
            Error::Neutron(e) => e.is_ambiguous(),
            _ => false,
        };
        if result.as_ref().is_err_and(retried) {
            return result.map(|_| ());
        }
        let server = self.store.server(op.server_id).await?;
        let host = server.and_then(|s| s.host).map(|h| h.to_string());
        let done = self.clock.now();
        let event = match &result {
            Ok(_) => ActionEvent::finished("compute_attach_interface", done, true, None, host),
            Err(e) => ActionEvent::finished("compute_attach_interface", done, false, Some(e.to_string()), host),
        };
        self.add_event(op.server_id, &op.request_id, event).await?;
        self.keep_outcome(op.id, result.map(|i| Outcome::Attached(Box::new(i))));
        Ok(())
    }

    async fn attach_step(&self, op: &Operation) -> Result<Interface> {
        let OperationParams::Attach {
            position,
            network_id,
            fixed_ip,
            port_id,
            tag,
        } = op.params.clone()
        else {
            unreachable!("run_attach runs attach operations");
        };
        let server = self.server(op.server_id).await?;
        let host = server.host.clone().ok_or(Error::InvalidState {
            server: server.id,
            action: "attach_interface",
            vm_state: server.vm_state.to_string(),
        })?;
        // Resumed after the port was recorded: the attach is done.
        if let Some(vif) = self
            .store
            .vifs(server.id)
            .await?
            .into_iter()
            .find(|v| v.position == position && v.is_attached() && port_id.as_ref().is_none_or(|p| *p == v.port_id))
            && (vif.origin == VifOrigin::Created || vif.details.is_some())
        {
            return Ok(Interface { vif });
        }
        match (port_id, network_id) {
            (Some(port_id), _) => self.attach_user_port(&server, &host, position, &port_id, tag).await,
            (None, network_id) => {
                let slot = NewPortSlot {
                    attempt: 0,
                    position,
                    network_id: network_id.ok_or(Error::NoNetworkAvailable)?,
                    fixed_ip,
                    tag,
                    security_groups: Vec::new(),
                };
                let deadline = op.created_at + ATTACH_CREATE_DEADLINE;
                self.allocate_for_attach(&server, &host, &slot, deadline).await
            }
        }
    }

    /// Creates an attach's port. A create whose outcome was unknown and whose
    /// marker lookup then found no port has its intent abandoned (not created;
    /// a port that still comes of it is a ghost of ours, for GC): the port is
    /// created again under a new intent, recorded first (invariants 2 and 3),
    /// while the attach's deadline allows; after it, the attach gives up.
    async fn allocate_for_attach(
        &self,
        server: &Server,
        host: &HostName,
        slot: &NewPortSlot,
        deadline: DateTime<Utc>,
    ) -> Result<Interface> {
        let mut tries = 0;
        loop {
            match self.allocate_new_port(server, host, slot).await {
                Err(Error::CreateAbandoned { intent, .. }) => {
                    let wait = ATTACH_CREATE_BACKOFF[tries.min(ATTACH_CREATE_BACKOFF.len() - 1)];
                    if self.clock.now() + wait >= deadline {
                        warn!(server.id = %server.id, intent.id = %intent, "No port came of intent {intent} and the attach to server {} is out of time", server.id);
                        return Err(Error::CreateAbandoned {
                            network: slot.network_id.clone(),
                            intent,
                        });
                    }
                    info!(server.id = %server.id, intent.id = %intent, "No port came of intent {intent}; creating the port for server {} again under a new intent", server.id);
                    tokio::time::sleep(wait.to_std().unwrap_or_default()).await;
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    async fn run_detach(&self, op: &Operation, port_id: &PortId) -> Result<()> {
        let server_id = op.server_id;
        let Some(vif) = self
            .store
            .vifs(server_id)
            .await?
            .into_iter()
            .find(|v| &v.port_id == port_id)
        else {
            return Ok(());
        };
        let released = self.release_vif(&vif).await?;
        let server = self.store.server(server_id).await?;
        let event = ActionEvent::finished(
            "compute_detach_interface",
            self.clock.now(),
            true,
            (!released).then(|| "port release left for retry".to_owned()),
            server.and_then(|s| s.host).map(|h| h.to_string()),
        );
        self.add_event(server_id, &op.request_id, event).await?;
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

    /// The VIF records of the server's attached interfaces, in order.
    pub(crate) async fn attached_vifs(&self, server_id: ServerId) -> Result<Vec<VifRecord>> {
        let mut vifs = self.store.vifs(server_id).await?;
        vifs.retain(|vif| vif.is_attached() && !vif.is_mid_attach());
        Ok(vifs)
    }
}
