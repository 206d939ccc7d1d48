//! Retention: deleted servers purged with every row of theirs, a batch per
//! transaction, by the loop and by `netcache purge` (which needs no Neutron).

use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::retention::{Purged, purge_cutoff};
use netcache_store::Store;
use tracing::info;

use crate::{Compute, Result};

/// Servers purged per transaction (one `IN (…)` list each).
const PURGE_BATCH: i64 = 128;

/// Purges the servers deleted before `before` (never one heal still watches:
/// deleted within `ghost_watch` of `now`); with `dry_run`, only counts them.
/// `progress` gets the running total after each batch.
pub async fn purge(
    store: &dyn Store,
    before: DateTime<Utc>,
    now: DateTime<Utc>,
    ghost_watch: TimeDelta,
    dry_run: bool,
    progress: &(dyn Fn(Purged) + Send + Sync),
) -> Result<Purged> {
    let cutoff = purge_cutoff(before, now, ghost_watch);
    if dry_run {
        return Ok(store.count_purgeable(cutoff).await?);
    }
    let mut total = Purged::default();
    loop {
        let batch = store.purgeable_servers(cutoff, PURGE_BATCH).await?;
        if batch.is_empty() {
            break;
        }
        total = total.plus(store.purge_servers(&batch).await?);
        progress(total);
    }
    metrics::counter!("netcache_purged_servers_total").increment(total.servers);
    info!(
        servers = total.servers,
        intents = total.intents,
        actions = total.actions,
        events = total.events,
        %cutoff,
        "Purged {} servers deleted before {cutoff}", total.servers
    );
    Ok(total)
}

impl Compute {
    /// One purge by the configured age (the loop's pass).
    pub async fn purge_expired(&self) -> Result<Purged> {
        let now = self.clock.now();
        let age = TimeDelta::from_std(self.config.retention.purge_deleted_after).unwrap_or(TimeDelta::MAX);
        let before = now.checked_sub_signed(age).unwrap_or(DateTime::UNIX_EPOCH);
        purge(self.store.as_ref(), before, now, self.ghost_watch(), false, &|_| {}).await
    }

    /// How long a deleted server stays watched for ghosts.
    pub fn ghost_watch(&self) -> TimeDelta {
        TimeDelta::from_std(self.config.heal.deleted_window).unwrap_or(TimeDelta::MAX)
    }
}
