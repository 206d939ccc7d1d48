//! The fence: every commit a task makes while it runs an operation holds that
//! operation (server, id, owner) in the same batch, so a process that lost it
//! to a takeover can no longer write.

use netcache_domain::ServerId;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, Owner};

use crate::{Compute, Result};

tokio::task_local! {
    /// The operation the current task executes: every commit it makes is fenced on it.
    pub(super) static FENCE: Fence;
}

#[derive(Clone)]
pub(super) struct Fence {
    server_id: ServerId,
    id: uuid::Uuid,
    owner: Owner,
}

impl Fence {
    pub(super) fn of(op: &Operation) -> Self {
        Self {
            server_id: op.server_id,
            id: op.id,
            owner: op.owner.clone(),
        }
    }
}

impl Compute {
    /// Commits a batch; inside an operation, only while this process still owns it.
    pub(crate) async fn commit(&self, changes: Vec<Change>) -> Result<()> {
        let mut changes = changes;
        if let Ok(fence) = FENCE.try_with(Fence::clone) {
            changes.insert(
                0,
                Change::HoldOperation {
                    server_id: fence.server_id,
                    id: fence.id,
                    owner: fence.owner,
                    step: "running".to_owned(),
                },
            );
        }
        Ok(self.store.commit(changes).await?)
    }
}
