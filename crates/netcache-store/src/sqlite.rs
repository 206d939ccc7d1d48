//! The embedded backend: one SQLite file (or an in-memory database for tests).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Sqlite;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous,
};
use uuid::Uuid;

use crate::dialect::{Dialect, to_micros};
use crate::engine::GroupWriter;
use crate::engine::{Backend, QueryCount, Sql};
use crate::operation_sql::LeaseSql;
use crate::{Error, NodeLock, Result};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a write waits for another connection's (or process's) write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Rows sqlx's SQLite thread may queue for the reading task (its default is 50):
/// with a page of 1,000 rows, a small queue makes the two threads wake each other
/// every few rows, which cost more than the rows themselves.
const ROW_BUFFER: usize = 1024;

/// A pool of connections to this process's own SQLite file. Such a connection
/// cannot go stale, so it is not tested before each use: sqlx's default pings
/// it, a round trip to its thread before every statement.
fn pool_options() -> SqlitePoolOptions {
    SqlitePoolOptions::new().test_before_acquire(false)
}

/// The store in SQLite.
///
/// Durability: WAL journal with `synchronous = FULL`, so a returned
/// [`commit`](crate::Store::commit) has been fsynced and survives a process crash
/// or a power loss. Writes go through a pool of one connection, so this
/// process's writers queue for it (in order, without SQLite's busy-wait
/// sleeps); reads use the others, which WAL never blocks. Batches are committed
/// by one task in groups ([`GroupWriter`]): the batches queued while a group is
/// written share the next group's transaction and fsync, each in a savepoint.
/// A group starts with `BEGIN IMMEDIATE`, taking the write lock up front
/// (waiting up to the busy timeout) instead of failing mid-group.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    pub(crate) writer: SqlitePool,
    group: GroupWriter,
    /// The database file (`None` in memory).
    path: Option<PathBuf>,
    queries: QueryCount,
}

impl SqliteStore {
    /// Opens `sqlite:PATH` (creating the file if missing) or `sqlite::memory:`,
    /// and migrates it.
    pub async fn open(url: &str) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT)
            .row_buffer_size(ROW_BUFFER);
        let mut store = if is_in_memory(url) {
            // Every connection to `sqlite::memory:` would be its own database, and
            // closing the last one drops it: keep exactly one, forever.
            let pool = pool_options()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await?;
            Self::with_writer(pool.clone(), pool, false).await?
        } else {
            let options = options
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full);
            let pool = pool_options().connect_with(options.clone()).await?;
            let writer = pool_options().max_connections(1).connect_with(options).await?;
            Self::with_writer(pool, writer, true).await?
        };
        store.path = (!is_in_memory(url))
            .then(|| PathBuf::from(url.trim_start_matches("sqlite://").trim_start_matches("sqlite:")));
        Ok(store)
    }

    /// Migrates a pool the caller configured, and stamps the deployment id; the
    /// pool serves writes too, and its connections are never closed by the
    /// writer (they may be an in-memory database's).
    pub async fn from_pool(pool: SqlitePool) -> Result<Self> {
        Self::with_writer(pool.clone(), pool, false).await
    }

    /// `replaceable`: whether the writer may close a write connection a failure
    /// may have left unusable (a file's; an in-memory database lives in its one
    /// connection).
    async fn with_writer(pool: SqlitePool, writer: SqlitePool, replaceable: bool) -> Result<Self> {
        MIGRATOR.run(&writer).await?;
        Sql::<Sqlite>::ensure_deployment(&writer).await?;
        let queries = QueryCount::default();
        Ok(Self {
            pool,
            group: GroupWriter::start(writer.clone(), queries.clone(), replaceable),
            writer,
            path: None,
            queries,
        })
    }

    #[must_use]
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

fn is_in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

impl Backend for SqliteStore {
    type Db = Sqlite;

    fn pool(&self) -> &SqlitePool {
        self.queries.add();
        &self.pool
    }

    fn writer(&self) -> &SqlitePool {
        self.queries.add();
        &self.writer
    }

    fn counts(&self) -> &QueryCount {
        &self.queries
    }

    fn group_writer(&self) -> Option<&GroupWriter> {
        Some(&self.group)
    }

