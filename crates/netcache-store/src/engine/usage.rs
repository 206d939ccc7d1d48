//! The servers of a usage window, for os-simple-tenant-usage: every row that
//! ran in it, live or deleted, a keyset page at a time.

use netcache_domain::server::Server;
use netcache_store_bounds::sql_bounds;
use sqlx::AssertSqlSafe;

use super::{Backend, Sql};
use crate::{Result, UsageWindow, usage_sql};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    pub(super) async fn servers_in_window<B: Backend<Db = DB>>(
        backend: &B,
        window: &UsageWindow,
        after: Option<&Server>,
        limit: i64,
    ) -> Result<Vec<Server>> {
        let statement = usage_sql::select_window(window.project_id.is_some(), after.is_some(), DB::BYTE_ORDER);
        // Built only from fixed text and the backend's collation, never from input.
        let mut query = sqlx::query(AssertSqlSafe(statement))
            .bind(DB::ts(window.start))
            .bind(DB::ts(window.end));
        if let Some(project) = &window.project_id {
            query = query.bind(project.as_str());
        }
        if let Some(last) = after {
            query = query.bind(last.project_id.as_str()).bind(DB::uuid(last.id.0));
        }
        let rows = query.bind(limit).fetch_all(backend.pool()).await?;
        backend.counts().read_servers(rows.len());
        rows.iter().map(Self::server).collect()
    }
}
