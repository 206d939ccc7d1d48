//! Resuming an operation: intents left `pending` on its server (by a crash or a
//! dead owner) are resolved by their marker, exactly as an ambiguous create is,
//! before the operation continues from its records. The intents a boot recorded
//! when it was accepted are the exception on the build's first run in the
//! process that accepted it: their POSTs are known not to be sent yet.

use std::sync::Arc;

use netcache_domain::allocation::Resolution;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::server::{TaskState, VmState};
use tracing::info;

use crate::attachment::allocate::CreatedPort;
use crate::{Compute, Result};

impl Compute {
    pub(crate) async fn resolve_pending_intents(self: &Arc<Self>, op: &Operation, unsent: &[PortIntent]) -> Result<()> {
        for intent in self.store.intents(op.server_id).await? {
            if intent.state == IntentState::Pending && !unsent.iter().any(|u| u.id == intent.id) {
                info!(intent.id = %intent.id, "Resolving intent {} left pending", intent.id);
                self.recover_intent(op, &intent).await?;
            }
        }
        Ok(())
    }

    /// A pending intent's port is adopted only if the operation it belongs to is
    /// this one and still waits for it; otherwise it is abandoned (a port carrying
    /// it is garbage for GC).
    async fn recover_intent(&self, op: &Operation, intent: &PortIntent) -> Result<()> {
        let resolution = self.resolve_by_marker(&self.marker(intent.id)).await?;
        let server = self.store.server(intent.server_id).await?;
        let slot_free = self
            .store
            .vifs(intent.server_id)
            .await?
            .iter()
            .all(|v| v.position != intent.position || !v.is_attached());
        let still_wanted = slot_free
            && server.as_ref().is_some_and(|s| match &op.params {
                OperationParams::Build => {
                    s.vm_state == VmState::Building
                        && matches!(s.task_state, Some(TaskState::Networking))
                        && s.host.as_ref() == Some(&intent.host)
                        && s.tried_hosts.len() as u32 == intent.attempt
                }
                OperationParams::Attach { position, .. } => intent.attempt == 0 && intent.position == *position,
                _ => false,
            });
        match (resolution, server) {
            (Resolution::Adopt(port), Some(server)) if still_wanted => {
                let adopted = CreatedPort {
                    intent: intent.clone(),
                    port,
                    adopted: true,
                };
                self.record_created(server.id, None, &[adopted], vec![]).await?;
            }
            (Resolution::Adopt(port), _) => {
                self.finish_intent(
                    intent,
                    IntentState::Abandoned,
                    Some(port.id),
                    Some("recovered after its request was over".into()),
                )
                .await?;
            }
            (Resolution::Abandon, _) => {
                self.finish_intent(
                    intent,
                    IntentState::Abandoned,
                    None,
                    Some("no port carries the intent".into()),
                )
                .await?;
            }
        }
        Ok(())
    }
}
