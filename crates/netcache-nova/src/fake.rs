//! A test double of Nova's cell databases: instances in memory, by cell, read
//! in the same keyset pages as the real ones.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use netcache_domain::InstanceUuid;
use netcache_domain::nova::InstanceRecords;

use crate::{NovaRecords, Result, Which};

#[derive(Default)]
pub struct FakeNova {
    cells: Mutex<BTreeMap<String, BTreeMap<InstanceUuid, InstanceRecords>>>,
    pages: AtomicU64,
    largest_page: AtomicU64,
}

impl FakeNova {
    /// Adds (or replaces) an instance's records in `cell`.
    pub fn put(&self, records: InstanceRecords) {
        self.cells
            .lock()
            .expect("cells")
            .entry(records.instance.cell.clone())
            .or_default()
            .insert(records.instance.uuid.clone(), records);
    }

    /// Changes an instance's records in place (Nova writing meanwhile).
    pub fn update(&self, uuid: &InstanceUuid, change: impl FnOnce(&mut InstanceRecords)) {
        let mut cells = self.cells.lock().expect("cells");
        if let Some(records) = cells.values_mut().find_map(|c| c.get_mut(uuid)) {
            change(records);
        }
    }

    /// Pages read so far, and the most instances one held.
    pub fn pages_read(&self) -> (u64, u64) {
        (
            self.pages.load(Ordering::SeqCst),
            self.largest_page.load(Ordering::SeqCst),
        )
    }
}

#[async_trait]
impl NovaRecords for FakeNova {
    fn cells(&self) -> Vec<String> {
        self.cells.lock().expect("cells").keys().cloned().collect()
    }

    async fn instances(
        &self,
        cell: &str,
        which: Which,
        after: Option<&InstanceUuid>,
        limit: usize,
    ) -> Result<Vec<InstanceRecords>> {
        let cells = self.cells.lock().expect("cells");
        let Some(instances) = cells.get(cell) else {
            return Ok(Vec::new());
        };
        let page: Vec<InstanceRecords> = instances
            .values()
            .filter(|r| after.is_none_or(|a| &r.instance.uuid > a))
            .filter(|r| match which {
                Which::Live => !r.instance.deleted,
                Which::DeletedSince(t) => r.instance.deleted && r.instance.deleted_at.is_some_and(|d| d >= t),
            })
            .take(limit)
            .cloned()
            .collect();
        self.pages.fetch_add(1, Ordering::SeqCst);
        self.largest_page.fetch_max(page.len() as u64, Ordering::SeqCst);
        Ok(page)
    }

    async fn instance(&self, uuid: &InstanceUuid) -> Result<Option<InstanceRecords>> {
        let cells = self.cells.lock().expect("cells");
        Ok(cells.values().find_map(|c| c.get(uuid)).cloned())
    }
}
