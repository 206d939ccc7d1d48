//! Nova's actions on a server's recorded state that ask no hypervisor: an
//! admin's `os-resetState`, and `restore` of a soft-deleted server (which
//! netcache never has).

use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::ServerId;
use netcache_domain::change::Change;
use netcache_domain::server::{Server, VmState};
use tracing::info;

use crate::{Compute, Error, RequestContext, Result};

/// Compare-and-swap attempts of a reset before the conflict is answered.
const ATTEMPTS: usize = 5;

/// An admin's state reset, and the restore of a soft-deleted server.
#[async_trait]
pub trait ServerStateOps: Send + Sync {
    /// `os-resetState`: the server's vm_state set, its task cleared, with the
    /// `resetState` instance action, in one compare-and-swap on the row read.
    /// Fenced by `RequireIdle`: while an operation holds the server (it alone
    /// writes the state, and it resumes itself) the reset is a 409.
    async fn reset_state(&self, ctx: &RequestContext, server_id: ServerId, vm_state: VmState) -> Result<()>;

    /// `restore` brings back a soft-deleted server. netcache deletes at once
    /// (Nova's `reclaim_instance_interval = 0`), so no server is ever
    /// soft-deleted: after the lock check, Nova's 409 for any other vm_state.
    async fn restore(&self, ctx: &RequestContext, server_id: ServerId) -> Result<()>;
}

#[async_trait]
impl ServerStateOps for Arc<Compute> {
    async fn reset_state(&self, ctx: &RequestContext, server_id: ServerId, vm_state: VmState) -> Result<()> {
        let mut attempt = 0;
        loop {
            let server = self.server(server_id).await?;
            if let Some(op) = self.store.operation(server_id).await? {
                return Err(Error::OperationInFlight {
                    server: server_id,
                    kind: server
                        .task_state
                        .map_or_else(|| op.kind().to_string(), |t| t.to_string()),
                    action: "os-resetState".to_owned(),
                });
            }
            let now = self.clock.now();
            let reset = Server {
                vm_state,
                task_state: None,
                updated_at: now,
                ..server
            };
            let changes = vec![
                Change::RequireIdle { server_id },
                Change::UpdateServer(reset),
                Change::StartAction(ctx.action(server_id, "resetState", now)),
            ];
            match self.commit(changes).await {
                Ok(()) => {
                    info!(server.id = %server_id, "Server {server_id} reset to {vm_state}");
                    return Ok(());
                }
                // An edit or an operation got there first: look again.
                Err(Error::Store(e)) if e.is_conflict() && attempt + 1 < ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    async fn restore(&self, ctx: &RequestContext, server_id: ServerId) -> Result<()> {
        let server = self.server(server_id).await?;
        Compute::check_unlocked(ctx, &server)?;
        Err(Error::InvalidState {
            server: server_id,
            action: "restore",
            vm_state: server.vm_state.to_string(),
        })
    }
}
