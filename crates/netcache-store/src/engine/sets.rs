//! Statements over a set of servers: one `IN ($1, …, $n)` list per
//! [`IDS_PER_STATEMENT`] servers, so a batch of servers costs a fixed number of
//! statements, not one per server.

use netcache_domain::ServerId;
use netcache_store_bounds::sql_bounds;
use sqlx::AssertSqlSafe;

use super::{Backend, Sql};
use crate::{Error, Result};

/// Ids bound in one `IN (…)` list. A read's list is padded to a power of two
/// (repeating its last id), so a query has at most 8 texts to prepare.
pub(super) const IDS_PER_STATEMENT: usize = 128;

/// `($1, $2, …, $n)`.
pub(crate) fn placeholders(n: usize) -> String {
    let list: Vec<String> = (1..=n).map(|i| format!("${i}")).collect();
    format!("({})", list.join(", "))
}

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    /// The rows of `head` `IN (…)` `tail` for a set of servers, one statement per
    /// [`IDS_PER_STATEMENT`] of them.
    pub(super) async fn rows_of_servers<B: Backend<Db = DB>>(
        backend: &B,
        (head, tail): (&str, &str),
        servers: &[ServerId],
    ) -> Result<Vec<DB::Row>> {
        let mut rows = Vec::new();
        for chunk in servers.chunks(IDS_PER_STATEMENT) {
            let bound = chunk.len().next_power_of_two();
            let text = format!("{head}{}{tail}", placeholders(bound));
            let mut query = sqlx::query(AssertSqlSafe(text));
            for i in 0..bound {
                query = query.bind(DB::uuid(chunk[i.min(chunk.len() - 1)].0));
            }
            rows.extend(query.fetch_all(backend.pool()).await?);
        }
        Ok(rows)
    }

    /// Runs the write `head` `IN (…)` `tail` for at most [`IDS_PER_STATEMENT`]
    /// servers; returns the rows it touched.
    pub(super) async fn run_for_servers(
        conn: &mut DB::Connection,
        (head, tail): (&str, &str),
        servers: &[ServerId],
    ) -> Result<u64> {
        assert!(
            servers.len() <= IDS_PER_STATEMENT,
            "one statement per {IDS_PER_STATEMENT} servers"
        );
        let mut query = sqlx::query(AssertSqlSafe(format!("{head}{}{tail}", placeholders(servers.len()))));
        for id in servers {
            query = query.bind(DB::uuid(id.0));
        }
        let result = query.execute(conn).await.map_err(Error::from_write)?;
        Ok(DB::rows_affected(&result))
    }
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn placeholders_number_from_one() {
        assert_eq!(placeholders(1), "($1)");
        assert_eq!(placeholders(3), "($1, $2, $3)");
    }
}
