//! One operation at a time per server in this process (attach, detach, build,
//! delete). Across processes, the store's compare-and-swap guards the rows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use netcache_domain::ServerId;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

#[derive(Default)]
pub struct ServerLocks {
    locks: Mutex<HashMap<ServerId, Arc<AsyncMutex<()>>>>,
}

impl ServerLocks {
    pub async fn lock(&self, server: ServerId) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().expect("server locks");
            // Forget locks nobody holds or waits for, so the map stays small.
            locks.retain(|_, l| Arc::strong_count(l) > 1);
            locks.entry(server).or_default().clone()
        };
        lock.lock_owned().await
    }
}
