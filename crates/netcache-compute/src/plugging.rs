//! Waiting for `network-vif-plugged` before a spawn, like Nova's
//! `vif_plugging_timeout` (off by default). Events that arrive before the build
//! waits are remembered, so none is missed; one that another process took is
//! seen in the cache it marked.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use netcache_domain::server::Server;
use netcache_domain::{PortId, ServerId};
use tokio::sync::Notify;
use tracing::warn;

use crate::{Compute, Error, Result};

/// How often a waiting build looks at the cache for events other processes took.
const CACHE_POLL: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct PlugEvents {
    plugged: Mutex<HashMap<ServerId, HashSet<PortId>>>,
    arrived: Notify,
}

impl PlugEvents {
    /// Remembers a plug event; only while builds wait for them, so the set
    /// cannot grow in a service that does not.
    pub fn record(&self, server: ServerId, port: PortId) {
        self.plugged
            .lock()
            .expect("plug events")
            .entry(server)
            .or_default()
            .insert(port);
        self.arrived.notify_waiters();
    }

    fn missing(&self, server: ServerId, ports: &[PortId]) -> Vec<PortId> {
        let plugged = self.plugged.lock().expect("plug events");
        let seen = plugged.get(&server);
        ports
            .iter()
            .filter(|p| seen.is_none_or(|s| !s.contains(*p)))
            .cloned()
            .collect()
    }

    pub fn forget(&self, server: ServerId) {
        self.plugged.lock().expect("plug events").remove(&server);
    }
}

impl Compute {
    /// Waits until Neutron reported every inactive VIF of the server plugged, up to
    /// `vif_plugging_timeout`; a timeout fails the build when `vif_plugging_is_fatal`.
    pub(crate) async fn wait_for_plugging(&self, server: &Server) -> Result<()> {
        let timeout = self.config.vif_plugging_timeout;
        if timeout.is_zero() {
            return Ok(());
        }
        let inactive: Vec<PortId> = self
            .network_info(server.id)
            .await?
            .0
            .iter()
            .filter(|vif| !vif.active)
            .map(|vif| PortId::from(vif.id.as_str()))
            .collect();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.plug_events.arrived.notified();
            // Another process that took the event marked the port active in the cache.
            let active: HashSet<String> = self
                .network_info(server.id)
                .await?
                .0
                .into_iter()
                .filter(|vif| vif.active)
                .map(|vif| vif.id)
                .collect();
            let missing: Vec<PortId> = self
                .plug_events
                .missing(server.id, &inactive)
                .into_iter()
                .filter(|p| !active.contains(p.as_str()))
                .collect();
            if missing.is_empty() {
                self.plug_events.forget(server.id);
                return Ok(());
            }
            let arrived_or_poll = tokio::time::timeout(CACHE_POLL, arrived);
            if tokio::time::timeout_at(deadline, arrived_or_poll).await.is_err() {
                self.plug_events.forget(server.id);
                let ports = missing.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                if self.config.vif_plugging_is_fatal {
                    return Err(Error::VifPlugTimeout {
                        server: server.id,
                        ports,
                    });
                }
                warn!(server.id = %server.id, ports = %ports, "Timed out waiting for network-vif-plugged; spawning anyway");
                return Ok(());
            }
        }
    }
}
