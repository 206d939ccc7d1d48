//! Running an operation: on the worker pool (or inline, for GC's releases), one
//! attempt at a time inside the fence, a panic being a failed attempt; then
//! retried, ended with a fault at the cap, or finished — and the delete queued
//! on it, if any, run next. Every exit but a crash answers the waiting request.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use netcache_domain::change::Change;
use netcache_domain::operation::Operation;
use tracing::{Instrument, info, info_span, warn};

use super::attempts::AfterFailure;
use super::fence::{FENCE, Fence};
use super::step::{Context, Next};
use crate::{Compute, Error, Result};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// On the pool: retry a failed step after backoff, up to the cap.
    Backoff,
    /// Inline: hand a failed operation back to the caller.
    Never,
}

impl Compute {
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
                Ok(Next::Finished) => {
                    self.finished(&op);
                    self.runner.answer(id);
                    return None;
                }
                Ok(Next::Done) => None,
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
    async fn execute_fenced(self: &Arc<Self>, op: &Operation) -> Result<Next> {
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
        let next = current.successor(queued, uuid::Uuid::new_v4(), self.clock.now());
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

    /// What every kind does first (a crash point, a test's sabotage, resolving
    /// the intents left pending), then its step.
    async fn execute(self: &Arc<Self>, op: &Operation) -> Result<Next> {
        self.crash_point(crate::CrashPoint::OperationStarted)?;
        self.sabotaged_step(op)?;
        let cx = Context {
            compute: Arc::clone(self),
            unsent: self.unsent_intents.take(op.server_id),
        };
        self.resolve_pending_intents(op, &cx.unsent).await?;
        self.runner.step(op.kind()).step(&cx, op).await
    }
}