    /// One process owns a SQLite file, whatever its node: an exclusive lock on
    /// `FILE.lock` (not on the database file itself, whose POSIX locks SQLite
    /// owns), released by the kernel when the process dies.
    async fn lock_node_exclusively(&self, _node: &str) -> Result<NodeLock> {
        let Some(path) = &self.path else {
            return Ok(NodeLock::new(()));
        };
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::NodeBusy(format!("cannot open {}: {e}", lock_path.display())))?;
        match file.try_lock() {
            Ok(()) => Ok(NodeLock::new(file)),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::NodeBusy(format!(
                "another netcache process already serves {} (it holds {}); SQLite is for one process, \
                 use PostgreSQL to run several",
                path.display(),
                lock_path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::NodeBusy(format!("cannot lock {}: {e}", lock_path.display())))
            }
        }
    }
}

/// RFC 3339 in UTC with exactly six fractional digits: fixed width, so the text
/// order of a column is its time order.
const TIMESTAMP_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

impl Dialect for Sqlite {
    type Ts = String;
    type Uuid = String;

    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    /// SQLite's default collation, BINARY, already does.
    const BYTE_ORDER: &'static str = "";
    /// `strftime`'s `%f` has milliseconds: three more digits keep the text as
    /// wide as [`TIMESTAMP_FORMAT`]'s, so text order stays time order.
    const NOW: &'static str = "(strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')";

    fn now_plus_millis(param: &str) -> String {
        format!("(strftime('%Y-%m-%dT%H:%M:%f', 'now', ({param} / 1000.0) || ' seconds') || '000Z')")
    }

    fn service_sql() -> &'static crate::service_sql::ServiceSql {
        static SQL: LazyLock<crate::service_sql::ServiceSql> =
            LazyLock::new(|| crate::service_sql::ServiceSql::new(Sqlite::NOW, Sqlite::now_plus_millis));
        &SQL
    }

    fn lease_sql() -> &'static LeaseSql {
        static SQL: LazyLock<LeaseSql> = LazyLock::new(|| LeaseSql::new(Sqlite::NOW, Sqlite::now_plus_millis));
        &SQL
    }
    // SQLite's clock has milliseconds: padded to the six digits of
    // `TIMESTAMP_FORMAT`, so now compares with a stored time as text does.
    const LEASES: crate::sql::LeaseSql = crate::sql::lease_sql!(
        now: "(strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')",
        expiry: "(strftime('%Y-%m-%dT%H:%M:%f', 'now', printf('%.3f seconds', $3 / 1000.0)) || '000Z')"
    );

    fn ts(t: DateTime<Utc>) -> String {
        to_micros(t).format(TIMESTAMP_FORMAT).to_string()
    }

    fn from_ts(v: String) -> Result<DateTime<Utc>, String> {
        DateTime::parse_from_rfc3339(&v)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| format!("{v:?} is not an RFC 3339 timestamp: {e}"))
    }

    fn uuid(u: Uuid) -> String {
        u.hyphenated().to_string()
    }

    fn from_uuid(v: String) -> Result<Uuid, String> {
        Uuid::parse_str(&v).map_err(|e| format!("{v:?} is not a uuid: {e}"))
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn timestamps_are_fixed_width_so_text_order_is_time_order() {
        let whole = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let later = whole + chrono::Duration::nanoseconds(500_999);
        assert_eq!(Sqlite::ts(whole), "2026-01-02T03:04:05.000000Z");
        assert_eq!(Sqlite::ts(later), "2026-01-02T03:04:05.000500Z");
        assert!(Sqlite::ts(whole) < Sqlite::ts(later));
        assert_eq!(Sqlite::from_ts(Sqlite::ts(later)).unwrap(), to_micros(later));
    }

    /// Each statement takes a connection from a pool; a ping before it would
    /// be one more round trip to the connection's thread.
    #[tokio::test]
    async fn connections_are_not_pinged_before_each_statement() {
        let dir = tempfile::tempdir().unwrap();
        let file = SqliteStore::open(&format!("sqlite:{}", dir.path().join("netcache.db").display()))
            .await
            .unwrap();
        let memory = SqliteStore::open("sqlite::memory:").await.unwrap();
        for pool in [&file.pool, &file.writer, &memory.pool] {
            assert!(!pool.options().get_test_before_acquire());
        }
    }
}
