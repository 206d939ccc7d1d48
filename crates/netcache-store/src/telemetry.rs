//! The store's Prometheus series (their HELP texts are with the others, in
//! netcache-api's `metrics.rs`): what an operator alerts on when the database
//! is slow, refuses writes, or SQLite's writer falls behind.

use std::time::Instant;

use crate::{Error, Result};

/// One batch's commit, as its caller saw it (a wait for SQLite's writer included).
pub(crate) fn commit_ended(started: Instant, outcome: &Result<()>) {
    metrics::histogram!("netcache_store_commit_duration_seconds").record(started.elapsed().as_secs_f64());
    metrics::counter!("netcache_store_commits_total", "outcome" => outcome_label(outcome)).increment(1);
}

fn outcome_label(outcome: &Result<()>) -> &'static str {
    match outcome {
        Ok(()) => "ok",
        Err(Error::Conflict(_) | Error::GroupMoved(_)) => "conflict",
        Err(Error::NotFound(_)) => "not_found",
        Err(Error::OverQuota(_)) => "over_quota",
        Err(e) if e.is_unavailable() => "unavailable",
        Err(_) => "error",
    }
}

/// SQLite's writer took a group of `batches`; `waiting` more are queued behind it.
pub(crate) fn group_taken(batches: usize, waiting: usize) {
    metrics::histogram!("netcache_store_group_batches").record(batches as f64);
    metrics::gauge!("netcache_store_write_queue").set(waiting as f64);
}

/// SQLite's writer closed its connection after a failure that may have left it
/// unusable (the pool opens a fresh one).
pub(crate) fn writer_reconnected() {
    metrics::counter!("netcache_store_writer_reconnects_total").increment(1);
}

/// SQLite's writer caught a panic in a group (whose batches failed).
pub(crate) fn writer_panicked() {
    metrics::counter!("netcache_store_writer_panics_total").increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_batch_is_told_apart_from_a_failing_database() {
        assert_eq!(outcome_label(&Ok(())), "ok");
        assert_eq!(outcome_label(&Err(Error::Conflict("generation".into()))), "conflict");
        assert_eq!(outcome_label(&Err(Error::NotFound("server".into()))), "not_found");
        assert_eq!(outcome_label(&Err(Error::Writer("stopped".into()))), "error");
        assert_eq!(
            outcome_label(&Err(Error::Unavailable("disk full".into()))),
            "unavailable"
        );
    }
}
