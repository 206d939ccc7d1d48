//! SQLite's group commit: one task owns the writes, and commits every batch
//! queued while the previous group was being written in one transaction — one
//! fsync for the group. Each batch runs in a savepoint of its own, so a batch
//! whose precondition fails is rolled back alone, and every caller hears only
//! after the group's commit is durable. A group that panics fails alone: the
//! task lives on, so one bad batch does not leave the process unable to write;
//! and a group whose transaction failed (a full disk) leaves no half-open
//! transaction behind: its connection is closed, and the next group has a fresh
//! one.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use netcache_domain::change::Change;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::SqlitePool;
use sqlx::{Acquire, Sqlite, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use super::{QueryCount, Sql};
use crate::dialect::Dialect;
use crate::error::unavailable;
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
    /// its transactions in `counts`. A `replaceable` connection (a file's, not
    /// an in-memory database's) is closed after a failure that may have left it
    /// unusable.
    pub(crate) fn start(pool: SqlitePool, counts: QueryCount, replaceable: bool) -> Self {
        let (writer, queue) = Self::queue();
        let commit = async move |pool: &SqlitePool, group: &[Job]| commit_group(pool, group, replaceable).await;
        tokio::spawn(run(pool, queue, counts, commit));
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
                all_failed(
                    &group,
                    &Failure {
                        why: format!("the writer panicked: {why}"),
                        unavailable: false,
                    },
                )
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

/// One transaction for the group on the writer's connection; each batch's
/// outcome, in order. A connection whose transaction ended otherwise than by
/// its own COMMIT or ROLLBACK is closed, and the pool opens a fresh one for the
/// next group: SQLite itself rolls a transaction back on some failures (a full
/// disk at COMMIT, `RAISE(ROLLBACK)` in a trigger), and sqlx, which counts the
/// transactions it opened, would refuse every later `BEGIN` on that connection
/// ("non-zero transaction depth") until the process restarted. So is one whose
/// BEGIN, COMMIT, savepoint or rollback failed: its state is not known.
async fn commit_group(pool: &SqlitePool, group: &[Job], replaceable: bool) -> Vec<Result<()>> {
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(e) => return all_failed(group, &Failure::of("cannot take the write connection", &e)),
    };
    let (outcomes, unsound) = write_group(&mut conn, group).await;
    if let Some(why) = unsound {
        discard(conn, &why, replaceable).await;
    }
    outcomes
}

/// Closes the writer's connection after `why`, so the pool opens a fresh one;
/// an in-memory database lives in its one connection and cannot be replaced.
async fn discard(conn: PoolConnection<Sqlite>, why: &str, replaceable: bool) {
    if !replaceable {
        tracing::error!(
            "SQLite's write connection may be unusable after {why}, and is the in-memory database itself: kept"
        );
        return;
    }
    tracing::warn!("Closing SQLite's write connection after {why}; the next group opens a fresh one");
    telemetry::writer_reconnected();
    if let Err(e) = conn.close().await {
        tracing::warn!(error = %e, "Closing SQLite's write connection failed: {e}");
    }
}

/// The group's outcomes, and why the connection is not to be used again, if it is not.
async fn write_group(conn: &mut SqliteConnection, group: &[Job]) -> (Vec<Result<()>>, Option<String>) {
    let mut tx = match sqlx::Connection::begin_with(conn, <Sqlite as Dialect>::BEGIN_WRITE).await {
        Ok(tx) => tx,
        Err(e) => {
            let failure = Failure::of("cannot begin", &e);
            return (all_failed(group, &failure), Some(failure.why));
        }
    };
    let outcomes = match group {
        [job] => vec![Sql::<Sqlite>::apply_batch(&mut tx, &job.changes).await],
        _ => {
            let mut outcomes = Vec::with_capacity(group.len());
            for job in group {
                match apply_in_savepoint(&mut tx, &job.changes).await {
                    Applied::Batch(outcome) => outcomes.push(outcome),
                    Applied::Broken(failure) => {
                        rollback(tx).await;
                        return (all_failed(group, &failure), Some(failure.why));
                    }
                }
            }
            outcomes
        }
    };
    if outcomes.iter().all(Result::is_err) {
        let unsound = (!rollback(tx).await).then(|| "a failed rollback".to_owned());
        return (outcomes, unsound);
    }
    match tx.commit().await {
        Ok(()) => (outcomes, None),
        Err(e) => {
            let failure = Failure::of("the commit failed", &e);
            (all_failed(group, &failure), Some(failure.why))
        }
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Why a group's transaction did not commit, and whether the database was
/// unavailable (so the callers may retry the same batches later).
struct Failure {
    why: String,
    unavailable: bool,
}

impl Failure {
    fn of(what: &str, error: &sqlx::Error) -> Self {
        Self {
            why: format!("{what}: {error}"),
            unavailable: unavailable(error),
        }
    }
}

/// The same failure for every batch of a group whose transaction did not commit.
fn all_failed(group: &[Job], failure: &Failure) -> Vec<Result<()>> {
    let error = || {
        if failure.unavailable {
            Error::Unavailable(failure.why.clone())
        } else {
            Error::Writer(failure.why.clone())
        }
    };
    group.iter().map(|_| Err(error())).collect()
}

/// A batch's outcome inside the group, or the group's transaction broken.
enum Applied {
    Batch(Result<()>),
    Broken(Failure),
}

async fn apply_in_savepoint(conn: &mut SqliteConnection, changes: &[Change]) -> Applied {
    let mut savepoint = match conn.begin().await {
        Ok(savepoint) => savepoint,
        Err(e) => return Applied::Broken(Failure::of("cannot open a savepoint", &e)),
    };
    match Sql::<Sqlite>::apply_batch(&mut savepoint, changes).await {
        Ok(()) => match savepoint.commit().await {
            Ok(()) => Applied::Batch(Ok(())),
            Err(e) => Applied::Broken(Failure::of("cannot release a savepoint", &e)),
        },
        Err(error) => match savepoint.rollback().await {
            Ok(()) => Applied::Batch(Err(error)),
            // SQLite ended the whole transaction on the batch's failure (a full
            // disk): the batch's error says why.
            Err(e) => Applied::Broken(Failure {
                why: format!("{error}, and then cannot roll back to a savepoint: {e}"),
                unavailable: error.is_unavailable() || unavailable(&e),
            }),
        },
    }
}

/// Rolls back now rather than on drop, so the write lock is free for the next
/// group; whether it could.
async fn rollback(tx: sqlx::Transaction<'_, Sqlite>) -> bool {
    match tx.rollback().await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "Rollback of a failed group failed: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use netcache_domain::action::ActionEvent;
    use netcache_domain::ghost::{GhostOwner, GhostSighting};
    use netcache_domain::{PortId, ServerId};
    use netcache_testenv::disk::TinyDisk;

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
            server_id: ServerId(uuid::Uuid::new_v4()),
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
    /// Invariant 7.
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
        let commit = async |pool: &SqlitePool, group: &[Job]| commit_group(pool, group, true).await;
        tokio::spawn(run(store.writer.clone(), queue, counts.clone(), commit));

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
                return commit_group(pool, group, false).await;
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

    /// SQLite ends the transaction itself on some failures (a full disk at
    /// COMMIT, `SQLITE_FULL` or `IOERR`): here a trigger of the write
    /// connection's own (TEMP) does it with `RAISE(ROLLBACK)` when a sighting of
    /// `device-poison` is written. sqlx still counts the transaction it opened,
    /// its ROLLBACK fails ("no transaction is active"), and that connection
    /// refused every later BEGIN ("non-zero transaction depth") until a restart.
    async fn end_transactions_on_poison(store: &SqliteStore) {
        sqlx::query(
            "CREATE TEMP TRIGGER poison AFTER INSERT ON main.ghost_sightings \
             WHEN NEW.device_id = 'device-poison' BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END",
        )
        .execute(&store.writer)
        .await
        .unwrap();
    }

    fn poison() -> Change {
        match sighting(0) {
            Change::UpsertGhostSighting(mut s) => {
                s.device_id = "device-poison".to_owned();
                Change::UpsertGhostSighting(s)
            }
            _ => unreachable!("a sighting"),
        }
    }

    async fn file_store(dir: &std::path::Path) -> SqliteStore {
        SqliteStore::open(&format!("sqlite:{}", dir.join("netcache.db").display()))
            .await
            .unwrap()
    }

    /// A batch whose transaction SQLite ended fails; the writer closes that
    /// connection, and the next batch commits on a fresh one (which has no
    /// such trigger).
    #[tokio::test]
    async fn a_batch_whose_transaction_sqlite_ended_does_not_wedge_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(dir.path()).await;
        end_transactions_on_poison(&store).await;

        let refused = store.commit(vec![sighting(1), poison()]).await;
        assert!(
            matches!(&refused, Err(e) if e.to_string().contains("poisoned")),
            "{refused:?}"
        );
        store.commit(vec![sighting(2)]).await.unwrap();
        store.commit(vec![sighting(3), poison()]).await.unwrap();
        assert_eq!(
            stored_sightings(&store).await,
            ["device-2", "device-3", "device-poison"]
        );
    }

    /// The same in a group of batches, each in its savepoint: no savepoint is
    /// left to roll back to, so the whole group fails, and the next group commits.
    #[tokio::test]
    async fn a_group_whose_transaction_sqlite_ended_does_not_wedge_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(dir.path()).await;
        end_transactions_on_poison(&store).await;
        let (writer, queue) = GroupWriter::queue();
        let batches = [vec![sighting(1)], vec![poison()], vec![sighting(2)]];
        let commits: Vec<_> = batches
            .into_iter()
            .map(|batch| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.commit(batch).await })
            })
            .collect();
        while queue.len() < 3 {
            tokio::task::yield_now().await;
        }
        let commit = async |pool: &SqlitePool, group: &[Job]| commit_group(pool, group, true).await;
        tokio::spawn(run(store.writer.clone(), queue, QueryCount::default(), commit));
        for commit in commits {
            let outcome = commit.await.unwrap();
            assert!(
                matches!(&outcome, Err(Error::Writer(_))),
                "the group fails whole: {outcome:?}"
            );
        }

        writer.commit(vec![sighting(3)]).await.unwrap();
        assert_eq!(stored_sightings(&store).await, ["device-3"]);
    }

    /// The disk fills: SQLite refuses the COMMIT ("database or disk is full")
    /// and rolls the transaction back itself. On 9ddb37f every later write was
    /// refused ("cannot begin: … non-zero transaction depth") even once there
    /// was room, until a restart; now the write is refused as unavailable, and
    /// writes succeed as soon as there is room again.
    #[tokio::test]
    async fn writes_succeed_again_once_a_full_disk_has_room() {
        let Some(disk) = TinyDisk::mount("2m") else {
            eprintln!("skipped: cannot mount a tmpfs here (not root?)");
            return;
        };
        let store = file_store(disk.path()).await;
        disk.fill();

        let mut refused = None;
        for i in 0..10_000 {
            let batch: Vec<Change> = (0..16).map(|j| sighting(i * 100 + j)).collect();
            if let Err(e) = store.commit(batch).await {
                refused = Some(e);
                break;
            }
        }
        let refused = refused.expect("a full disk refuses a write");
        assert!(refused.is_unavailable(), "{refused:?}");
        assert!(refused.to_string().contains("database or disk is full"), "{refused}");

        disk.free();
        store.commit(vec![sighting(1_000_000)]).await.unwrap();
        assert!(stored_sightings(&store).await.contains(&"device-1000000".to_owned()));
    }
}
