//! Start-up recovery: every intent a crash left `pending` is resolved by its
//! marker, exactly as an ambiguous create is; interrupted builds resume; releases
//! that failed are retried.

use std::sync::Arc;

use netcache_domain::allocation::Resolution;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::server::{TaskState, VmState};
use netcache_store::ServerFilter;
use tracing::{info, warn};

use crate::{Compute, Result, new_request_id};

impl Compute {
    pub(crate) async fn recover(self: &Arc<Self>) -> Result<()> {
        let pending = self.store.pending_intents().await?;
        if !pending.is_empty() {
            info!(
                count = pending.len(),
                "Resolving {} intents left pending",
                pending.len()
            );
        }
        for intent in pending {
            if let Err(e) = self.recover_intent(&intent).await {
                warn!(intent.id = %intent.id, error = %e, "Intent {} still pending: {e}", intent.id);
            }
        }
        for vif in self.store.releasing_vifs().await? {
            self.release_vif(&vif).await?;
        }
        let building = self
            .store
            .servers(&ServerFilter::default())
            .await?
            .into_iter()
            .filter(|s| s.vm_state == VmState::Building);
        for server in building {
            info!(server.id = %server.id, "Resuming build of server {}", server.id);
            self.start_build(server.id, new_request_id());
        }
        Ok(())
    }

    /// A pending intent's port is adopted only if the build it belongs to is still
    /// waiting for it; otherwise it is abandoned (a port carrying it is garbage).
    pub(crate) async fn recover_intent(&self, intent: &PortIntent) -> Result<()> {
        let resolution = self.resolve_by_marker(&self.marker(intent.id)).await?;
        let server = self.store.server(intent.server_id).await?;
        let slot_free = self
            .store
            .vifs(intent.server_id)
            .await?
            .iter()
            .all(|v| v.position != intent.position || !v.is_attached());
        let still_wanted = server.as_ref().is_some_and(|s| {
            s.vm_state == VmState::Building
                && matches!(s.task_state, Some(TaskState::Networking))
                && s.host.as_ref() == Some(&intent.host)
                && s.tried_hosts.len() as u32 == intent.attempt
        }) && slot_free;
        match (resolution, server) {
            (Resolution::Adopt(port), Some(server)) if still_wanted => {
                self.record_created(&server, intent.clone(), port, true).await?;
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
