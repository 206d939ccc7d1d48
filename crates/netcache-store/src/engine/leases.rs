//! The engine's singleton leases (one GC pass at a time across processes):
//! taken, renewed and judged on the database's clock, each statement on its own.

use std::time::Duration;

use netcache_domain::operation::Owner;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Type};

use super::Sql;
use crate::dialect::Dialect;
use crate::{Result, sql};

// The where clause is `Sql`'s own (engine.rs): what the shared code binds and decodes.
impl<DB> Sql<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'s> &'s str: ColumnIndex<DB::Row> + Encode<'s, DB>,
    str: Type<DB>,
    String: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    i64: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    bool: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    for<'s> Option<&'s str>: Encode<'s, DB>,
    Option<String>: for<'q> Encode<'q, DB>,
    Option<i64>: for<'q> Encode<'q, DB>,
    Option<DB::Ts>: for<'q> Encode<'q, DB>,
    Option<DB::Uuid>: for<'q> Encode<'q, DB>,
{
    pub(super) async fn try_lease(writer: &Pool<DB>, name: &str, owner: &str, length: Duration) -> Result<bool> {
        Self::lease(writer, DB::LEASES.try_lease, name, owner, length).await
    }

    pub(super) async fn renew_lease(writer: &Pool<DB>, name: &str, owner: &str, length: Duration) -> Result<bool> {
        Self::lease(writer, DB::LEASES.renew_lease, name, owner, length).await
    }

    /// Runs one of the [`Dialect::LEASES`] statements: whether `owner` holds
    /// the lease `name` for `length` from now.
    async fn lease(
        writer: &Pool<DB>,
        statement: &'static str,
        name: &str,
        owner: &str,
        length: Duration,
    ) -> Result<bool> {
        let millis = i64::try_from(length.as_millis()).unwrap_or(i64::MAX);
        let result = sqlx::query(statement)
            .bind(name)
            .bind(owner)
            .bind(millis)
            .execute(writer)
            .await?;
        Ok(DB::rows_affected(&result) > 0)
    }

    pub(super) async fn release_lease(writer: &Pool<DB>, name: &str, owner: &str) -> Result<()> {
        sqlx::query(sql::RELEASE_LEASE)
            .bind(name)
            .bind(owner)
            .execute(writer)
            .await?;
        Ok(())
    }

    pub(super) async fn release_node_leases(writer: &Pool<DB>, me: &Owner) -> Result<u64> {
        let result = sqlx::query(sql::RELEASE_NODE_LEASES)
            .bind(me.node.as_str())
            .bind(me.label())
            .execute(writer)
            .await?;
        Ok(DB::rows_affected(&result))
    }
}
