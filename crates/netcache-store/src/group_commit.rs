//! SQLite's group commit: one task owns the writes, and commits every batch
//! queued while the previous group was being written in one transaction — one
//! fsync for the group. Each batch runs in a savepoint of its own, so a batch
//! whose precondition fails is rolled back alone, and every caller hears only
//! after the group's commit is durable. A group that panics fails alone: the
//! task lives on, so one bad batch does not leave the process unable to write.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use netcache_domain::change::Change;
use sqlx::sqlite::SqlitePool;
use sqlx::{Acquire, Sqlite, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use crate::dialect::Dialect;
use crate::engine::{QueryCount, Sql};
use crate::{Error, Result, telemetry};

/// Batches one group holds at most.
const GROUP_MAX: usize = 64;
/// Batches that may wait for the writer before callers wait to queue.
const QUEUE: usize = 1024;

/// One caller's batch and where its outcome goes.
struct Job {
    changes: Vec<Change>,
    done: oneshot::Sender<Result<()>>,
}

/// The queue of the writer task; clones share it, and the task ends with the
/// last of them.
#[derive(Clone, Debug)]
pub(crate) struct GroupWriter {
    jobs: mpsc::Sender<Job>,
}

impl GroupWriter {
    /// Starts the writer task on `pool`, the store's pool of writes; it counts
    /// its transactions in `counts`.
    pub(crate) fn start(pool: SqlitePool, counts: QueryCount) -> Self {
        let (writer, queue) = Self::queue();
        tokio::spawn(run(pool, queue, counts, commit_group));
        writer
    }

    fn queue() -> (Self, mpsc::Receiver<Job>) {
        let (jobs, queue) = mpsc::channel(QUEUE);
        (Self { jobs }, queue)
    }

    /// Commits `changes` as one batch (all or none), in the next group.
    pub(crate) async fn commit(&self, changes: Vec<Change>) -> Result<()> {
        let (done, outcome) = oneshot::channel();
        self.jobs.send(Job { changes, done }).await.map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

fn stopped() -> Error {
    Error::Writer("the writer task stopped (is the runtime shutting down?)".to_owned())
}

/// The writer task: takes the queued batches a group at a time and hands each
/// group to `commit` (`commit_group`; tests give one that panics).
async fn run(
    pool: SqlitePool,
    mut queue: mpsc::Receiver<Job>,
    counts: QueryCount,
    commit: impl AsyncFn(&SqlitePool, &[Job]) -> Vec<Result<()>>,
) {
    let mut group = Vec::with_capacity(GROUP_MAX);
    while queue.recv_many(&mut group, GROUP_MAX).await > 0 {
        telemetry::group_taken(group.len(), queue.len());
        // A panic unwinds the group's transaction, which sqlx rolls back on drop
        // before the connection's next use: nothing of the group is written.
        let outcomes = match AssertUnwindSafe(commit(&pool, &group)).catch_unwind().await {
            Ok(outcomes) => outcomes,
            Err(panic) => {
                let why = panic_message(panic.as_ref());
                tracing::error!(
                    batches = group.len(),
                    "SQLite's writer panicked on a group, which fails: {why}"
                );
                telemetry::writer_panicked();
                all_failed(&group, &format!("the writer panicked: {why}"))
            }
        };
        if outcomes.iter().any(Result::is_ok) {
            counts.transacted();
        }
        for (job, outcome) in group.drain(..).zip(outcomes) {
            // A caller that stopped waiting has its batch committed all the same,
            // as if it had stopped just after the commit.
            let _ = job.done.send(outcome);
        }
    }
}

/// One transaction for the group; each batch's outcome, in order.
async fn commit_group(pool: &SqlitePool, group: &[Job]) -> Vec<Result<()>> {
    let mut tx = match pool.begin_with(<Sqlite as Dialect>::BEGIN_WRITE).await {
        Ok(tx) => tx,
        Err(e) => return all_failed(group, &format!("cannot begin: {e}")),
    };
    let outcomes = match group {
        [job] => vec![Sql::<Sqlite>::apply_batch(&mut tx, &job.changes).await],
        _ => {
            let mut outcomes = Vec::with_capacity(group.len());
            for job in group {
                match apply_in_savepoint(&mut tx, &job.changes).await {
                    Applied::Batch(outcome) => outcomes.push(outcome),
                    Applied::Broken(e) => {
                        rollback(tx).await;
                        return all_failed(group, &e);
                    }
                }
            }
            outcomes
        }
    };
    if outcomes.iter().all(Result::is_err) {
        rollback(tx).await;
        return outcomes;
    }
    match tx.commit().await {
        Ok(()) => outcomes,
        Err(e) => all_failed(group, &format!("the commit failed: {e}")),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// The same failure for every batch of a group whose transaction did not commit.
fn all_failed(group: &[Job], why: &str) -> Vec<Result<()>> {
    group.iter().map(|_| Err(Error::Writer(why.to_owned()))).collect()
}

/// A batch's outcome inside the group, or the group's transaction broken.
enum Applied {
    Batch(Result<()>),
    Broken(String),
}

async fn apply_in_savepoint(conn: &mut SqliteConnection, changes: &[Change]) -> Applied {
    let mut savepoint = match conn.begin().await {
        Ok(savepoint) => savepoint,
        Err(e) => return Applied::Broken(format!("cannot open a savepoint: {e}")),
    };
    match Sql::<Sqlite>::apply_batch(&mut savepoint, changes).await {
        Ok(()) => match savepoint.commit().await {
            Ok(()) => Applied::Batch(Ok(())),
            Err(e) => Applied::Broken(format!("cannot release a savepoint: {e}")),
        },
        Err(error) => match savepoint.rollback().await {
            Ok(()) => Applied::Batch(Err(error)),
            Err(e) => Applied::Broken(format!("cannot roll back to a savepoint: {e}")),
        },
    }
}

/// Rolls back now rather than on drop, so the write lock is free for the next group.
async fn rollback(tx: sqlx::Transaction<'_, Sqlite>) {
    if let Err(e) = tx.rollback().await {
        tracing::warn!(error = %e, "Rollback of a failed group failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use netcache_domain::action::ActionEvent;
    use netcache_domain::ghost::{GhostOwner, GhostSighting};
    use netcache_domain::{PortId, ServerId};

    use super::*;
    use crate::{SqliteStore, Store};

    fn sighting(i: usize) -> Change {
        let now = Utc::now();
        Change::UpsertGhostSighting(GhostSighting {
            port_id: PortId::from(format!("port-{i}").as_str()),
            device_id: format!("device-{i}"),
            owner: GhostOwner::Foreign,
            first_seen: now,
            last_seen: now,
            times_seen: 1,
            revision_number: 1,
        })
    }

    /// A change that fails: an event of an action that does not exist.
    fn missing_action_event() -> Change {
        Change::AddActionEvent {
            server_id: ServerId::new_v4(),
            request_id: "req-none".into(),
            event: ActionEvent::finished("e", Utc::now(), true, None, None),
        }
    }

    /// The device ids of the stored ghost sightings, sorted.
    async fn stored_sightings(store: &SqliteStore) -> Vec<String> {
        let mut stored: Vec<String> = store
            .ghost_sightings()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.device_id)
            .collect();
        stored.sort();
        stored
    }

    /// The batches queued while the writer is busy share one transaction (one
    /// fsync); one that fails in it is rolled back alone, and the others commit.
    #[tokio::test]
    async fn batches_queued_together_share_a_transaction_and_fail_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&format!("sqlite:{}", dir.path().join("group.db").display()))
            .await
            .unwrap();
        let counts = QueryCount::default();
        let (writer, queue) = GroupWriter::queue();
        let mut commits = Vec::new();
        for i in 0..12 {
            let mut batch = vec![sighting(i)];
            if i % 3 == 1 {
                batch.push(missing_action_event());
            }
            let writer = writer.clone();
            commits.push(tokio::spawn(async move { writer.commit(batch).await }));
        }
        // All twelve wait in the queue before the writer starts.
        while queue.len() < 12 {
            tokio::task::yield_now().await;
        }
        tokio::spawn(run(store.writer.clone(), queue, counts.clone(), commit_group));

        for (i, commit) in commits.into_iter().enumerate() {
            let outcome = commit.await.unwrap();
            if i % 3 == 1 {
                assert!(matches!(outcome, Err(Error::NotFound(_))), "batch {i}: {outcome:?}");
            } else {
                assert!(outcome.is_ok(), "batch {i}: {outcome:?}");
            }
        }
        assert_eq!(counts.transactions(), 1, "one transaction for the group");
        let stored = stored_sightings(&store).await;
        let mut expected: Vec<String> = (0..12).filter(|i| i % 3 != 1).map(|i| format!("device-{i}")).collect();
        expected.sort();
        assert_eq!(stored, expected, "the failed batches applied nothing, the rest all");
    }

    /// A group whose every batch fails commits no transaction.
    #[tokio::test]
    async fn a_group_that_only_fails_commits_nothing() {
        let store = SqliteStore::open("sqlite::memory:").await.unwrap();
        let outcome = store.commit(vec![sighting(0), missing_action_event()]).await;
        assert!(matches!(outcome, Err(Error::NotFound(_))), "{outcome:?}");
        assert_eq!(store.transactions_made(), 0);
        assert!(store.ghost_sightings().await.unwrap().is_empty());
        store.commit(vec![sighting(1)]).await.unwrap();
        assert_eq!((store.commits_made(), store.transactions_made()), (1, 1));
    }

    /// A group that panics fails its callers, rolls back what it wrote, and
    /// the writer goes on to commit the next group.
    #[tokio::test]
    async fn a_group_that_panics_fails_alone_and_the_writer_goes_on() {
        let store = SqliteStore::open("sqlite::memory:").await.unwrap();
        let counts = QueryCount::default();
        let (writer, queue) = GroupWriter::queue();
        let groups = std::sync::atomic::AtomicUsize::new(0);
        // The first group is written, then panics before its commit.
        let panics_first = async |pool: &SqlitePool, group: &[Job]| {
            if groups.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
                return commit_group(pool, group).await;
            }
            let mut tx = pool.begin_with(<Sqlite as Dialect>::BEGIN_WRITE).await.unwrap();
            Sql::<Sqlite>::apply_batch(&mut tx, &group[0].changes).await.unwrap();
            panic!("a bug in a batch");
        };
        let writing = run(store.writer.clone(), queue, counts, panics_first);
        let calling = async {
            let outcome = writer.commit(vec![sighting(0)]).await;
            assert!(
                matches!(&outcome, Err(Error::Writer(why)) if why.contains("a bug in a batch")),
                "{outcome:?}"
            );
            writer.commit(vec![sighting(1)]).await.unwrap();
            // The writer ends with the last of its queue's senders.
            drop(writer);
        };
        tokio::join!(writing, calling);
        assert_eq!(
            stored_sightings(&store).await,
            ["device-1"],
            "the panicked group wrote nothing"
        );
    }
}
