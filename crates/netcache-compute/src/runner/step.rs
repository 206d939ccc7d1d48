//! What the runner knows of an operation kind: one [`OperationStep`] each, beside
//! that kind's code, which does the work of one attempt and names the
//! [`ErrorPolicy`] that applies when its attempts run out; the runner is handed
//! the table from kind to step ([`Steps`], `crate::operation_kinds`), so it
//! names no kind's code. Also here, for steps: the change that finishes an
//! operation in its last commit, and keeping an outcome for the waiting request.

use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::change::Change;
use netcache_domain::intent::PortIntent;
use netcache_domain::operation::{Operation, OperationKind};

use super::Outcome;
use crate::{Compute, Result};

/// How an attempt of an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Its work is done; the runner finishes the operation.
    Done,
    /// Its last commit finished the operation too ([`Compute::finish_change`]).
    Finished,
}

/// What ending an operation at its attempt cap does, besides finishing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorPolicy {
    /// The server goes to ERROR with the cause as its fault.
    ServerInError,
    /// The request's answer is the cause (its instance action records it).
    AnswerWithCause,
    /// Nothing: the VIF records stay `releasing`, and GC's next pass starts another.
    LeaveToGc,
}

/// What a step works with.
pub(crate) struct Context {
    pub(crate) compute: Arc<Compute>,
    /// The intents the boot recorded when it was accepted and did not send,
    /// taken for this attempt (only a build's first run in this process has any).
    pub(crate) unsent: Vec<PortIntent>,
}

/// One operation kind: an attempt of its work, and its policy at the cap.
#[async_trait]
pub(crate) trait OperationStep: Send + Sync {
    fn policy(&self) -> ErrorPolicy;

    /// One attempt, run again from the records after a failure or a takeover.
    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next>;
}

/// The step of each operation kind.
pub(crate) type Steps = fn(OperationKind) -> &'static dyn OperationStep;

impl Compute {
    /// The change that ends `op`, in a batch of its last step; it conflicts
    /// if a delete was queued on it.
    pub(crate) fn finish_change(&self, op: &Operation) -> Change {
        Change::FinishOperation {
            server_id: op.server_id,
            id: op.id,
            owner: op.owner.clone(),
        }
    }

    /// Keeps an operation's outcome for its waiting request, handed over once the
    /// operation is finished.
    pub(crate) fn keep_outcome(&self, id: uuid::Uuid, outcome: Result<Outcome>) {
        self.runner.keep_outcome(id, outcome);
    }
}
