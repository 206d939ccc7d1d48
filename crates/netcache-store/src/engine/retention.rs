//! The purge of deleted servers: every row of theirs in one transaction, each
//! statement re-checking that its servers are still deleted and unneeded.

use netcache_domain::ServerId;
use netcache_domain::retention::Purged;
use netcache_store_bounds::sql_bounds;

use super::{Backend, Sql};
use crate::{Error, Result, sql};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    pub(super) async fn purge_servers<B: Backend<Db = DB>>(backend: &B, servers: &[ServerId]) -> Result<Purged> {
        if servers.is_empty() {
            return Ok(Purged::default());
        }
        let mut tx = backend.writer().begin_with(DB::BEGIN_WRITE).await?;
        let events = Self::run_for_servers(&mut tx, sql::PURGE_EVENTS, servers).await?;
        let actions = Self::run_for_servers(&mut tx, sql::PURGE_ACTIONS, servers).await?;
        let intents = Self::run_for_servers(&mut tx, sql::PURGE_INTENTS, servers).await?;
        Self::run_for_servers(&mut tx, sql::PURGE_CACHES, servers).await?;
        Self::run_for_servers(&mut tx, sql::PURGE_GROUP_MEMBERS, servers).await?;
        let purged = Self::run_for_servers(&mut tx, sql::PURGE_SERVERS, servers).await?;
        tx.commit().await.map_err(Error::from_write)?;
        Ok(Purged {
            servers: purged,
            intents,
            actions,
            events,
        })
    }
}
