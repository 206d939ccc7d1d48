//! The engine's singleton leases (one GC pass at a time across processes):
//! taken, renewed and judged on the database's clock, each statement on its own.

use netcache_store_bounds::sql_bounds;
use std::time::Duration;

use netcache_domain::operation::Owner;
use sqlx::Pool;

use super::Sql;
use crate::{Result, sql};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
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
