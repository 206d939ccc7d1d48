//! What a heal pass sweeps, a page of servers at a time: every server (a whole
//! pass), or the heal shards it can take. A shard is taken with a
//! deployment-wide lease (on the database's clock) as the pass reaches it, and
//! the lease is left to run out when the shard is due again
//! ([`heal_shard::due_after`]): a shard another process swept within the
//! interval is skipped, so the processes of a deployment share a sweep; one a
//! process died sweeping is taken by the next pass after its lease ran out.
//! Pages run on from one shard into the next, so a pass's batches stay full.

use std::hash::{DefaultHasher, Hash, Hasher};

use chrono::{DateTime, Utc};
use netcache_domain::ServerId;
use netcache_domain::heal_shard::{self, HealShard};
use netcache_domain::server::WatchedServer;
use netcache_store::DeletedWatch;
use tokio::time::Instant;
use uuid::Uuid;

use crate::{Compute, CrashPoint, Result};

/// Servers in a page: heal reads the watched servers a page at a time (and
/// holds two, the one it heals and the next), so its memory does not grow with
/// the number of servers.
const WATCHED_PAGE: i64 = 1000;

/// Which servers a pass sweeps.
pub(crate) enum Sweep {
    /// Every id at once, no lease taken (`netcache heal`, the audit, the tests).
    Whole { given: bool },
    /// The shards this pass takes, in this process's order.
    Leased {
        holder: String,
        to_try: std::vec::IntoIter<HealShard>,
        started: Instant,
        taken: Vec<HealShard>,
    },
}

impl Sweep {
    pub(crate) fn whole() -> Self {
        Self::Whole { given: false }
    }

    /// The shards `holder` may take, starting at one of its own (so passes of
    /// several processes running at once take different shards first).
    pub(crate) fn leased(holder: String) -> Self {
        let mut hasher = DefaultHasher::new();
        holder.hash(&mut hasher);
        let order: Vec<HealShard> = HealShard::all_from(hasher.finish()).collect();
        Self::Leased {
            holder,
            to_try: order.into_iter(),
            started: Instant::now(),
            taken: Vec::new(),
        }
    }
}

/// Where a pass is in the watched servers.
pub(crate) struct WatchedPages {
    deleted: DeletedWatch,
    sweep: Sweep,
    /// The id range being read, and the last id read of it.
    range: Option<(ServerId, ServerId)>,
    after: Option<ServerId>,
}

impl WatchedPages {
    pub(crate) fn new(deleted: DeletedWatch, sweep: Sweep) -> Self {
        Self {
            deleted,
            sweep,
            range: None,
            after: None,
        }
    }

    /// The shards swept (all of them for a whole pass).
    pub(crate) fn swept(&self) -> Vec<HealShard> {
        match &self.sweep {
            Sweep::Whole { .. } => HealShard::all().collect(),
            Sweep::Leased { taken, .. } => taken.clone(),
        }
    }

    /// Whether the pass swept `server` (`None`: a device id that names no
    /// server, in no shard, which only a whole pass covers).
    pub(crate) fn covers(&self, server: Option<ServerId>) -> bool {
        match &self.sweep {
            Sweep::Whole { .. } => true,
            Sweep::Leased { taken, .. } => server.is_some_and(|id| taken.contains(&HealShard::of(id))),
        }
    }
}

impl Compute {
    /// The next page of the live servers, and deleted ones still inside the
    /// ghost-watch window, in id order within each range; `None` after the last.
    pub(crate) async fn next_watched_page(&self, pages: &mut WatchedPages) -> Result<Option<Vec<WatchedServer>>> {
        let mut page = Vec::new();
        while (page.len() as i64) < WATCHED_PAGE {
            let range = match pages.range {
                Some(range) => range,
                None => match self.next_range(&mut pages.sweep).await? {
                    Some(range) => {
                        pages.after = None;
                        *pages.range.insert(range)
                    }
                    None => break,
                },
            };
            let wanted = WATCHED_PAGE - page.len() as i64;
            let read = self
                .store
                .watched_servers(pages.deleted, range, pages.after, wanted)
                .await?;
            if (read.len() as i64) < wanted {
                pages.range = None;
            } else {
                pages.after = read.last().map(|s| s.id);
            }
            page.extend(read);
        }
        Ok((!page.is_empty()).then_some(page))
    }

    /// The next id range of the sweep: for a leased one, the next shard whose
    /// lease this process can take (free, or run out: due), held until the
    /// shard is due again.
    async fn next_range(&self, sweep: &mut Sweep) -> Result<Option<(ServerId, ServerId)>> {
        match sweep {
            Sweep::Whole { given } => {
                let first = !std::mem::replace(given, true);
                Ok(first.then_some((ServerId(Uuid::nil()), ServerId(Uuid::max()))))
            }
            Sweep::Leased {
                holder,
                to_try,
                started,
                taken,
            } => {
                for shard in to_try.by_ref() {
                    let hold = heal_shard::due_after(
                        self.config.heal.interval,
                        started.elapsed(),
                        self.config.operations.lease,
                    );
                    if self.store.try_lease(&shard.lease_name(), holder, hold).await? {
                        taken.push(shard);
                        self.pass_crash_point(CrashPoint::HealShardTaken)?;
                        return Ok(Some(shard.range()));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Every watched server, every deleted one in the ghost watch included (the
    /// audit's report names them all, and their foreign ghosts).
    pub(crate) async fn watched_servers(&self, now: DateTime<Utc>) -> Result<Vec<WatchedServer>> {
        let mut pages = WatchedPages::new(
            DeletedWatch {
                since: self.watch_start(now),
                every: true,
            },
            Sweep::whole(),
        );
        let mut servers = Vec::new();
        while let Some(page) = self.next_watched_page(&mut pages).await? {
            servers.extend(page);
        }
        Ok(servers)
    }
}
