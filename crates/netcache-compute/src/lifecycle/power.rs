//! Power actions as durable operations: the task state and the instance action
//! are committed with the operation row, the driver is asked, and the outcome
//! (the new vm_state, or the old one back with a failed event) is committed after.
//! A process that dies in between leaves the operation to be resumed: the driver
//! is asked again, which is harmless.

use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::ServerId;
use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::power::PowerAction;
use netcache_domain::server::Server;
use tracing::{info, warn};

use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::{Compute, Error, RequestContext, Result};

/// A power action; at the cap its server goes to ERROR with the cause.
pub(crate) struct PowerStep;

#[async_trait::async_trait]
impl OperationStep for PowerStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::ServerInError
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        let OperationParams::Power { action } = &op.params else {
            unreachable!("the power step runs power operations");
        };
        cx.compute.run_power(op, *action).await.map(|()| Next::Done)
    }
}

/// Power actions: start, stop, reboot, pause, suspend and the like.
#[async_trait]
pub trait PowerOps: Send + Sync {
    /// Starts `power` on the server: 409 ([`Error::InvalidState`]) unless Nova
    /// would allow it in the server's state, or if another operation runs.
    async fn power(&self, ctx: &RequestContext, server_id: ServerId, power: PowerAction) -> Result<()>;
}

#[async_trait]
impl PowerOps for Arc<Compute> {
    async fn power(&self, ctx: &RequestContext, server_id: ServerId, power: PowerAction) -> Result<()> {
        let server = self.server(server_id).await?;
        Compute::check_unlocked(ctx, &server)?;
        let task = power
            .begin(server.vm_state, server.task_state, server.host.is_some())
            .map_err(|wrong| Error::InvalidState {
                server: server_id,
                action: power.name(),
                vm_state: wrong.vm_state.to_string(),
            })?;
        let now = self.clock.now();
        let op = self.new_operation(server_id, OperationParams::Power { action: power }, ctx);
        let running = Server {
            task_state: Some(task),
            updated_at: now,
            ..server
        };
        let start = Change::StartAction(ctx.action(server_id, power.name(), now));
        self.submit(op, vec![Change::UpdateServer(running), start]).await
    }
}

impl Compute {
    async fn run_power(&self, op: &Operation, power: PowerAction) -> Result<()> {
        let server = self.server(op.server_id).await?;
        // Resumed after the outcome was recorded: nothing is left to do.
        if server.task_state != Some(power.task_state()) {
            return Ok(());
        }
        let host = server.host.clone().ok_or_else(|| Error::InvalidState {
            server: server.id,
            action: power.name(),
            vm_state: server.vm_state.to_string(),
        })?;
        let outcome = self.virt.power(&host, &server, power).await;
        self.crash_point(crate::CrashPoint::AfterPowerChanged)?;
        let now = self.clock.now();
        let (vm_state, failure) = match outcome {
            Ok(()) => (power.outcome(), None),
            Err(fault) => {
                warn!(server.id = %server.id, host = %host, "{} of server {} failed: {fault}", power.name(), server.id);
                (server.vm_state, Some(fault))
            }
        };
        let event = ActionEvent::finished(&power.event(), now, failure.is_none(), failure, Some(host.to_string()));
        let done = Server {
            vm_state,
            task_state: None,
            updated_at: now,
            ..server
        };
        self.commit(vec![
            Change::UpdateServer(done),
            Change::AddActionEvent {
                server_id: op.server_id,
                request_id: op.request_id.clone(),
                event,
            },
        ])
        .await?;
        info!(server.id = %op.server_id, "Server {} is {vm_state} after {}", op.server_id, power.name());
        Ok(())
    }
}
