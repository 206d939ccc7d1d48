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

use std::sync::Arc;

use netcache_domain::ServerId;
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::vif::VifState;

use crate::runner::singleton::Lease;
use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::{Compute, RequestContext, Result, new_request_id};

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
    /// Ghosts and servers this pass could not deal with (a Neutron or store
    /// error), each logged with its id; the next pass tries them again.
    pub failures: usize,
    /// No pass ran: another process holds the GC lease.
    pub held_elsewhere: bool,
}

/// GC passes of all processes take turns: one deployment-wide lease.
const GC_LEASE: &str = "gc";

/// A release GC started; at the cap it is left to GC's next pass (its VIF
/// records stay `releasing`).
pub(crate) struct ReleaseStep;

#[async_trait::async_trait]
impl OperationStep for ReleaseStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::LeaveToGc
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        cx.compute.run_release(op.server_id).await.map(|()| Next::Done)
    }
}

impl Compute {
    /// One GC pass, unless another process is running one (then an empty
    /// report that says so).
    pub async fn gc(self: &Arc<Self>) -> Result<GcReport> {
        match self.under_lease(GC_LEASE, |lease| self.gc_pass(lease)).await? {
            Some(report) => Ok(report),
            None => {
                info!("Another process is running a GC pass; skipped");
                Ok(GcReport {
                    held_elsewhere: true,
                    ..GcReport::default()
                })
            }
        }
    }

    async fn gc_pass(self: &Arc<Self>, lease: Arc<Lease>) -> Result<GcReport> {
        let dry_run = self.config.gc.dry_run;
        self.pass_crash_point(crate::CrashPoint::GcPassStarted)?;
        let mut report = GcReport::default();
        if !dry_run {
            self.release_leftovers(&lease, &mut report).await?;
        }
        for sighting in self.store.ghost_sightings().await? {
            lease.renew().await?;
            let outcome = match self.collect(&sighting, dry_run).await {
                Ok(outcome) => outcome,
                Err(e) => {
                    failed(&mut report, "ghost");
                    warn!(
                        port.id = %sighting.port_id, device_id = %sighting.device_id, error = %e,
                        "GC could not collect ghost port {}: {e}; the next pass tries again", sighting.port_id
                    );
                    continue;
                }
            };
            match outcome {
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
            released = report.released, skipped = ?report.skipped, failures = report.failures,
            "GC pass: {} deleted, {} unbound, {} releases retried, {} failures{}",
            report.deleted.len(), report.unbound.len(), report.released, report.failures,
            if dry_run { " (dry run)" } else { "" }
        );
        Ok(report)
    }

    /// Releases that failed earlier, and intents a dead process left pending, are
    /// finished by a `release` operation on their server, unless another operation
    /// is working on it (that one does it). Counts the releases done and the
    /// intents resolved in `report`.
    async fn release_leftovers(self: &Arc<Self>, lease: &Lease, report: &mut GcReport) -> Result<()> {
        let releasing = self.store.releasing_vifs().await?;
        let pending = self.store.pending_intents().await?;
        let mut servers: Vec<ServerId> = releasing
            .iter()
            .map(|v| v.server_id)
            .chain(pending.iter().map(|i| i.server_id))
            .collect();
        servers.sort();
        servers.dedup();
        let busy = self.busy_servers().await?;
        let ctx = RequestContext::system("netcache");
        for server_id in servers.into_iter().filter(|s| !busy.contains(s)) {
            lease.renew().await?;
            let op = self.new_operation(server_id, OperationParams::Release, &ctx);
            match self.store.commit(vec![self.insert_operation(&op)]).await {
                Ok(()) => self.run_inline(op).await,
                // Another operation started meanwhile; it does the work.
                Err(e) if e.is_conflict() => {}
                Err(e) => {
                    failed(report, "release");
                    warn!(
                        server.id = %server_id, error = %e,
                        "GC could not start the release of server {server_id}: {e}; the next pass tries again"
                    );
                }
            }
        }
        let still_releasing = self.store.releasing_vifs().await?;
        report.released = releasing
            .iter()
            .filter(|v| !still_releasing.iter().any(|s| s.port_id == v.port_id))
            .count();
        let still_pending = self.store.pending_intents().await?;
        report.intents_resolved = pending
            .iter()
            .filter(|i| !still_pending.iter().any(|s| s.id == i.id))
            .count();
        metrics::counter!("netcache_gc_actions_total", "action" => "release", "reason" => "retry")
            .increment(report.released as u64);
        Ok(())
    }

    /// The `release` operation: every `releasing` VIF of the server released
    /// (its pending intents were resolved when the operation started).
    async fn run_release(&self, server_id: ServerId) -> Result<()> {
        for vif in self.store.vifs(server_id).await? {
            if vif.state == VifState::Releasing {
                self.release_vif(&vif).await?;
            }
        }
        Ok(())
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
        let guard = self.revision_guard(live.revision_number).await?;
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
        self.commit(vec![Change::DeleteGhostSighting {
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

/// Counts a ghost or a server a pass could not deal with.
fn failed(report: &mut GcReport, object: &'static str) {
    report.failures += 1;
    metrics::counter!("netcache_gc_failures_total", "object" => object).increment(1);
}
