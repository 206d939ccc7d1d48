//! [`MysqlNova`]: Nova's records read from its cell databases (MySQL or
//! MariaDB), read-only.
//!
//! Every session is read-only (`SET SESSION TRANSACTION … READ ONLY` when it
//! connects, `connection.rs`), and every read is one read-only transaction with
//! a consistent snapshot, rolled back (`read.rs`): a page of instances and their
//! VIF rows, info caches and actions are one moment of the cell. Nothing here
//! writes. Each statement sent is counted in
//! `netcache_nova_db_queries_total{cell}`.

mod cache;
mod connection;
mod read;

use std::fmt;

use async_trait::async_trait;
use netcache_domain::InstanceUuid;
use netcache_domain::nova::InstanceRecords;
use sqlx::MySqlPool;

use crate::{Error, NovaRecords, Result, Which};
use connection::{connect_options, read_only_pool};
use read::{FAKE_UUID, Snapshot};

/// The name of the API database in errors and metrics.
const API: &str = "api";

/// Nova's cell databases, each behind a pool of two read-only sessions.
pub struct MysqlNova {
    cells: Vec<Cell>,
}

struct Cell {
    name: String,
    pool: MySqlPool,
}

impl Cell {
    /// Counts one statement sent to this cell.
    fn count(&self) {
        metrics::counter!("netcache_nova_db_queries_total", "cell" => self.name.clone()).increment(1);
    }

    fn error(&self, source: sqlx::Error) -> Error {
        Error::Database {
            cell: self.name.clone(),
            source,
        }
    }
}

impl MysqlNova {
    /// Connects to each cell's database: `(name, URL)`, the URL `mysql://…` or
    /// oslo.db's `mysql+pymysql://…?charset=utf8`. One connection to each is
    /// opened now, so a wrong URL or password fails here, naming its cell.
    pub async fn connect(cells: Vec<(String, String)>) -> Result<Self> {
        if cells.is_empty() {
            return Err(Error::Config("no Nova cell databases to read".to_owned()));
        }
        let mut connected: Vec<Cell> = Vec::with_capacity(cells.len());
        for (name, url) in cells {
            if connected.iter().any(|c| c.name == name) {
                return Err(Error::Config(format!("two Nova cells named {name}")));
            }
            let options = connect_options(&url).map_err(|e| in_cell(&name, e))?;
            let pool = read_only_pool(&name, options).await?;
            connected.push(Cell { name, pool });
        }
        Ok(Self { cells: connected })
    }

    /// Connects to the cells the API database's `cell_mappings` lists (cell0,
    /// which holds the instances that were never scheduled, included), in the
    /// order they were mapped. A cell without a name is named by its uuid.
    pub async fn from_api_database(url: &str) -> Result<Self> {
        let options = connect_options(url)?;
        let pool = read_only_pool(API, options).await?;
        metrics::counter!("netcache_nova_db_queries_total", "cell" => API).increment(1);
        let rows: Result<Vec<(String, Option<String>, String)>, _> =
            sqlx::query_as("SELECT uuid, name, database_connection FROM cell_mappings ORDER BY id")
                .fetch_all(&pool)
                .await;
        pool.close().await;
        let rows = rows.map_err(|source| Error::Database {
            cell: API.to_owned(),
            source,
        })?;
        let cells = rows
            .into_iter()
            .map(|(uuid, name, connection)| (name.filter(|n| !n.is_empty()).unwrap_or(uuid), connection))
            .collect();
        Self::connect(cells).await
    }

    /// A cell's pool, whose sessions are read-only (for tests that check it).
    #[doc(hidden)]
    #[must_use]
    pub fn pool(&self, cell: &str) -> Option<&MySqlPool> {
        self.cells.iter().find(|c| c.name == cell).map(|c| &c.pool)
    }

    fn cell(&self, name: &str) -> Result<&Cell> {
        self.cells
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::Config(format!("no Nova cell named {name}")))
    }
}

/// A configuration error of cell `name`'s URL, naming it.
fn in_cell(name: &str, error: Error) -> Error {
    match error {
        Error::Config(reason) => Error::Config(format!("Nova cell {name}: {reason}")),
        other => other,
    }
}

impl fmt::Debug for MysqlNova {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlNova")
            .field("cells", &self.cells())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl NovaRecords for MysqlNova {
    fn cells(&self) -> Vec<String> {
        self.cells.iter().map(|c| c.name.clone()).collect()
    }

    async fn instances(
        &self,
        cell: &str,
        which: Which,
        after: Option<&InstanceUuid>,
        limit: usize,
    ) -> Result<Vec<InstanceRecords>> {
        let cell = self.cell(cell)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut snapshot = Snapshot::begin(cell).await?;
        let records = match which {
            Which::Live => {
                let instances = snapshot.live(after, limit).await?;
                snapshot.records(instances, false).await?
            }
            Which::DeletedSince(since) => {
                let instances = snapshot.deleted(since, after, limit).await?;
                snapshot.records(instances, true).await?
            }
        };
        snapshot.end().await?;
        Ok(records)
    }

    async fn instance(&self, uuid: &InstanceUuid) -> Result<Option<InstanceRecords>> {
        if uuid.as_str() == FAKE_UUID {
            return Ok(None);
        }
        for cell in &self.cells {
            let mut snapshot = Snapshot::begin(cell).await?;
            let found = match snapshot.one(uuid).await? {
                Some(instance) => {
                    let deleted = instance.deleted;
                    snapshot.records(vec![instance], deleted).await?.pop()
                }
                None => None,
            };
            snapshot.end().await?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }
}
