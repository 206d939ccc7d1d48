//! What the rest of compute asks about operation rows: heal and GC leave a
//! server with one in flight alone; a build stops early for a queued delete.
//! Running operations is the runner's (`runner/`).

use std::collections::HashSet;

use netcache_domain::ServerId;

use crate::{Compute, Result};

impl Compute {
    /// Whether a delete was queued on the server's operation (a build stops early).
    pub(crate) async fn delete_requested(&self, server_id: ServerId) -> Result<bool> {
        Ok(self
            .store
            .operation(server_id)
            .await?
            .is_some_and(|o| o.then_delete.is_some()))
    }

    /// Servers with an operation in flight (heal and GC leave them alone).
    pub(crate) async fn busy_servers(&self) -> Result<HashSet<ServerId>> {
        Ok(self
            .store
            .operations()
            .await?
            .into_iter()
            .map(|o| o.server_id)
            .collect())
    }
}
