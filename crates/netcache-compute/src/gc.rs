//! The garbage collector: deletes ghosts that are provably netcache's own garbage
//! (the rules are `netcache_domain::gc`), unbinds foreign ghosts only if told to,
//! and retries releases that failed earlier.

use std::collections::BTreeMap;

use netcache_domain::PortId;
use netcache_domain::action::{Action, ActionEvent};
use netcache_domain::change::Change;
use netcache_domain::gc::{self, GcAction, GhostFacts, SkipReason};
use netcache_domain::ghost::{GhostOwner, GhostSighting};
use netcache_domain::neutron::Port;
use netcache_neutron::PortUpdate;
use tracing::{info, warn};

use crate::{Compute, Result, new_request_id};

/// What one GC pass did (or, dry, would do).
#[derive(Clone, Debug, Default)]
pub struct GcReport {
    pub deleted: Vec<PortId>,
    pub unbound: Vec<PortId>,
    /// Dry run: what would have been deleted or unbound.
    pub would_delete: Vec<PortId>,
    pub would_unbind: Vec<PortId>,
    pub skipped: BTreeMap<&'static str, usize>,
    /// Releases (deletes/unbinds of detached ports) retried and done.
    pub released: usize,
    /// Pending intents left by a crashed process, resolved by their marker.
    pub intents_resolved: usize,
}

impl Compute {
    pub async fn gc(&self) -> Result<GcReport> {
        let dry_run = self.config.gc.dry_run;
        let mut report = GcReport::default();
        if !dry_run {
            for vif in self.store.releasing_vifs().await? {
                if self.release_vif(&vif).await? {
                    report.released += 1;
                    metrics::counter!("netcache_gc_actions_total", "action" => "release", "reason" => "retry")
                        .increment(1);
                }
            }
        }
        if !dry_run {
            report.intents_resolved = self.resolve_stale_intents().await?;
        }
        for sighting in self.store.ghost_sightings().await? {
            match self.collect(&sighting, dry_run).await? {
                Ok(action) => {
                    let (list, label) = match (action, dry_run) {
                        (GcAction::Delete, false) => (&mut report.deleted, "delete"),
                        (GcAction::Unbind, false) => (&mut report.unbound, "unbind"),
                        (GcAction::Delete, true) => (&mut report.would_delete, "would_delete"),
                        (GcAction::Unbind, true) => (&mut report.would_unbind, "would_unbind"),
                    };
                    list.push(sighting.port_id.clone());
                    metrics::counter!("netcache_gc_actions_total", "action" => label, "reason" => "ghost").increment(1);
                }
                Err(reason) => {
                    *report.skipped.entry(reason.label()).or_default() += 1;
                    metrics::counter!("netcache_gc_actions_total", "action" => "skip", "reason" => reason.label())
                        .increment(1);
                }
            }
        }
        info!(
            deleted = report.deleted.len(), unbound = report.unbound.len(),
            would_delete = report.would_delete.len(), would_unbind = report.would_unbind.len(),
            released = report.released, skipped = ?report.skipped,
            "GC pass: {} deleted, {} unbound, {} releases retried{}",
            report.deleted.len(), report.unbound.len(), report.released, if dry_run { " (dry run)" } else { "" }
        );
        Ok(report)
    }

    /// Intents pending for longer than the grace period, of servers no build is
    /// working on, were left by a process that died (possibly on another host):
    /// they are resolved as at start-up.
    async fn resolve_stale_intents(&self) -> Result<usize> {
        let now = self.clock.now();
        let mut resolved = 0;
        for intent in self.store.pending_intents().await? {
            if now - intent.created_at < self.config.gc.policy.grace {
                continue;
            }
            let building = self
                .store
                .server(intent.server_id)
                .await?
                .is_some_and(|s| s.vm_state == netcache_domain::server::VmState::Building);
            if building {
                continue;
            }
            self.recover_intent(&intent).await?;
            resolved += 1;
        }
        Ok(resolved)
    }

    /// Judges one ghost, re-reads it live, and acts. The outer `Result` is for
    /// errors; the inner one says what was done or why nothing was.
    async fn collect(&self, sighting: &GhostSighting, dry_run: bool) -> Result<Result<GcAction, SkipReason>> {
        let intent_state = match &sighting.owner {
            GhostOwner::Ours { intent: Some(id) } => self.store.intent(*id).await?.map(|i| i.state),
            _ => None,
        };
        let facts = GhostFacts {
            sighting,
            intent_state,
            in_vif_records: self.store.vif_by_port(&sighting.port_id).await?.is_some(),
        };
        let action = match gc::judge(&facts, self.clock.now(), &self.config.gc.policy) {
            Ok(action) => action,
            Err(reason) => return Ok(Err(reason)),
        };
        let live = match self.neutron.show_port(&sighting.port_id).await {
            Ok(port) => Some(port),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        if let Err(reason) = gc::recheck(sighting, live.as_ref(), &self.deployment) {
            if reason == SkipReason::Gone && !dry_run {
                self.forget(sighting).await?;
            }
            return Ok(Err(reason));
        }
        let live = live.expect("recheck passed, so the port exists");
        if dry_run {
            info!(port.id = %live.id, action = ?action, "GC would {action:?} ghost port {}", live.id);
            return Ok(Ok(action));
        }
        let guard = self.revision_guard(live.revision_number);
        let result = match action {
            GcAction::Delete => self.neutron.delete_port(&live.id, guard).await,
            GcAction::Unbind => self
                .neutron
                .update_port(&live.id, &PortUpdate::unbind(), guard)
                .await
                .map(|_| ()),
        };
        match result {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) if e.status() == Some(412) => {
                warn!(port.id = %live.id, "Ghost port {} changed before GC could act; skipped", live.id);
                return Ok(Err(SkipReason::Changed));
            }
            Err(e) => return Err(e.into()),
        }
        self.forget(sighting).await?;
        self.log_gc_action(sighting, &live, action).await?;
        info!(port.id = %live.id, device_id = %live.device_id, action = ?action, "GC {action:?} ghost port {}", live.id);
        Ok(Ok(action))
    }

    async fn forget(&self, sighting: &GhostSighting) -> Result<()> {
        self.store
            .commit(vec![Change::DeleteGhostSighting {
                port_id: sighting.port_id.clone(),
            }])
            .await?;
        Ok(())
    }

    /// Records the action in the log of the server whose id the ghost carried.
    async fn log_gc_action(&self, sighting: &GhostSighting, port: &Port, action: GcAction) -> Result<()> {
        let Some(server) = (match sighting.device_id.parse() {
            Ok(id) => self.store.server(id).await?,
            Err(_) => None,
        }) else {
            return Ok(());
        };
        let now = self.clock.now();
        let request_id = new_request_id();
        let verb = match action {
            GcAction::Delete => "netcache_gc_delete_port",
            GcAction::Unbind => "netcache_gc_unbind_port",
        };
        self.store
            .commit(vec![
                Change::StartAction(Action {
                    server_id: server.id,
                    request_id: request_id.clone(),
                    action: "netcache_gc".to_owned(),
                    project_id: server.project_id.to_string(),
                    user_id: "netcache".to_owned(),
                    start_time: now,
                    message: None,
                    events: vec![],
                }),
                Change::AddActionEvent {
                    server_id: server.id,
                    request_id,
                    event: ActionEvent::finished(verb, now, true, Some(format!("ghost port {}", port.id)), None),
                },
            ])
            .await?;
        Ok(())
    }
}
