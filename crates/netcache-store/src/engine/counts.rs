//! What a store has sent, committed and read, for the tests' budgets and the bench.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts a backend's uses of its pools, its committed batches and the
/// transactions that committed them (shared by clones of the store).
#[derive(Clone, Debug, Default)]
pub(crate) struct QueryCount {
    sent: Arc<AtomicU64>,
    committed: Arc<AtomicU64>,
    transactions: Arc<AtomicU64>,
    servers: Arc<AtomicU64>,
}

impl QueryCount {
    /// One more use of a pool (a statement, or a batch).
    pub(crate) fn add(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// One more batch committed.
    pub(crate) fn committed_one(&self) {
        self.committed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn committed(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// One more transaction committed (one fsync).
    pub(crate) fn transacted(&self) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn transactions(&self) -> u64 {
        self.transactions.load(Ordering::Relaxed)
    }

    /// Server rows read (whole rows, as a list or a show reads them).
    pub(crate) fn read_servers(&self, rows: usize) {
        self.servers.fetch_add(rows as u64, Ordering::Relaxed);
    }

    pub(crate) fn servers(&self) -> u64 {
        self.servers.load(Ordering::Relaxed)
    }
}
