//! Waiting for `network-vif-plugged` before a spawn, like Nova's
//! `vif_plugging_timeout` (off by default). A build expects its server's events
//! before it makes its ports, so one that arrives before the build waits is
//! remembered and none is missed; an event no build of this process expects is
//! not kept (it still marks the port active in the cache, where a build that
//! waits on another process sees it).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use netcache_domain::server::Server;
use netcache_domain::{PortId, ServerId};
use tokio::sync::Notify;
use tracing::warn;

use crate::{Compute, Error, Result};

/// How often a waiting build looks at the cache for events other processes took.
const CACHE_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// The plug events of servers whose builds wait for them, by server. Only
/// those: an event for a server nobody waits for is not kept, so the map holds
/// at most one entry per build in flight.
#[derive(Default)]
pub(crate) struct PlugEvents {
    awaited: Mutex<HashMap<ServerId, HashSet<PortId>>>,
    arrived: Notify,
}

impl PlugEvents {
    /// Keeps the server's plug events from now until the returned guard is
    /// dropped: a build expects them before it makes its ports, so none that
    /// arrives before it waits is missed.
    pub fn expect(&self, server: ServerId) -> Expecting<'_> {
        self.awaited.lock().expect("plug events").entry(server).or_default();
        Expecting { events: self, server }
    }

    /// Remembers a plug event if a build of the server expects it.
    pub fn record(&self, server: ServerId, port: PortId) {
        if let Some(ports) = self.awaited.lock().expect("plug events").get_mut(&server) {
            ports.insert(port);
            self.arrived.notify_waiters();
        }
    }

    fn missing(&self, server: ServerId, ports: &[PortId]) -> Vec<PortId> {
        let awaited = self.awaited.lock().expect("plug events");
        let seen = awaited.get(&server);
        ports
            .iter()
            .filter(|p| seen.is_none_or(|s| !s.contains(*p)))
            .cloned()
            .collect()
    }

    /// Plug events kept, of every server.
    #[cfg(feature = "testing")]
    fn kept(&self) -> usize {
        self.awaited
            .lock()
            .expect("plug events")
            .values()
            .map(HashSet::len)
            .sum()
    }
}

/// A build's expectation of its server's plug events; dropped, they are forgotten.
pub(crate) struct Expecting<'a> {
    events: &'a PlugEvents,
    server: ServerId,
}

impl Drop for Expecting<'_> {
    fn drop(&mut self) {
        self.events.awaited.lock().expect("plug events").remove(&self.server);
    }
}

impl Compute {
    /// Plug events this process keeps (test hook): only those of builds that
    /// wait for them.
    #[cfg(feature = "testing")]
    pub fn plug_events_kept(&self) -> usize {
        self.plug_events.kept()
    }

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
                return Ok(());
            }
            let arrived_or_poll = tokio::time::timeout(CACHE_POLL, arrived);
            if tokio::time::timeout_at(deadline, arrived_or_poll).await.is_err() {
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
