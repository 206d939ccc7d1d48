//! The operation runner: every mutation of a server is a durable operation row
//! (`netcache_domain::operation`) committed before any side effect, executed by a
//! bounded pool of tasks that outlive the request that started it, fenced by its
//! owner so a process that lost its lease can no longer write, and taken over by
//! any process once its owner's lease runs out.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use netcache_domain::ServerId;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams, Owner};
use tokio::sync::oneshot;
use tracing::{Instrument, error, info, info_span, warn};

use crate::{Compute, Error, Interface, Result};

tokio::task_local! {
    /// The operation the current task executes: every commit it makes is fenced on it.
    static FENCE: Fence;
}

#[derive(Clone)]
struct Fence {
    server_id: ServerId,
    id: uuid::Uuid,
    owner: Owner,
}

/// What an operation's waiting API request learns once it is finished.
pub(crate) enum Outcome {
    /// An attach's new interface.
    Attached(Box<Interface>),
    /// A change applied to the server's ports.
    Applied,
}

/// A waiting API request's end of an operation.
pub(crate) type Waiter = oneshot::Sender<Result<Outcome>>;

/// How an operation's execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Executed {
    /// Its work is done; the runner finishes the operation.
    Done,
    /// Its last commit finished the operation too ([`Compute::finish_change`]).
    Finished,
}

