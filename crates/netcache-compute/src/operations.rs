//! The operation runner: every mutation of a server is a durable operation row
//! (`netcache_domain::operation`) committed before any side effect, executed by a
//! bounded pool of tasks that outlive the request that started it, fenced by its
//! owner so a process that lost its lease can no longer write, and taken over by
//! any process once its owner's lease runs out.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use netcache_domain::ServerId;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams, Owner};
use tracing::{Instrument, info, info_span, warn};

use crate::runner::attempts::AfterFailure;
use crate::runner::{Answer, Outcome};
use crate::{Compute, Error, Result};

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

impl Fence {
    fn of(op: &Operation) -> Self {
        Self {
            server_id: op.server_id,
            id: op.id,
            owner: op.owner.clone(),
        }
    }
}

/// How an operation's execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Executed {
    /// Its work is done; the runner finishes the operation.
    Done,
    /// Its last commit finished the operation too ([`Compute::finish_change`]).
    Finished,
}

/// How often a request whose operation another process took over looks at
/// the row, and for how many leases at most before it answers 503.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);
const FOLLOW_FOR_LEASES: u32 = 4;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// On the pool: retry a failed step after backoff, up to the cap.
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

    /// A new operation owned by this process; its lease is taken on the
    /// database's clock when it is committed.
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
            owner: self.runner.owner.clone(),
            lease_until: now + self.runner.lease(),
            step: "queued".to_owned(),
            attempts: 0,
            last_error: None,
            then_delete: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// The change that records `op` with a fresh lease.
    pub(crate) fn insert_operation(&self, op: &Operation) -> Change {
        Change::InsertOperation {
            op: op.clone(),
            lease: self.runner.lease(),
        }
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
        if !self.runner.takes_work() {
            return Err(Error::NotTakingWork);
        }
        if ops.len() > self.runner.free_places() {
            metrics::counter!("netcache_operations_refused_total", "reason" => "overloaded").increment(1);
            return Err(Error::Overloaded);
        }
        // On a task of its own: a client that disconnects drops the request's
        // future, and must not leave a committed operation that nobody runs.
        let compute = Arc::clone(self);
        tokio::spawn(async move { compute.commit_and_spawn(preconditions, ops).await })
            .await
            .unwrap_or(Err(Error::Interrupted(server_id)))
    }

    /// Submits `op` and waits for its outcome ([`Compute::keep_outcome`]); a
    /// client that leaves does not stop it. If this process stops running it
    /// (another took it over), the request follows the row to its end.
    pub(crate) async fn submit_and_wait(self: &Arc<Self>, op: Operation, changes: Vec<Change>) -> Result<Outcome> {
        let answer = self.runner.wait_for(op.id);
        if let Err(e) = self.submit(op.clone(), changes).await {
            self.runner.forget_waiter(op.id);
            return Err(e);
        }
        match answer.await {
            Ok(Answer::Outcome(outcome)) => outcome,
            Ok(Answer::Follow) => self.follow(&op).await,
            Err(_) => Err(Error::Interrupted(op.server_id)),
        }
    }

    /// Waits, boundedly, until `op`'s row is gone, then reads its outcome from
    /// the records: another process ran it to its end.
    async fn follow(&self, op: &Operation) -> Result<Outcome> {
        let deadline = tokio::time::Instant::now() + self.config.operations.lease * FOLLOW_FOR_LEASES;
        while self.store.operation(op.server_id).await?.is_some_and(|o| o.id == op.id) {
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Interrupted(op.server_id));
            }
            tokio::time::sleep(FOLLOW_EVERY).await;
        }
        self.outcome_from_records(op).await
    }

    /// The outcome of `op`, which another process ran to its end, as its
    /// records say: an attach's interface is the VIF record in its slot; a
    /// failure is the failed event of its instance action.
    async fn outcome_from_records(&self, op: &Operation) -> Result<Outcome> {
        let actions = self.store.actions(op.server_id).await?;
        let failure = actions
            .iter()
            .filter(|a| a.request_id == op.request_id)
            .flat_map(|a| &a.events)
            .find(|e| e.result.as_deref() == Some("Error"))
            .map(|e| e.details.clone().unwrap_or_else(|| e.event.clone()));
        let failed = |cause: String| Error::OperationFailed {
            server: op.server_id,
            kind: op.kind().as_str(),
            cause,
        };
        if let Some(cause) = failure {
            return Err(failed(cause));
        }
        let OperationParams::Attach { position, .. } = &op.params else {
            return Ok(Outcome::Applied);
        };
        let attached = self
            .store
            .vifs(op.server_id)
            .await?
            .into_iter()
            .find(|v| v.position == *position && v.is_attached() && !v.is_mid_attach());
        match attached {
            Some(vif) => Ok(Outcome::Attached(Box::new(crate::Interface { vif }))),
            None => Err(failed("the interface was not attached".to_owned())),
        }
    }

    /// Keeps an operation's outcome for its waiting request, handed over once the
    /// operation is finished.
    pub(crate) fn keep_outcome(&self, id: uuid::Uuid, outcome: Result<Outcome>) {
        self.runner.keep_outcome(id, outcome);
    }

    async fn commit_and_spawn(
        self: &Arc<Self>,
        preconditions: Vec<Change>,
        ops: Vec<(Operation, Vec<Change>)>,
    ) -> Result<()> {
        let mut batch = preconditions;
        for (op, changes) in &ops {
            batch.extend(changes.iter().cloned());
            batch.push(self.insert_operation(op));
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
        let Some(slot) = self.runner.take_slot(op.server_id) else {
            return;
        };
        let compute = Arc::clone(self);
        let span = info_span!("operation", server.id = %op.server_id, kind = %op.kind(), request.id = %op.request_id);
        self.spawn_tracked(
            async move {
                let _slot = slot;
                let _worker = compute.runner.worker().await;
                compute.run_to_end(op, Retry::Backoff).await;
            }
            .instrument(span),
        );
    }

    /// Executes `op` inline (GC's releases) for one attempt; if a step fails,
    /// the pool retries it, so an unreachable Neutron does not hold up the caller.
    pub(crate) async fn run_inline(self: &Arc<Self>, op: Operation) {
        let Some(slot) = self.runner.take_slot(op.server_id) else {
            return;
        };
        let unfinished = self.run_to_end(op, Retry::Never).await;
        drop(slot);
        if let Some(op) = unfinished {
            self.spawn_operation(op);
        }
    }

    /// Executes an operation, then the delete queued on it, until it is finished,
    /// ended at its attempt cap, or no longer this process's. Whatever the exit
    /// but a crash, the waiting request is answered.
    async fn run_to_end(self: &Arc<Self>, mut op: Operation, retry: Retry) -> Option<Operation> {
        let mut failures = 0u32;
        loop {
            let id = op.id;
            let result = self.execute_fenced(&op).await;
            let failed = match result {
                Ok(Executed::Finished) => {
                    self.finished(&op);
                    self.runner.answer(id);
                    return None;
                }
                Ok(Executed::Done) => None,
                Err(Error::Crashed(_)) => {
                    // Dead: a waiting request learns the process stopped.
                    self.runner.drop_waiter(id);
                    return None;
                }
                Err(Error::Store(e)) if e.is_conflict() && self.lost(&op).await => {
                    warn!(
                        "Operation {} of server {} was taken over; stopping",
                        op.id, op.server_id
                    );
                    self.runner.answer(id);
                    return None;
                }
                Err(e) => Some(e),
            };
            if let Some(cause) = failed {
                if retry == Retry::Never {
                    metrics::counter!("netcache_operation_retries_total", "kind" => op.kind().as_str()).increment(1);
                    warn!(error = %cause, "Operation {} of server {} failed a step: {cause}; the pool retries it", op.id, op.server_id);
                    return Some(op);
                }
                failures += 1;
                match self.after_failure(&mut op, &cause, failures).await {
                    AfterFailure::Retry(wait) => {
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    AfterFailure::Lost => {
                        self.runner.answer(id);
                        return None;
                    }
                    AfterFailure::GiveUp => {
                        let fence = Fence::of(&op);
                        if let Err(e) = FENCE.scope(fence, self.give_up(&op, &cause)).await {
                            warn!(error = %e, "Could not end operation {} with its fault: {e}; retrying", op.id);
                            tokio::time::sleep(Duration::from_secs(60)).await;
                            continue;
                        }
                    }
                }
            }
            let finished = self.finish(&op).await;
            self.runner.answer(id);
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
    }

    /// One attempt of `op`'s steps, its commits fenced on it; a panic is a
    /// failed attempt, not a lost worker.
    async fn execute_fenced(self: &Arc<Self>, op: &Operation) -> Result<Executed> {
        let attempt = FENCE.scope(Fence::of(op), self.execute(op));
        match AssertUnwindSafe(attempt).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                tracing::error!(server.id = %op.server_id, kind = %op.kind(), "A step of operation {} panicked: {why}", op.id);
                Err(Error::StepPanicked(why))
            }
        }
    }

    /// Whether this process no longer owns `op`.
    async fn lost(&self, op: &Operation) -> bool {
        !matches!(self.store.operation(op.server_id).await, Ok(Some(o)) if o.id == op.id && o.owner == self.runner.owner)
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
                lease: self.runner.lease(),
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
        self.sabotaged_step(op)?;
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
