//! Deployment-wide singleton leases: one GC pass at a time across processes.
//! A lease is short (`operations.lease`), judged on the database's clock,
//! renewed every third of it while its pass runs and at each object the pass
//! takes up, released when the pass ends (also on an error, a panic or a
//! dropped future), and released at start by the holder node's next
//! incarnation: a process killed mid-pass holds nothing up for long, and its
//! own restart at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::{info, warn};

use crate::{Compute, Error, Result};

/// A pass's hold on its lease.
pub(crate) struct Lease {
    compute: Arc<Compute>,
    name: &'static str,
    holder: String,
    /// Set by a renewal that found the lease no longer ours, or once released.
    lost: AtomicBool,
}

impl Lease {
    /// Renews the lease before the pass takes up its next object: the pass
    /// stops with [`Error::LeaseLost`] if another process holds it now.
    pub(crate) async fn renew(&self) -> Result<()> {
        if !self.lost.load(Ordering::SeqCst) && self.renewed().await? {
            return Ok(());
        }
        self.lost.store(true, Ordering::SeqCst);
        warn!(
            lease = self.name,
            "The {} lease was taken from this process; its pass stops", self.name
        );
        Err(Error::LeaseLost(self.name))
    }

    async fn renewed(&self) -> Result<bool> {
        let length = self.compute.config.operations.lease;
        Ok(self.compute.store.renew_lease(self.name, &self.holder, length).await?)
    }

    /// Releases the lease at the end of its pass (the pass's error, if any, is
    /// what its caller hears of).
    async fn release(&self) {
        if self.lost.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Err(e) = self.compute.store.release_lease(self.name, &self.holder).await {
            warn!(lease = self.name, error = %e, "Could not release the {} lease: {e}; it expires", self.name);
        }
    }

    /// Renews every third of the lease, until it finds the lease lost.
    async fn keep(&self) {
        let every = self.compute.config.operations.lease / 3;
        loop {
            tokio::time::sleep(every).await;
            match self.renewed().await {
                Ok(true) => {}
                Ok(false) => {
                    self.lost.store(true, Ordering::SeqCst);
                    return;
                }
                // It may still be ours: the next renewal tells.
                Err(e) => warn!(lease = self.name, error = %e, "Could not renew the {} lease: {e}", self.name),
            }
        }
    }
}

/// Releases the lease of a pass that ended without [`Lease::release`] (a
/// panic, a dropped future); a process that died (a simulated crash) leaves
/// it, as a killed one would.
impl Drop for Lease {
    fn drop(&mut self) {
        if self.compute.has_crashed() || self.lost.load(Ordering::SeqCst) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (compute, name, holder) = (Arc::clone(&self.compute), self.name, std::mem::take(&mut self.holder));
        runtime.spawn(async move {
            if let Err(e) = compute.store.release_lease(name, &holder).await {
                warn!(lease = name, error = %e, "Could not release the {name} lease: {e}; it expires");
            }
        });
    }
}

impl Compute {
    /// Runs `work` under the lease `name`, or not at all (`None`) while another
    /// process holds it; `work` renews it at each object it takes up.
    pub(crate) async fn under_lease<T, F>(
        self: &Arc<Self>,
        name: &'static str,
        work: impl FnOnce(Arc<Lease>) -> F,
    ) -> Result<Option<T>>
    where
        F: Future<Output = Result<T>>,
    {
        let holder = self.owner().label();
        if !self
            .store
            .try_lease(name, &holder, self.config.operations.lease)
            .await?
        {
            return Ok(None);
        }
        let lease = Arc::new(Lease {
            compute: Arc::clone(self),
            name,
            holder,
            lost: AtomicBool::new(false),
        });
        let work = work(Arc::clone(&lease));
        tokio::pin!(work);
        let result = tokio::select! {
            result = &mut work => result,
            () = lease.keep() => work.await,
        };
        if !self.has_crashed() {
            lease.release().await;
        }
        result.map(Some)
    }

    /// Releases the singleton leases an earlier incarnation of this node left
    /// (it is dead: this one holds the node's lock).
    pub(crate) async fn release_earlier_leases(&self) -> Result<()> {
        let released = self.store.release_node_leases(self.owner()).await?;
        if released > 0 {
            info!(
                released,
                "Released {released} leases an earlier incarnation of this node held"
            );
        }
        Ok(())
    }
}
