//! Nova's os-server-external-events, with netcache's semantics: a
//! `network-changed` for a port in the server's VIF records refreshes it; for any
//! other port that carries the server's id it records a ghost sighting — it never
//! appends (Nova does: its ghost-port bug). `network-vif-deleted` marks the VIF
//! lost and drops it from the cache; `network-vif-plugged` marks its cache entry
//! active and wakes a build waiting for it. The events of later microversions
//! (`volume-extended`, `power-update`, `accelerator-request-bound`,
//! `volume-reimaged`) are accepted and change nothing: netcache has no volumes,
//! accelerators or bare-metal power source whose state they would report
//! (Nova's `power-update` sets an Ironic server's power state to what its tag
//! says; netcache's guests change power only through the API's actions).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::cache::{LostReason, LostVif, Observed};
use netcache_domain::change::Change;
use netcache_domain::ghost::{self, Ghost};
use netcache_domain::server::{Server, WatchedServer};
use netcache_domain::vif::VifRecord;
use netcache_domain::{PortId, ServerId};
use tracing::{info, warn};

use crate::attachment::heal::{HealReport, Stored};
use crate::{Compute, HoldPoint, RequestContext, Result};

/// One event as Nova receives it.
#[derive(Clone, Debug)]
pub struct ExternalEvent {
    pub name: String,
    pub server_uuid: String,
    pub tag: Option<String>,
}

/// Per-event result, as Nova reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventCode {
    /// Accepted and dispatched (200).
    Accepted,
    /// No such server (404).
    NotFound,
    /// The server has no host yet (422).
    NoHost,
    /// An event that must name its subject came without a tag (400).
    TagMissing,
}

impl EventCode {
    #[must_use]
    pub fn http(self) -> u16 {
        match self {
            Self::Accepted => 200,
            Self::NotFound => 404,
            Self::NoHost => 422,
            Self::TagMissing => 400,
        }
    }
}

/// Events Nova drops without a `tag` (its `TAG_REQUIRED`).
const TAG_REQUIRED: [&str; 3] = ["volume-extended", "power-update", "accelerator-request-bound"];

/// Event names Nova 2.1 accepts for networks.
pub const EVENT_NAMES: [&str; 4] = [
    "network-changed",
    "network-vif-plugged",
    "network-vif-unplugged",
    "network-vif-deleted",
];

/// Neutron's external events, and Nova's inject-network-info.
#[async_trait]
pub trait EventOps: Send + Sync {
    /// Handles one event. Neutron trouble while handling it is logged, not
    /// returned: like Nova, the event was accepted once the server was found.
    async fn external_event(&self, event: &ExternalEvent) -> Result<EventCode>;

    /// Nova's `injectNetworkInfo`: the server's network info refreshed from
    /// Neutron, as a tagless `network-changed` refreshes it (the fake guest
    /// takes nothing more). A locked server refuses it but for admins (409);
    /// Neutron trouble is logged, not returned (Nova casts it to the compute).
    async fn inject_network_info(&self, ctx: &RequestContext, server_id: ServerId) -> Result<()>;
}

#[async_trait]
impl EventOps for Arc<Compute> {
    async fn external_event(&self, event: &ExternalEvent) -> Result<EventCode> {
        let Ok(server_id) = event.server_uuid.parse::<ServerId>() else {
            return Ok(EventCode::NotFound);
        };
        let server = match self.server(server_id).await {
            Ok(server) => server,
            Err(crate::Error::ServerNotFound(_)) => return Ok(EventCode::NotFound),
            Err(e) => return Err(e),
        };
        if event.tag.is_none() && TAG_REQUIRED.contains(&event.name.as_str()) {
            return Ok(EventCode::TagMissing);
        }
        if server.host.is_none() {
            return Ok(EventCode::NoHost);
        }
        let port = event.tag.as_deref().map(PortId::from);
        if let ("network-vif-plugged", Some(port)) = (event.name.as_str(), &port)
            && !self.config.vif_plugging_timeout.is_zero()
        {
            self.plug_events.record(server_id, port.clone());
        }
        let handled = match (event.name.as_str(), port) {
            ("network-changed", Some(port)) => self.refresh_port(&server, &port).await,
            ("network-vif-plugged", Some(port)) => self.mark_active(&server, &port).await,
            ("network-changed", None) => self.refresh_server(&server).await,
            ("network-vif-deleted", Some(port)) => self.vif_deleted(&server, &port).await,
            _ => Ok(()),
        };
        if let Err(e) = handled {
            warn!(server.id = %server_id, event = %event.name, error = %e, "Event {} for server {server_id} not applied: {e}", event.name);
        }
        info!(server.id = %server_id, event = %event.name, tag = ?event.tag, "Handled event {} for server {server_id}", event.name);
        Ok(EventCode::Accepted)
    }

    async fn inject_network_info(&self, ctx: &RequestContext, server_id: ServerId) -> Result<()> {
        let server = self.server(server_id).await?;
        Compute::check_unlocked(ctx, &server)?;
        if server.host.is_none() {
            return Ok(());
        }
        if let Err(e) = self.refresh_server(&server).await {
            warn!(server.id = %server_id, error = %e, "Network info of server {server_id} not refreshed: {e}");
        }
        Ok(())
    }
}

