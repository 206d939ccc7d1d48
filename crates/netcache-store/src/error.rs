//! The store's one error enum: a refused precondition (a conflict to re-read and
//! retry), a missing row, or a database that cannot be used now (down, or its
//! disk full: [`Error::is_unavailable`], which the API answers 503) as opposed
//! to a statement the database refused.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A precondition of a batch failed (optimistic concurrency): re-read and retry.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A server group's placements moved on since it was read (another member
    /// joined or was placed): a conflict, after which the caller decides the
    /// placement again from a fresh read.
    #[error("conflict: {0}")]
    GroupMoved(String),
    /// A row a change refers to does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The store URL is not one netcache can open.
    #[error("unsupported store URL {0:?}: use sqlite:PATH or postgres://...")]
    UnsupportedUrl(String),
    /// A stored value could not be read back (corruption or a newer schema).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// A quota claim of the batch does not fit (the batch is rolled back).
    #[error("over quota: {0}")]
    OverQuota(netcache_domain::quota::Refusal),
    /// Another live process runs this node (or owns this SQLite file).
    #[error("{0}")]
    NodeBusy(String),
    /// SQLite's writer could not commit a group of batches (the batch is not
    /// committed).
    #[error("SQLite writer: {0}")]
    Writer(String),
    /// The database cannot serve now (down, unreachable, out of connections or
    /// disk): nothing was written, and the same request may succeed later.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl Error {
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_) | Self::GroupMoved(_))
    }

    #[must_use]
    pub fn is_group_moved(&self) -> bool {
        matches!(self, Self::GroupMoved(_))
    }

    /// Whether the database could not serve (see [`unavailable`]) rather than
    /// refused this request: the caller may retry later, unchanged.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable(_) => true,
            Self::Database(e) | Self::Migrate(sqlx::migrate::MigrateError::Execute(e)) => unavailable(e),
            _ => false,
        }
    }
}

/// Whether `error` says the database is down, unreachable, out of connections or
/// out of disk (or memory), not that a statement was wrong: its socket or file
/// failed, the pool gave no connection, SQLite's `FULL`, `IOERR`, `BUSY`,
/// `LOCKED`, `NOMEM` or `CANTOPEN`, PostgreSQL's connection exceptions (`08`),
/// insufficient resources (`53`: disk full, out of memory, too many
/// connections), an operator's intervention (`57P`: shutting down, starting
/// up) or a system error (`58`).
pub(crate) fn unavailable(error: &sqlx::Error) -> bool {
    use sqlx::error::DatabaseError;
    match error {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            if let Some(sqlite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                let primary = sqlite.code().and_then(|c| c.parse::<i32>().ok()).map(|c| c & 0xff);
                // SQLITE_BUSY, _LOCKED, _NOMEM, _IOERR, _FULL, _CANTOPEN.
                matches!(primary, Some(5 | 6 | 7 | 10 | 13 | 14))
            } else if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                let state = pg.code();
                ["08", "53", "57P", "58"].iter().any(|class| state.starts_with(class))
            } else {
                false
            }
        }
        _ => false,
    }
}

impl Error {
    /// Classifies a failed write: a key violation is the batch's precondition failing
    /// (a port already in a server's records, a duplicate id: [`Error::Conflict`]) or
    /// a change referring to a row that does not exist ([`Error::NotFound`]).
    pub(crate) fn from_write(error: sqlx::Error) -> Self {
        use sqlx::error::ErrorKind;
        match &error {
            sqlx::Error::Database(db) => match db.kind() {
                ErrorKind::UniqueViolation => Self::Conflict(db.message().to_owned()),
                ErrorKind::ForeignKeyViolation => Self::NotFound(db.message().to_owned()),
                _ => Self::Database(error),
            },
            _ => Self::Database(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqlitePoolOptions;

    use super::*;

    /// A database that is down, unreachable or full is unavailable; a statement it
    /// refuses is not.
    #[tokio::test]
    async fn an_outage_or_a_full_disk_is_unavailable_and_a_refused_statement_is_not() {
        let refused = <sqlx::PgConnection as sqlx::Connection>::connect("postgres://netcache@127.0.0.1:1/netcache")
            .await
            .unwrap_err();
        assert!(matches!(refused, sqlx::Error::Io(_)), "{refused:?}");
        assert!(Error::Database(refused).is_unavailable(), "connection refused");

        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (x TEXT PRIMARY KEY)")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES ('a')").execute(&pool).await.unwrap();
        let duplicate = sqlx::query("INSERT INTO t VALUES ('a')")
            .execute(&pool)
            .await
            .unwrap_err();
        assert!(!Error::Database(duplicate).is_unavailable(), "a key violation");
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(&pool).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA max_page_count = {pages}")))
            .execute(&pool)
            .await
            .unwrap();
        let full = sqlx::query("INSERT INTO t SELECT hex(randomblob(2000)) FROM (SELECT 1 UNION SELECT 2)")
            .execute(&pool)
            .await
            .unwrap_err();
        assert!(full.to_string().contains("full"), "{full}");
        assert!(Error::Database(full).is_unavailable(), "SQLITE_FULL");

        pool.close().await;
        let closed = sqlx::query("SELECT 1").execute(&pool).await.unwrap_err();
        assert!(Error::Database(closed).is_unavailable(), "a closed pool");
        assert!(Error::Unavailable("the disk is full".into()).is_unavailable());
        assert!(!Error::Writer("the writer panicked".into()).is_unavailable());
        assert!(!Error::Conflict("generation".into()).is_unavailable());
    }
}
