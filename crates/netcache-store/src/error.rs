pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A precondition of a batch failed (optimistic concurrency): re-read and retry.
    #[error("conflict: {0}")]
    Conflict(String),
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
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl Error {
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_))
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
