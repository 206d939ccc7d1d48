//! What differs between the backends once the SQL text is shared: how timestamps
//! and uuids are represented, how a write transaction starts, and how many rows a
//! statement touched.

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::{Database, Decode, Encode, Type};
use uuid::Uuid;

pub(crate) trait Dialect: Database {
    /// A timestamp as bound and read (microsecond precision on both backends).
    type Ts: Type<Self> + for<'q> Encode<'q, Self> + for<'r> Decode<'r, Self> + Send + Sync;
    /// A uuid as bound and read.
    type Uuid: Type<Self> + for<'q> Encode<'q, Self> + for<'r> Decode<'r, Self> + Send + Sync;

    /// Opens the transaction of a [`commit`](crate::Store::commit) batch.
    const BEGIN_WRITE: &'static str;
    /// The database's clock, as an expression of the timestamp column type.
    const NOW: &'static str;
    /// What makes a text column compare byte by byte, as Rust compares strings.
    const BYTE_ORDER: &'static str;

    /// [`Dialect::NOW`] plus the milliseconds bound to `param`.
    fn now_plus_millis(param: &str) -> String;
    /// The operation statements on this backend's clock, built once.
    fn lease_sql() -> &'static crate::operation_sql::LeaseSql;
    /// The compute services' statements on this backend's clock, built once.
    fn service_sql() -> &'static crate::service_sql::ServiceSql;
    /// The singleton-lease statements, on the database's clock.
    const LEASES: crate::sql::LeaseSql;

    fn ts(t: DateTime<Utc>) -> Self::Ts;
    fn from_ts(v: Self::Ts) -> Result<DateTime<Utc>, String>;
    fn uuid(u: Uuid) -> Self::Uuid;
    fn from_uuid(v: Self::Uuid) -> Result<Uuid, String>;
    fn rows_affected(result: &Self::QueryResult) -> u64;
}

/// Both backends keep microseconds; anything finer is dropped the same way on both.
pub(crate) fn to_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(6)
}
