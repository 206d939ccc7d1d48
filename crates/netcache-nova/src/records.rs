//! Nova's records, behind [`NovaRecords`]: the cell databases (read-only, see
//! `mysql.rs`) or a test double ([`crate::FakeNova`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use netcache_domain::InstanceUuid;
use netcache_domain::nova::InstanceRecords;

use crate::Result;

/// Which instances a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Not deleted.
    Live,
    /// Deleted (soft-deleted or archived to the shadow tables) at or after this time.
    DeletedSince(DateTime<Utc>),
}

/// Read-only access to Nova's cell databases.
#[async_trait]
pub trait NovaRecords: Send + Sync + 'static {
    /// The cells, by name, in a stable order.
    fn cells(&self) -> Vec<String>;

    /// One keyset page of a cell's instances (ordered by uuid, after `after`),
    /// each with its VIF rows (deleted ones included), its info cache and its
    /// actions, read in one snapshot.
    async fn instances(
        &self,
        cell: &str,
        which: Which,
        after: Option<&InstanceUuid>,
        limit: usize,
    ) -> Result<Vec<InstanceRecords>>;

    /// One instance's records as they are now, wherever it is (GC's re-read).
    async fn instance(&self, uuid: &InstanceUuid) -> Result<Option<InstanceRecords>>;
}
