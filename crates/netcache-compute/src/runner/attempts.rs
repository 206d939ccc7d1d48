//! Bounded, visible retries. A step that fails is recorded on its row (the
//! attempt count and the error, fenced on the owner) and retried with backoff
//! from the records; at `operations.max_attempts` the operation ends with a
//! fault instead of holding a worker and its lease forever, as its kind's
//! [`ErrorPolicy`] says: a build, delete, power action or rebuild leaves the
//! server in ERROR with the cause; an attach, detach, fixed IP removal or
//! security group change answers its request with the cause; a release is left
//! to GC's next pass (its VIF records stay `releasing`).

use std::time::Duration;

use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::operation::Operation;
use tracing::{error, warn};

use super::Outcome;
use super::step::ErrorPolicy;
use crate::{Compute, Error, Result};

/// Seconds before the next attempt, by failures so far (the last repeats).
const RETRY_BACKOFF: [u64; 7] = [1, 2, 4, 8, 15, 30, 60];

/// What follows a failed attempt.
pub(crate) enum AfterFailure {
    /// Try again after this long.
    Retry(Duration),
    /// The cap is reached: end the operation with a fault.
    GiveUp,
    /// Another process owns the operation now: stop.
    Lost,
}

impl Compute {
    /// Records a failed attempt of `op` on its row and decides what follows.
    /// `failures` counts this run's failures, which bound the retries even
    /// while the database cannot record them.
    pub(crate) async fn after_failure(&self, op: &mut Operation, cause: &Error, failures: u32) -> AfterFailure {
        metrics::counter!("netcache_operation_retries_total", "kind" => op.kind().as_str()).increment(1);
        let error = cause.to_string();
        let record = Change::RecordOperationFailure {
            server_id: op.server_id,
            id: op.id,
            owner: op.owner.clone(),
            error: error.clone(),
        };
        match self.store.commit(vec![record]).await {
            Ok(()) => {
                op.attempts += 1;
                op.last_error = Some(error);
            }
            Err(e) if e.is_conflict() => return AfterFailure::Lost,
            Err(e) => warn!(error = %e, "Could not record the failed attempt of operation {}: {e}", op.id),
        }
        let attempts = op.attempts.max(failures);
        if attempts >= self.config.operations.max_attempts {
            return AfterFailure::GiveUp;
        }
        let wait = RETRY_BACKOFF[(attempts as usize).saturating_sub(1).min(RETRY_BACKOFF.len() - 1)];
        warn!(
            server.id = %op.server_id, kind = %op.kind(), attempts, retry_in_s = wait, error = %cause,
            "Operation {} of server {} failed attempt {attempts}: {cause}; retrying", op.id, op.server_id
        );
        AfterFailure::Retry(Duration::from_secs(wait))
    }

    /// Ends `op` with a fault that names its cause; the runner then finishes it.
    pub(crate) async fn give_up(&self, op: &Operation, cause: &Error) -> Result<()> {
        let message = format!(
            "{} gave up after {} failed attempts: {cause}",
            op.kind(),
            op.attempts.max(1)
        );
        error!(server.id = %op.server_id, kind = %op.kind(), "Operation {} of server {}: {message}", op.id, op.server_id);
        metrics::counter!("netcache_operations_given_up_total", "kind" => op.kind().as_str()).increment(1);
        let now = self.clock.now();
        let event = Change::AddActionEvent {
            server_id: op.server_id,
            request_id: op.request_id.clone(),
            event: ActionEvent::finished("netcache_operation", now, false, Some(message.clone()), None),
        };
        match self.runner.step(op.kind()).policy() {
            ErrorPolicy::LeaveToGc => return Ok(()),
            ErrorPolicy::ServerInError => {
                if let Some(server) = self.store.server(op.server_id).await? {
                    self.save_server_with(server.in_error(message.clone(), now), vec![event])
                        .await?;
                }
            }
            ErrorPolicy::AnswerWithCause => {
                if let Err(e) = self.commit(vec![event]).await {
                    warn!(error = %e, "Could not record why operation {} ended: {e}", op.id);
                }
            }
        }
        let failed = Error::OperationFailed {
            server: op.server_id,
            kind: op.kind().as_str(),
            cause: message,
        };
        self.runner.keep_outcome(op.id, Err::<Outcome, _>(failed));
        Ok(())
    }
}