/// Backoff of an operation whose step failed for a reason that may pass (the
/// database or Neutron unreachable): it is retried from its records.
const RETRY_BACKOFF: [u64; 6] = [1, 2, 4, 8, 15, 30];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// On the pool: retry a failed step after [`RETRY_BACKOFF`].
    Backoff,
    /// Inline: hand a failed operation back to the caller.
    Never,
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

    /// A new operation owned by this process, with a fresh lease.
    pub(crate) fn new_operation(
        &self,
        server_id: ServerId,
        params: OperationParams,
        ctx: &crate::RequestContext,
    ) -> Operation {
        let now = self.clock.now();
        Operation {
            server_id,
            id: uuid::Uuid::new_v4(),
            params,
            request_id: ctx.request_id.clone(),
            project_id: ctx.project_id.clone(),
            user_id: ctx.user_id.clone(),
            owner: self.owner.clone(),
            lease_until: now + self.lease(),
            step: "queued".to_owned(),
            then_delete: None,
            created_at: now,
            updated_at: now,
        }
    }

    fn lease(&self) -> chrono::TimeDelta {
        chrono::TimeDelta::from_std(self.config.operations.lease).unwrap_or(chrono::TimeDelta::seconds(30))
    }

    /// Commits `op` (with `changes`, e.g. the instance action) and starts it. A
    /// server that already has an operation in flight answers
    /// [`Error::OperationInFlight`]; a full queue [`Error::Overloaded`].
    pub(crate) async fn submit(self: &Arc<Self>, op: Operation, changes: Vec<Change>) -> Result<()> {
        self.submit_all(Vec::new(), vec![(op, changes)]).await
    }

    /// Commits several operations, each with its changes, in one batch after
    /// `preconditions` (a quota claim), all or none, and starts them.
    pub(crate) async fn submit_all(
        self: &Arc<Self>,
        preconditions: Vec<Change>,
        ops: Vec<(Operation, Vec<Change>)>,
    ) -> Result<()> {
        let Some(server_id) = ops.first().map(|(op, _)| op.server_id) else {
            return Ok(());
        };
        if self.running.lock().expect("running").len() + ops.len() > self.config.operations.max_queued {
            return Err(Error::Overloaded);
        }
        // On a task of its own: a client that disconnects drops the request's
        // future, and must not leave a committed operation that nobody runs.
        let compute = Arc::clone(self);
        tokio::spawn(async move { compute.commit_and_spawn(preconditions, ops).await })
            .await
            .unwrap_or(Err(Error::Interrupted(server_id)))
    }

    /// Submits `op` and waits for the outcome it keeps ([`Compute::keep_outcome`]);
    /// a client that leaves does not stop it.
    pub(crate) async fn submit_and_wait(self: &Arc<Self>, op: Operation, changes: Vec<Change>) -> Result<Outcome> {
        let (tx, rx) = oneshot::channel();
        let (id, server_id) = (op.id, op.server_id);
        self.waiters.lock().expect("waiters").insert(id, tx);
        if let Err(e) = self.submit(op, changes).await {
            self.waiters.lock().expect("waiters").remove(&id);
            return Err(e);
        }
        rx.await.unwrap_or(Err(Error::Interrupted(server_id)))
    }

    /// Keeps an operation's outcome for its waiting request, handed over once the
    /// operation is finished.
    pub(crate) fn keep_outcome(&self, id: uuid::Uuid, outcome: Result<Outcome>) {
        self.outcomes.lock().expect("outcomes").insert(id, outcome);
    }

    async fn commit_and_spawn(
        self: &Arc<Self>,
        preconditions: Vec<Change>,
        ops: Vec<(Operation, Vec<Change>)>,
    ) -> Result<()> {
        let mut batch = preconditions;
        for (op, changes) in &ops {
            batch.extend(changes.iter().cloned());
            batch.push(Change::InsertOperation(op.clone()));
        }
        match self.store.commit(batch).await {
            Ok(()) => {}
            Err(e) if e.is_conflict() => {
                let op = &ops[0].0;
                let kind = self.store.operation(op.server_id).await?.map(|o| o.kind());
                return Err(Error::OperationInFlight {
                    server: op.server_id,
                    action: op.kind().to_string(),
                    kind: kind.map_or_else(|| "unknown".to_owned(), |k| k.to_string()),
                });
            }
            Err(e) => return Err(e.into()),
        }
        for (op, _) in ops {
            metrics::counter!("netcache_operations_started_total", "kind" => op.kind().as_str()).increment(1);
            self.spawn_operation(op);
        }
        Ok(())
    }

    /// Runs an operation this process owns on the worker pool, unless it already runs.
    pub(crate) fn spawn_operation(self: &Arc<Self>, op: Operation) {
        if !self.running.lock().expect("running").insert(op.server_id) {
            return;
        }
        let compute = Arc::clone(self);
        let span = info_span!("operation", server.id = %op.server_id, kind = %op.kind(), request.id = %op.request_id);
        self.spawn_tracked(
            async move {
                let server_id = op.server_id;
                let permit = compute.op_permits.clone().acquire_owned().await;
                compute.run_to_end(op, Retry::Backoff).await;
                drop(permit);
                compute.running.lock().expect("running").remove(&server_id);
            }
            .instrument(span),
        );
    }

    /// Executes `op` inline (GC's releases) for one attempt; if a step fails,
    /// the pool retries it, so an unreachable Neutron does not hold up the caller.
    pub(crate) async fn run_inline(self: &Arc<Self>, op: Operation) {
        if !self.running.lock().expect("running").insert(op.server_id) {
            return;
        }
        let unfinished = self.run_to_end(op.clone(), Retry::Never).await;
        self.running.lock().expect("running").remove(&op.server_id);
        if let Some(op) = unfinished {
            self.spawn_operation(op);
        }
    }

    /// Executes an operation, then the delete queued on it, until it is finished
    /// or this process no longer owns it. A failed step is retried with backoff,
    /// or with [`Retry::Never`] the operation is handed back unfinished.
    async fn run_to_end(self: &Arc<Self>, mut op: Operation, retry: Retry) -> Option<Operation> {
        let mut failures = 0usize;
        loop {
            let fence = Fence {
                server_id: op.server_id,
                id: op.id,
                owner: op.owner.clone(),
            };
            let result = FENCE.scope(fence, self.execute(&op)).await;
            match result {
                Ok(Executed::Finished) => {
                    self.finished(&op);
                    self.hand_over_outcome(op.id);
                    return None;
                }
                Ok(Executed::Done) => {
                    let finished = self.finish(&op).await;
                    self.hand_over_outcome(op.id);
                    match finished {
                        Ok(Some(next)) => {
                            failures = 0;
                            op = next;
                        }
                        Ok(None) => return None,
                        Err(e) => {
                            warn!(error = %e, "Operation {} of server {} not finished: {e}", op.id, op.server_id);
                            return None;
                        }
                    }
                }
                Err(Error::Crashed(_)) => {
                    // Dead: a waiting request learns the process stopped.
                    self.waiters.lock().expect("waiters").remove(&op.id);
                    return None;
                }
                Err(Error::Store(e)) if e.is_conflict() && self.lost(&op).await => {
                    warn!(
                        "Operation {} of server {} was taken over; stopping",
                        op.id, op.server_id
                    );
                    return None;
                }
                Err(e) => {
                    metrics::counter!("netcache_operation_retries_total", "kind" => op.kind().as_str()).increment(1);
                    if retry == Retry::Never {
                        warn!(error = %e, "Operation {} of server {} failed a step: {e}; the pool retries it", op.id, op.server_id);
                        return Some(op);
                    }
                    let wait = RETRY_BACKOFF[failures.min(RETRY_BACKOFF.len() - 1)];
                    failures += 1;
                    warn!(error = %e, retry_in_s = wait, "Operation {} of server {} failed a step: {e}; retrying", op.id, op.server_id);
                    tokio::time::sleep(Duration::from_secs(wait)).await;
                }
            }
        }
    }

    /// Gives a finished operation's outcome to the request waiting for it.
    fn hand_over_outcome(&self, id: uuid::Uuid) {
        let outcome = self.outcomes.lock().expect("outcomes").remove(&id);
        let waiter = self.waiters.lock().expect("waiters").remove(&id);
        if let (Some(outcome), Some(waiter)) = (outcome, waiter) {
            let _ = waiter.send(outcome);
        }
    }

    /// Whether this process no longer owns `op`.
    async fn lost(&self, op: &Operation) -> bool {
        !matches!(self.store.operation(op.server_id).await, Ok(Some(o)) if o.id == op.id && o.owner == self.owner)
    }

    /// The change that ends `op`, in a batch of its last step; it conflicts
    /// if a delete was queued on it.
    pub(crate) fn finish_change(&self, op: &Operation) -> Change {
        Change::FinishOperation {
            server_id: op.server_id,
            id: op.id,
            owner: op.owner.clone(),
        }
    }

    fn finished(&self, op: &Operation) {
        metrics::counter!("netcache_operations_finished_total", "kind" => op.kind().as_str()).increment(1);
        info!(server.id = %op.server_id, kind = %op.kind(), "Operation {} on server {} finished", op.id, op.server_id);
    }

    /// Ends `op`; returns the delete queued on it, now owned by this process.
    async fn finish(&self, op: &Operation) -> Result<Option<Operation>> {
        match self.store.commit(vec![self.finish_change(op)]).await {
            Ok(()) => {
                self.finished(op);
                return Ok(None);
            }
            Err(e) if e.is_conflict() => {}
            Err(e) => return Err(e.into()),
        }
        let Some(current) = self.store.operation(op.server_id).await? else {
            return Ok(None);
        };
        let Some(queued) = current
            .then_delete
            .as_ref()
            .filter(|_| current.id == op.id && current.owner == op.owner)
        else {
            return Ok(None);
        };
        let next = current.successor(queued, self.clock.now());
        self.store
            .commit(vec![Change::ReplaceOperation {
                previous: op.id,
                owner: op.owner.clone(),
                next: next.clone(),
            }])
            .await?;
        info!(server.id = %op.server_id, "Server {} is deleted next, as asked while {} ran", op.server_id, op.kind());
        Ok(Some(next))
    }

    /// Whether a delete was queued on the server's operation (a build stops early).
    pub(crate) async fn delete_requested(&self, server_id: ServerId) -> Result<bool> {
        Ok(self
            .store
            .operation(server_id)
            .await?
            .is_some_and(|o| o.then_delete.is_some()))
    }

    /// Dispatches an operation to the code that does its kind.
    async fn execute(self: &Arc<Self>, op: &Operation) -> Result<Executed> {
        self.crash_point(crate::CrashPoint::OperationStarted)?;
        let unsent = self.unsent_intents.take(op.server_id);
        self.resolve_pending_intents(op, &unsent).await?;
        let done = match &op.params {
            OperationParams::Build => return self.run_build(op, unsent).await,
            OperationParams::Delete => self.run_delete(op).await,
            OperationParams::Attach { .. } => self.run_attach(op).await,
            OperationParams::Detach { port_id } => self.run_detach(op, port_id).await,
            OperationParams::Release => self.run_release(op.server_id).await,
            OperationParams::Power { action } => self.run_power(op, *action).await,
            OperationParams::RemoveFixedIp { port_id, address } => {
                self.run_remove_fixed_ip(op, port_id, *address).await
            }
            OperationParams::Rebuild => self.run_rebuild(op).await,
            OperationParams::SecurityGroup { group_id, add } => self.run_security_group(op, group_id, *add).await,
        };
        done.map(|()| Executed::Done)
    }

    /// Takes over every operation whose owner died (and those of an earlier
    /// incarnation of this node at once), up to the free worker slots.
    pub async fn claim_orphaned_operations(self: &Arc<Self>) -> Result<usize> {
        let now = self.clock.now();
        self.run_forgotten_operations().await?;
        let free = self
            .config
            .operations
            .max_queued
            .saturating_sub(self.running.lock().expect("running").len());
        if free == 0 {
            return Ok(0);
        }
        let mut claimed = 0;
        for op in self.store.claimable_operations(&self.owner, now, free as i64).await? {
            if !op.claimable_by(&self.owner, now) {
                continue;
            }
            let claim = Change::ClaimOperation {
                server_id: op.server_id,
                id: op.id,
                previous_owner: op.owner.clone(),
                owner: self.owner.clone(),
                lease_until: now + self.lease(),
            };
            match self.store.commit(vec![claim]).await {
                Ok(()) => {}
                // Another process claimed it first.
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
                owner: self.owner.clone(),
                lease_until: now + self.lease(),
                ..op
            });
        }
        Ok(claimed)
    }

    /// Operations this incarnation owns but does not run (a commit whose caller
    /// vanished between the commit and the start) are started: renewing a lease
    /// nobody works under would hide them forever.
    async fn run_forgotten_operations(self: &Arc<Self>) -> Result<()> {
        for op in self.store.operations().await? {
            let running = self.running.lock().expect("running").contains(&op.server_id);
            if op.owner == self.owner && !running {
                warn!(server.id = %op.server_id, kind = %op.kind(), "Starting {} of server {} that nothing ran", op.kind(), op.server_id);
                self.spawn_operation(op);
            }
        }
        Ok(())
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
                let until = compute.clock.now() + compute.lease();
                if let Err(e) = compute.store.renew_leases(&compute.owner, until).await {
                    error!(error = %e, "Could not renew operation leases: {e}");
                }
                if let Err(e) = compute.claim_orphaned_operations().await {
                    error!(error = %e, "Could not take over orphaned operations: {e}");
                }
            }
        })
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
