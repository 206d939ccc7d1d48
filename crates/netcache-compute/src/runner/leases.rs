//! Leases and takeovers. Every tick (a third of `operations.lease`) the runner
//! checks its node lock, renews the leases of the operations it works on — only
//! those: a row no task of this process runs is never kept alive — and takes
//! over what the database says is claimable: leases run out on the database's
//! clock, and an earlier incarnation's of this node. A lost node lock (the
//! PostgreSQL session gone) stops this process taking work until it holds the
//! lock again; another incarnation of the node may already be taking its work.

use std::sync::Arc;

use netcache_domain::change::Change;
use netcache_domain::operation::Operation;
use tracing::{error, info, warn};

use crate::{Compute, Result};

impl Compute {
    /// Takes over every operation whose owner died (and those of an earlier
    /// incarnation of this node at once), up to the free places.
    pub async fn claim_orphaned_operations(self: &Arc<Self>) -> Result<usize> {
        if !self.runner.takes_work() {
            return Ok(0);
        }
        self.run_forgotten_operations().await?;
        let free = self.runner.free_places();
        if free == 0 {
            return Ok(0);
        }
        let mut claimed = 0;
        let me = &self.runner.owner;
        for op in self.store.claimable_operations(me, free as i64).await? {
            let claim = Change::ClaimOperation {
                server_id: op.server_id,
                id: op.id,
                previous_owner: op.owner.clone(),
                owner: me.clone(),
                lease: self.runner.lease(),
            };
            match self.store.commit(vec![claim]).await {
                Ok(()) => {}
                // Another process claimed it first, or its owner renewed it.
                Err(e) if e.is_conflict() => continue,
                Err(e) => return Err(e.into()),
            }
            info!(
                server.id = %op.server_id, kind = %op.kind(), previous_owner = %op.owner.label(),
                "Took over {} of server {} from {}", op.kind(), op.server_id, op.owner.label()
            );
            metrics::counter!("netcache_operations_taken_over_total", "kind" => op.kind().as_str()).increment(1);
            claimed += 1;
            self.spawn_operation(Operation {
                owner: me.clone(),
                ..op
            });
        }
        Ok(claimed)
    }

    /// Operations this incarnation owns but does not run (a commit whose caller
    /// vanished between the commit and the start) are started: their leases are
    /// renewed only while a task works on them.
    async fn run_forgotten_operations(self: &Arc<Self>) -> Result<()> {
        for op in self.store.operations().await? {
            if op.owner == self.runner.owner && !self.runner.is_running(op.server_id) {
                warn!(server.id = %op.server_id, kind = %op.kind(), "Starting {} of server {} that nothing ran", op.kind(), op.server_id);
                self.spawn_operation(op);
            }
        }
        Ok(())
    }

    /// For a process about to exit (a one-off command): the leases of the
    /// operations it owns end now, so a running service takes them over at its
    /// next tick rather than a whole lease later (a GC pass's release that
    /// Neutron refused, say). Answers how many were handed back.
    pub async fn hand_back_operations(&self) -> Result<u64> {
        let me = &self.runner.owner;
        let mine: Vec<_> = self
            .store
            .operations()
            .await?
            .into_iter()
            .filter(|op| op.owner == *me)
            .map(|op| op.server_id)
            .collect();
        if mine.is_empty() {
            return Ok(0);
        }
        let handed = self.store.renew_leases(me, &mine, chrono::TimeDelta::zero()).await?;
        info!(
            operations = handed,
            "Handed {handed} unfinished operations back for another process to take over"
        );
        Ok(handed)
    }

    /// One tick of the lease loop.
    pub async fn lease_tick(self: &Arc<Self>) {
        self.check_node_lock().await;
        self.renew_running_leases().await;
        self.renew_service_heartbeats().await;
        if let Err(e) = self.claim_orphaned_operations().await {
            error!(error = %e, "Could not take over orphaned operations: {e}");
        }
    }

    /// Renews the leases of the operations a task of this process works on.
    pub(crate) async fn renew_running_leases(&self) {
        let running = self.runner.running_servers();
        if running.is_empty() {
            return;
        }
        if let Err(e) = self
            .store
            .renew_leases(&self.runner.owner, &running, self.runner.lease())
            .await
        {
            error!(error = %e, "Could not renew operation leases: {e}");
        }
    }

    /// Notices a lost node lock within a tick, and takes the lock again once
    /// no other incarnation holds it.
    async fn check_node_lock(&self) {
        let Some(held) = self.runner.node_lock_held().await else {
            return;
        };
        if held {
            return;
        }
        if self.runner.takes_work() {
            error!(node = %self.runner.owner.node, "Lost the lock of node {}; taking no new work", self.runner.owner.node);
            metrics::counter!("netcache_node_lock_lost_total").increment(1);
        }
        self.runner.mark_node_lock_lost();
        match self.store.lock_node(&self.runner.owner.node).await {
            Ok(lock) => {
                info!(node = %self.runner.owner.node, "Holds the lock of node {} again", self.runner.owner.node);
                self.runner.hold_node_lock(lock).await;
            }
            Err(e) => warn!(error = %e, "Cannot take the lock of node {} again: {e}", self.runner.owner.node),
        }
    }

    /// Renews this process's leases and takes over orphaned operations, forever.
    pub fn spawn_operation_loops(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let compute = Arc::clone(self);
        tokio::spawn(async move {
            let every = compute.config.operations.lease / 3;
            loop {
                tokio::time::sleep(every).await;
                if compute.has_crashed() {
                    return;
                }
                compute.lease_tick().await;
            }
        })
    }
}
