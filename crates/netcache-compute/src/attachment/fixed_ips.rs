//! Nova's multinic actions: `addFixedIp` gives the server a new interface on a
//! network (an attach), `removeFixedIp` takes one address off the interface that
//! holds it — the port stays, with its other addresses — as a durable operation:
//! Neutron is asked to keep the port's other addresses, then the record and the
//! cache follow. Asking again after a crash is harmless (the same update).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::vif::{PortDetails, VifRecord};
use netcache_domain::{NetworkId, PortId, ServerId};
use netcache_neutron::{FixedIpRequest, PortUpdate};
use tracing::info;

use crate::attachment::InterfaceOps;
use crate::attachment::allocate::with_vif_replaced;
use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::{AttachRequest, Compute, Error, RequestContext, Result};

/// `removeFixedIp`; at the cap its instance action records the cause.
pub(crate) struct RemoveFixedIpStep;

#[async_trait::async_trait]
impl OperationStep for RemoveFixedIpStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::AnswerWithCause
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        let OperationParams::RemoveFixedIp { port_id, address } = &op.params else {
            unreachable!("the remove_fixed_ip step runs remove_fixed_ip operations");
        };
        cx.compute
            .run_remove_fixed_ip(op, port_id, *address)
            .await
            .map(|()| Next::Done)
    }
}

/// Nova's addFixedIp and removeFixedIp actions.
#[async_trait]
pub trait FixedIpOps: Send + Sync {
    /// `addFixedIp`: a new interface on `network_id` (an attach, with its
    /// `attach_interface` instance action).
    async fn add_fixed_ip(&self, ctx: &RequestContext, server_id: ServerId, network_id: NetworkId) -> Result<()>;

    /// `removeFixedIp`: 400 ([`Error::FixedIpNotFound`]) unless one of the
    /// server's interfaces holds `address`.
    async fn remove_fixed_ip(&self, ctx: &RequestContext, server_id: ServerId, address: IpAddr) -> Result<()>;
}

#[async_trait]
impl FixedIpOps for Arc<Compute> {
    async fn add_fixed_ip(&self, ctx: &RequestContext, server_id: ServerId, network_id: NetworkId) -> Result<()> {
        let request = AttachRequest::Network {
            network_id: Some(network_id),
            fixed_ip: None,
            tag: None,
        };
        self.attach_interface(ctx, server_id, request).await.map(|_| ())
    }

    async fn remove_fixed_ip(&self, ctx: &RequestContext, server_id: ServerId, address: IpAddr) -> Result<()> {
        Compute::check_unlocked(ctx, &self.server(server_id).await?)?;
        let holder = self
            .store
            .vifs(server_id)
            .await?
            .into_iter()
            .find(|v| v.is_attached() && holds(v, address))
            .ok_or(Error::FixedIpNotFound {
                server: server_id,
                address,
            })?;
        let params = OperationParams::RemoveFixedIp {
            port_id: holder.port_id,
            address,
        };
        let op = self.new_operation(server_id, params, ctx);
        let start = Change::StartAction(ctx.action(server_id, "removeFixedIp", self.clock.now()));
        self.submit(op, vec![start]).await
    }
}

impl Compute {
    async fn run_remove_fixed_ip(&self, op: &Operation, port_id: &PortId, address: IpAddr) -> Result<()> {
        let server_id = op.server_id;
        let vifs = self.store.vifs(server_id).await?;
        // Detached meanwhile (or the server went): nothing holds the address here.
        let Some(vif) = vifs.iter().find(|v| &v.port_id == port_id && v.is_attached()).cloned() else {
            return Ok(());
        };
        let mut port = self.neutron.show_port(port_id).await?;
        if port.fixed_ips.iter().any(|f| f.ip_address == address) {
            let keep = port
                .fixed_ips
                .iter()
                .filter(|f| f.ip_address != address)
                .map(|f| FixedIpRequest {
                    subnet_id: Some(f.subnet_id.clone()),
                    ip_address: Some(f.ip_address),
                })
                .collect();
            port = self
                .neutron
                .update_port(port_id, &PortUpdate::fixed_ips(keep), None)
                .await?;
        }
        let vif = VifRecord {
            details: Some(PortDetails::of(&port)),
            ..vif
        };
        let vifs_after = with_vif_replaced(vifs, &vif);
        let observed = HashMap::from([(port.id.clone(), self.observed_present(port_id, port).await?)]);
        let host = self
            .store
            .server(server_id)
            .await?
            .and_then(|s| s.host)
            .map(|h| h.to_string());
        let event = Change::AddActionEvent {
            server_id,
            request_id: op.request_id.clone(),
            event: ActionEvent::finished(
                "compute_remove_fixed_ip_from_instance",
                self.clock.now(),
                true,
                None,
                host,
            ),
        };
        self.commit_with_cache(
            "remove_fixed_ip",
            server_id,
            &vifs_after,
            &observed,
            vec![Change::UpdateVif(vif), event],
        )
        .await?;
        info!(server.id = %server_id, port.id = %port_id, "Removed {address} from port {port_id} of server {server_id}");
        Ok(())
    }
}

fn holds(vif: &VifRecord, address: IpAddr) -> bool {
    vif.details
        .as_ref()
        .is_some_and(|d| d.fixed_ips.iter().any(|f| f.ip_address == address))
}