impl Compute {
    /// Refreshes one port of the server if it is one of its VIFs; otherwise, if
    /// Neutron gives it the server's id, records it as a ghost. The cache is
    /// written only if nothing changed the server since it was read.
    pub(crate) async fn refresh_port(&self, server: &Server, port_id: &PortId) -> Result<()> {
        let stored = self.store.cache(server.id).await?;
        let vifs = self.store.vifs(server.id).await?;
        let known = vifs.iter().find(|v| &v.port_id == port_id);
        let port = match self.neutron.show_port(port_id).await {
            Ok(port) => Some(port),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let Some(vif) = known.filter(|v| v.is_attached()) else {
            if known.is_none()
                && let Some(port) = port.filter(|p| p.carries_device_id(&server.id.to_string()))
            {
                let ghost = Ghost {
                    port_id: port.id.clone(),
                    device_id: port.device_id.clone(),
                    owner: ghost::owner_of(&port, &self.deployment),
                    revision_number: port.revision_number,
                };
                warn!(server.id = %server.id, port.id = %port.id, owner = ghost.owner.label(), "Event names ghost port {} of server {}; not attaching it", port.id, server.id);
                self.record_sighting(&ghost).await?;
            }
            return Ok(());
        };
        let observed = match port {
            Some(port) => self.observed_present(port_id, port).await?,
            None => Observed::Gone,
        };
        let observed = HashMap::from([(vif.port_id.clone(), observed)]);
        let (outcome, write) = self.cache_write(server.id, &stored, &vifs, &observed).await?;
        // A port found lost is marked in the cache's own compare-and-swap, so a
        // release recorded since the read (or any other change of the records)
        // makes the whole write a conflict: the mark never overwrites
        // `releasing`. And only while no operation holds the server, which may
        // be binding the port (invariant 18).
        let mut batch = vec![write];
        if !outcome.lost.is_empty() {
            batch.push(Change::RequireIdle { server_id: server.id });
            batch.extend(self.lost_changes(&WatchedServer::from(server), &vifs, &outcome.lost, self.clock.now()));
            self.hold_point(HoldPoint::EventLostMark).await;
        }
        match self.commit(batch).await {
            Ok(()) => {
                metrics::counter!("netcache_cache_writes_total", "source" => "event").increment(1);
                metrics::counter!("netcache_lost_vifs_total").increment(outcome.lost.len() as u64);
                Ok(())
            }
            // Changed since read: the writer that won has the newer state.
            Err(crate::Error::Store(e)) if e.is_conflict() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Neutron reports the port plugged: its cache entry becomes active, without
    /// asking Neutron (a burst of boots sends one event per port).
    async fn mark_active(&self, server: &Server, port_id: &PortId) -> Result<()> {
        for _ in 0..5 {
            let stored = self.store.cache(server.id).await?;
            let mut info = stored.info;
            let Some(entry) = info.0.iter_mut().find(|vif| vif.id == port_id.as_str() && !vif.active) else {
                return Ok(());
            };
            entry.active = true;
            let write = Change::WriteCache {
                server_id: server.id,
                info,
                expected_generation: stored.generation,
            };
            match self.store.commit(vec![write]).await {
                // Another writer came first: read again.
                Err(e) if e.is_conflict() => {}
                other => return Ok(other?),
            }
        }
        Ok(())
    }

    /// A tagless `network-changed`: the whole server, as one heal batch.
    async fn refresh_server(&self, server: &Server) -> Result<()> {
        let server = &WatchedServer::from(server);
        let caches = self.caches_of(&[server.id]).await?;
        let vifs = self.records_of(std::slice::from_ref(server)).await?;
        let observation = self.observe(std::slice::from_ref(server), &vifs, None).await?;
        let mut report = HealReport::default();
        if let Some(stored) = caches.get(&server.id) {
            self.heal_server(
                server,
                Stored::Text(stored),
                None,
                &vifs[&server.id],
                &observation,
                self.clock.now(),
                &mut report,
            )
            .await?;
        }
        for ghost in self.ghosts_of(server, &vifs[&server.id], &observation).await? {
            self.record_sighting(&ghost).await?;
        }
        Ok(())
    }

    /// Neutron says it deleted a port: if it is one of the server's VIFs and
    /// Neutron confirms the port is gone (or given to another device), it is lost.
    /// A bogus event for a live, bound port changes nothing.
    async fn vif_deleted(&self, server: &Server, port_id: &PortId) -> Result<()> {
        let stored = self.store.cache(server.id).await?;
        let vifs = self.store.vifs(server.id).await?;
        if !vifs.iter().any(|v| &v.port_id == port_id && v.is_attached()) {
            return Ok(());
        }
        let reason = match self.neutron.show_port(port_id).await {
            Err(e) if e.is_not_found() => LostReason::Gone,
            Err(e) => return Err(e.into()),
            Ok(port) if port.carries_device_id(&server.id.to_string()) => {
                warn!(server.id = %server.id, port.id = %port_id, "network-vif-deleted for port {port_id}, which Neutron still gives to server {}; ignored", server.id);
                return Ok(());
            }
            Ok(port) => LostReason::Reassigned {
                device_id: port.device_id,
            },
        };
        let observed = HashMap::from([(port_id.clone(), Observed::Gone)]);
        let lost = [LostVif {
            port_id: port_id.clone(),
            reason,
        }];
        let changes = self.lost_changes(&WatchedServer::from(server), &vifs, &lost, self.clock.now());
        let vifs_after: Vec<VifRecord> = vifs.iter().filter(|v| &v.port_id != port_id).cloned().collect();
        match self
            .commit_with_cache_at("event", server.id, &stored, &vifs_after, &observed, changes)
            .await
        {
            Ok(_) => {
                metrics::counter!("netcache_lost_vifs_total").increment(1);
                Ok(())
            }
            Err(crate::Error::Store(e)) if e.is_conflict() => Ok(()),
            Err(e) => Err(e),
        }
    }
}
