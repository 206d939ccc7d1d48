//! The runner's request-side interface: a new operation, committed with its
//! request's changes and started (`submit`, `submit_all`), or also waited for
//! (`submit_and_wait`, which follows the row to its end when another process
//! took the operation over), and a delete queued on an operation in flight.
//! Request-side code (build, interfaces, power, rebuild, fixed_ips,
//! security_groups) starts and queues operations only through these.
//!
//! What the request answers follows Nova: a boot (202), a delete (204), a
//! `forceDelete` (202), a detach (202) and a rebuild (202, status `REBUILD`)
//! are answered once their operation is committed; an attach and
//! `addSecurityGroup`/`removeSecurityGroup` wait for the outcome, which the
//! operation reaches even if the client leaves.

use std::sync::Arc;
use std::time::Duration;

use netcache_domain::ServerId;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams, QueuedDelete};

use super::{Answer, Outcome};
use crate::{Compute, Error, RequestContext, Result};

/// How often a request whose operation another process took over looks at
/// the row, and for how many leases at most before it answers 503.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);
const FOLLOW_FOR_LEASES: u32 = 4;

impl Compute {
    /// A new operation owned by this process; its lease is taken on the
    /// database's clock when it is committed.
    pub(crate) fn new_operation(
        &self,
        server_id: ServerId,
        params: OperationParams,
        ctx: &RequestContext,
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

    /// Queues a delete on `op`, which is in flight, with `changes` (its instance
    /// action): the delete runs once `op` is finished. Conflicts if `op` ended
    /// or changed meanwhile.
    pub(crate) async fn queue_delete(
        &self,
        op: &Operation,
        ctx: &RequestContext,
        changes: Vec<Change>,
    ) -> netcache_store::Result<()> {
        let mut batch = changes;
        batch.push(Change::QueueDelete {
            server_id: op.server_id,
            id: op.id,
            delete: QueuedDelete {
                request_id: ctx.request_id.clone(),
                project_id: ctx.project_id.clone(),
                user_id: ctx.user_id.clone(),
            },
        });
        self.store.commit(batch).await
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
            Err(e) if e.is_conflict() && !e.is_group_moved() => {
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
}
