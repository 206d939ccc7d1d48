//! netcache for an existing Nova cloud (`netcache nova audit|gc|watch`).
//!
//! Nova's cell databases are the source of truth for what Nova allocated; they
//! are read only ([`NovaRecords`]). Neutron is read in batches of instances
//! (ports by `device_id`, as heal does), and changed only through its API with
//! `If-Match`; Nova is told what changed through its external events API
//! ([`NovaEvents`]). The decisions are `netcache_domain::nova`'s.

mod audit;
mod error;
mod events;
mod fake;
mod gc;
mod mysql;
mod records;

pub use audit::{AuditReport, AuditTotals, NovaAuditor, Progress};
pub use error::{Error, Result};
pub use events::{HttpNovaEvents, NovaEndpoint, NovaEvents, RecordedEvents, VifDeleted};
pub use fake::FakeNova;
pub use gc::{GcAct, GcOutcome, GcReport, NovaGc};
pub use mysql::MysqlNova;
pub use records::{NovaRecords, Which};

use std::time::Duration;

/// How the audit reads and GC acts.
#[derive(Clone, Debug)]
pub struct NovaConfig {
    /// Instances per page, and so `device_id`s per Neutron port list.
    pub page_size: usize,
    /// Deleted instances are looked at for leaked ports this long after their delete.
    pub deleted_lookback: Duration,
    /// A finding is acted on only once seen twice at least this long apart.
    pub grace: Duration,
}

impl Default for NovaConfig {
    fn default() -> Self {
        Self {
            page_size: 100,
            deleted_lookback: Duration::from_secs(30 * 24 * 3600),
            grace: Duration::from_secs(600),
        }
    }
}
