//! The drift report: per server, what the cache shows against what Neutron
//! holds, ghosts, lost ports and unresolved intents. Read-only: it writes
//! nothing, so it can run beside a live service.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use netcache_domain::cache::{self, CacheInputs, LostReason};
use netcache_domain::ghost::{self, GhostOwner};
use netcache_domain::intent::IntentState;
use netcache_domain::operation::OperationKind;
use netcache_domain::vif::{VifRecord, VifState};
use netcache_domain::{IntentId, PortId, ServerId};

use crate::attachment::heal::ProjectFloatingIps;
use crate::{Compute, Result};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuditReport {
    pub servers: Vec<ServerAudit>,
    /// Operations running longer than `operations.stuck_after`, or whose owner's
    /// lease ran out (a dead process's, not yet taken over).
    pub operations: Vec<OperationAudit>,
    /// VIF records still `attached` on deleted servers: leaked ports.
    pub leaked_vifs: Vec<(ServerId, PortId)>,
    pub totals: AuditTotals,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OperationAudit {
    pub server_id: ServerId,
    pub kind: &'static str,
    pub owner: String,
    pub started: DateTime<Utc>,
    /// On the database's clock, which the lease is judged by.
    pub lease_until: DateTime<Utc>,
    /// The step it last recorded, its failed attempts and the last one's error.
    pub step: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    /// Older than the threshold.
    pub stuck: bool,
    /// Its owner's lease ran out.
    pub orphaned: bool,
}

impl AuditReport {
    /// No drift: what netcache shows is what Neutron holds, nothing is pending.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.totals.drift() == 0
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditTotals {
    pub servers: usize,
    pub ghosts_ours: usize,
    pub ghosts_foreign: usize,
    /// Ghosts that carry the id of a deleted server (included in the two above).
    pub deleted_server_ghosts: usize,
    /// Attached VIFs whose port is gone or reassigned (not yet healed).
    pub lost: usize,
    /// Caches that differ from a fresh rebuild (not yet healed).
    pub stale_caches: usize,
    pub pending_intents: usize,
    /// Ports kept `releasing` after a failed delete or unbind.
    pub releasing: usize,
    pub stuck_operations: usize,
    pub orphaned_operations: usize,
    pub leaked_vifs: usize,
}

impl AuditTotals {
    #[must_use]
    pub fn drift(&self) -> usize {
        self.ghosts_ours
            + self.ghosts_foreign
            + self.lost
            + self.stale_caches
            + self.pending_intents
            + self.releasing
            + self.stuck_operations
            + self.orphaned_operations
            + self.leaked_vifs
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerAudit {
    pub id: ServerId,
    pub name: String,
    pub deleted: bool,
    /// Ports in the stored cache, in order.
    pub cached_ports: Vec<String>,
    /// Ports Neutron lists with the server's device_id.
    pub neutron_ports: Vec<PortId>,
    pub stale_cache: bool,
    pub ghosts: Vec<GhostAudit>,
    pub lost: Vec<LostAudit>,
    /// VIF records already marked lost by a heal (history, not drift).
    pub recorded_lost: Vec<PortId>,
    pub releasing: Vec<PortId>,
    pub pending_intents: Vec<IntentId>,
    pub abandoned_intents: Vec<IntentId>,
}

impl ServerAudit {
    #[must_use]
    pub fn has_drift(&self) -> bool {
        self.stale_cache
            || !self.ghosts.is_empty()
            || !self.lost.is_empty()
            || !self.pending_intents.is_empty()
            || !self.releasing.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GhostAudit {
    pub port_id: PortId,
    /// `ours` or `foreign`.
    pub owner: &'static str,
    pub intent: Option<IntentId>,
    pub first_seen: Option<DateTime<Utc>>,
    pub times_seen: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostAudit {
    pub port_id: PortId,
    pub reason: String,
}

/// The audit of recorded attachments against Neutron.
#[async_trait]
pub trait AuditOps: Send + Sync {
    /// Audits every watched server; `progress(done, total)` is called per batch.
    async fn audit(&self, progress: &(dyn Fn(usize, usize) + Send + Sync)) -> Result<AuditReport>;
}

#[async_trait]
impl AuditOps for Arc<Compute> {
    async fn audit(&self, progress: &(dyn Fn(usize, usize) + Send + Sync)) -> Result<AuditReport> {
        let now = self.clock.now();
        let servers = self.watched_servers(now).await?;
        let sightings: HashMap<PortId, _> = self
            .store
            .ghost_sightings()
            .await?
            .into_iter()
            .map(|s| (s.port_id.clone(), s))
            .collect();
        // The intents the report names, of every server at once, not a read per server.
        let mut pending = self.intent_ids_by_server(IntentState::Pending).await?;
        let mut abandoned = self.intent_ids_by_server(IntentState::Abandoned).await?;
        // As heal: the floating IPs of the servers' projects, once.
        let mut floating_ips = ProjectFloatingIps::default();
        self.list_floating_ips_of(&servers, &mut floating_ips).await?;
        let mut report = AuditReport::default();
        let total = servers.len();
        progress(0, total);
        for batch in servers.chunks(self.config.heal.batch_size.max(1)) {
            let ids: Vec<ServerId> = batch.iter().map(|s| s.id).collect();
            let caches = self.store.caches_of(&ids).await?;
            let vifs = self.records_of(batch).await?;
            let observation = self.observe(batch, &vifs, Some(&floating_ips.by_port)).await?;
            for server in batch {
                let records = &vifs[&server.id];
                let stored = caches
                    .get(&server.id)
                    .ok_or_else(|| netcache_store::Error::NotFound(format!("cache of server {}", server.id)))?;
                let device_id = server.id.to_string();
                let observed = observation.observed(records);
                let fresh = cache::build_network_info(&CacheInputs {
                    server_id: server.id,
                    vifs: records,
                    previous: &stored.info,
                    observed: &observed,
                    networks: &observation.topology.networks,
                    subnets: &observation.topology.subnets,
                    options: &self.config.cache,
                });
                let ghosts: Vec<GhostAudit> =
                    ghost::classify_ports(&device_id, records, observation.ports_of(&device_id), &self.deployment)
                        .into_iter()
                        .map(|g| {
                            let sighting = sightings.get(&g.port_id);
                            GhostAudit {
                                owner: g.owner.label(),
                                intent: match g.owner {
                                    GhostOwner::Ours { intent } => intent,
                                    GhostOwner::Foreign => None,
                                },
                                first_seen: sighting.map(|s| s.first_seen),
                                times_seen: sighting.map_or(0, |s| s.times_seen),
                                port_id: g.port_id,
                            }
                        })
                        .collect();
                let audit = ServerAudit {
                    id: server.id,
                    name: server.name.clone(),
                    deleted: server.is_deleted(),
                    cached_ports: stored.info.port_ids().map(str::to_owned).collect(),
                    neutron_ports: observation
                        .ports_of(&device_id)
                        .into_iter()
                        .map(|p| p.id.clone())
                        .collect(),
                    stale_cache: !server.is_deleted() && fresh.info != stored.info,
                    lost: fresh
                        .lost
                        .iter()
                        .map(|l| LostAudit {
                            port_id: l.port_id.clone(),
                            reason: match &l.reason {
                                LostReason::Gone => "gone from Neutron".to_owned(),
                                LostReason::Reassigned { device_id } => format!("now on device {device_id:?}"),
                            },
                        })
                        .collect(),
                    recorded_lost: records
                        .iter()
                        .filter(|v| v.state == VifState::Lost)
                        .map(|v| v.port_id.clone())
                        .collect(),
                    releasing: records
                        .iter()
                        .filter(|v| v.state == VifState::Releasing)
                        .map(|v| v.port_id.clone())
                        .collect(),
                    pending_intents: pending.remove(&server.id).unwrap_or_default(),
                    abandoned_intents: abandoned.remove(&server.id).unwrap_or_default(),
                    ghosts,
                };
                let t = &mut report.totals;
                t.servers += 1;
                for g in &audit.ghosts {
                    if g.owner == "ours" {
                        t.ghosts_ours += 1;
                    } else {
                        t.ghosts_foreign += 1;
                    }
                }
                if audit.deleted {
                    t.deleted_server_ghosts += audit.ghosts.len();
                }
                t.lost += audit.lost.len();
                t.stale_caches += usize::from(audit.stale_cache && audit.lost.is_empty());
                t.pending_intents += audit.pending_intents.len();
                t.releasing += audit.releasing.len();
                report.servers.push(audit);
            }
            progress(report.servers.len(), total);
        }
        // Pending intents of servers no longer watched.
        report.totals.pending_intents += pending.values().map(Vec::len).sum::<usize>();
        let stuck_after =
            chrono::TimeDelta::from_std(self.config.operations.stuck_after).unwrap_or(chrono::TimeDelta::MAX);
        let database_now = self.store.database_now().await?;
        for op in self.store.operations().await? {
            let audit = OperationAudit {
                server_id: op.server_id,
                kind: op.kind().as_str(),
                owner: op.owner.label(),
                started: op.created_at,
                lease_until: op.lease_until,
                stuck: now - op.created_at >= stuck_after,
                orphaned: op.lease_until <= database_now,
                step: op.step,
                attempts: op.attempts,
                last_error: op.last_error,
            };
            if audit.stuck || audit.orphaned || audit.attempts > 0 {
                report.totals.stuck_operations += usize::from(audit.stuck);
                report.totals.orphaned_operations += usize::from(audit.orphaned);
                report.operations.push(audit);
            }
        }
        report.leaked_vifs = self
            .store
            .vifs_of_deleted_servers()
            .await?
            .into_iter()
            .filter(VifRecord::is_attached)
            .map(|v| (v.server_id, v.port_id))
            .collect();
        report.totals.leaked_vifs = report.leaked_vifs.len();
        Ok(report)
    }
}

impl Compute {
    /// Sets the gauges that summarise the store (intents by state, ghosts by
    /// owner, operations by lease): what `/metrics` refreshes on each scrape.
    pub async fn refresh_gauges(&self) -> Result<()> {
        let counts: HashMap<IntentState, i64> = self.store.intent_counts().await?.into_iter().collect();
        for state in [
            IntentState::Pending,
            IntentState::Created,
            IntentState::Failed,
            IntentState::Abandoned,
        ] {
            let n = counts.get(&state).copied().unwrap_or(0);
            metrics::gauge!("netcache_intents", "state" => state.as_str()).set(n as f64);
        }
        let sightings = self.store.ghost_sightings().await?;
        let ours = sightings
            .iter()
            .filter(|s| matches!(s.owner, GhostOwner::Ours { .. }))
            .count();
        metrics::gauge!("netcache_ghosts", "owner" => "ours").set(ours as f64);
        metrics::gauge!("netcache_ghosts", "owner" => "foreign").set((sightings.len() - ours) as f64);
        let now = self.store.database_now().await?;
        let mut operations: HashMap<(OperationKind, &'static str), usize> = HashMap::new();
        let mut failing: HashMap<OperationKind, usize> = HashMap::new();
        for op in self.store.operations().await? {
            let lease = if op.lease_until > now { "live" } else { "expired" };
            *operations.entry((op.kind(), lease)).or_default() += 1;
            if op.attempts > 0 {
                *failing.entry(op.kind()).or_default() += 1;
            }
        }
        for &kind in OperationKind::ALL {
            for lease in ["live", "expired"] {
                let n = operations.get(&(kind, lease)).copied().unwrap_or(0);
                metrics::gauge!("netcache_operations", "kind" => kind.as_str(), "lease" => lease).set(n as f64);
            }
            let n = failing.get(&kind).copied().unwrap_or(0);
            metrics::gauge!("netcache_operations_failing", "kind" => kind.as_str()).set(n as f64);
        }
        Ok(())
    }

    /// The ids of every intent in `state`, by server, oldest first: one read.
    async fn intent_ids_by_server(&self, state: IntentState) -> Result<HashMap<ServerId, Vec<IntentId>>> {
        let mut ids: HashMap<ServerId, Vec<IntentId>> = HashMap::new();
        for intent in self.store.intents_in_state(state).await? {
            ids.entry(intent.server_id).or_default().push(intent.id);
        }
        Ok(ids)
    }
}
