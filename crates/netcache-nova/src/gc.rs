//! GC of an existing Nova cloud's garbage, with the safety of netcache's own
//! GC: a finding is acted on only after two audits saw it, at least `grace`
//! apart, at one revision of its port ([`Sightings`]); right before, Nova's
//! records and the port are read again and judged again; the port is deleted
//! with `If-Match` on the judged revision; a ghost Nova shows is then reported
//! to Nova as `network-vif-deleted`, so Nova drops it as it would a port
//! Neutron deleted. Nothing else is ever changed.

use std::sync::{Arc, Mutex};

use chrono::{TimeDelta, Utc};
use netcache_domain::nova::{Finding, GcPlan, Sightings, audit_instance};
use serde::Serialize;
use tracing::{info, warn};

use crate::Result;
use crate::audit::{AuditReport, NovaAuditor, Progress};
use crate::events::{NovaEvents, VifDeleted};

/// What GC did with a finding it was ready to act on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum GcOutcome {
    /// Dry run: it would have acted.
    WouldAct,
    /// The port was deleted (and Nova told, where the plan says so).
    Deleted,
    /// The port was deleted, but Nova could not be told; its heal drops it.
    DeletedNovaNotTold { error: String },
    /// The port was already gone.
    Gone,
    /// The re-read found it no longer garbage, or changed: not touched.
    Skipped { why: String },
    /// An error: not touched, tried again at a later pass.
    Failed { error: String },
}

impl GcOutcome {
    fn label(&self) -> &'static str {
        match self {
            Self::WouldAct => "would_act",
            Self::Deleted => "deleted",
            Self::DeletedNovaNotTold { .. } => "deleted_nova_not_told",
            Self::Gone => "gone",
            Self::Skipped { .. } => "skipped",
            Self::Failed { .. } => "failed",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct GcAct {
    pub finding: Finding,
    #[serde(flatten)]
    pub outcome: GcOutcome,
}

#[derive(Clone, Debug, Serialize)]
pub struct GcReport {
    pub audit: AuditReport,
    /// The findings GC was ready to act on, and what it did.
    pub acted: Vec<GcAct>,
    /// Actionable findings seen, not yet twice `grace` apart.
    pub waiting: usize,
}

pub struct NovaGc {
    auditor: NovaAuditor,
    events: Arc<dyn NovaEvents>,
    sightings: Mutex<Sightings>,
}

fn skipped(why: impl Into<String>) -> GcOutcome {
    GcOutcome::Skipped { why: why.into() }
}

impl NovaGc {
    #[must_use]
    pub fn new(auditor: NovaAuditor, events: Arc<dyn NovaEvents>) -> Self {
        Self {
            auditor,
            events,
            sightings: Mutex::new(Sightings::default()),
        }
    }

    /// One pass: an audit, its sightings recorded, and the findings seen
    /// twice `grace` apart acted on (`apply`) or only listed.
    pub async fn pass(&self, apply: bool, progress: &(dyn Fn(&Progress<'_>) + Send + Sync)) -> Result<GcReport> {
        let audit = self.auditor.run(progress).await?;
        let now = Utc::now();
        let grace = TimeDelta::from_std(self.auditor.config().grace).unwrap_or(TimeDelta::minutes(10));
        let (ready, waiting) = {
            let mut sightings = self.sightings.lock().expect("sightings");
            sightings.record(&audit.findings, now);
            let ready: Vec<Finding> = audit
                .findings
                .iter()
                .filter(|f| sightings.ready(f, now, grace))
                .cloned()
                .collect();
            let waiting = sightings.len() - ready.len();
            (ready, waiting)
        };
        let mut acted = Vec::with_capacity(ready.len());
        for finding in ready {
            let outcome = if apply {
                self.act(&finding).await
            } else {
                GcOutcome::WouldAct
            };
            acted.push(GcAct { finding, outcome });
        }
        self.tell_nova(&mut acted).await;
        for act in &acted {
            metrics::counter!("netcache_nova_gc_total", "kind" => act.finding.kind.as_str(), "outcome" => act.outcome.label())
                .increment(1);
        }
        Ok(GcReport { audit, acted, waiting })
    }

    /// Reads the finding's instance and port again, judges them again, and
    /// deletes the port only if it is still the same garbage at the same revision.
    async fn act(&self, finding: &Finding) -> GcOutcome {
        let (Some(port_id), Some(revision)) = (&finding.port, finding.revision()) else {
            return skipped("no port to act on");
        };
        let fresh = match self.auditor.records().instance(&finding.instance).await {
            Ok(Some(records)) => records,
            Ok(None) => return skipped("Nova's records of the instance are gone"),
            Err(e) => return GcOutcome::Failed { error: e.to_string() },
        };
        let neutron = self.auditor.neutron();
        let port = match neutron.show_port(port_id).await {
            Ok(port) => port,
            Err(e) if e.is_not_found() => return GcOutcome::Gone,
            Err(e) => return GcOutcome::Failed { error: e.to_string() },
        };
        if port.device_id != finding.instance.as_str() {
            return skipped(format!("its device_id is now {:?}", port.device_id));
        }
        let again = audit_instance(&fresh, std::slice::from_ref(&port), Utc::now())
            .findings
            .into_iter()
            .find(|f| f.port.as_ref() == Some(port_id));
        match again {
            Some(f) if f.kind == finding.kind && f.revision() == Some(revision) => {}
            Some(f) if f.kind == finding.kind => {
                return skipped(format!("its revision is now {:?}", f.revision()));
            }
            Some(f) => return skipped(format!("it is now {}: {}", f.kind.as_str(), f.why)),
            None => return skipped("Nova's records now account for it"),
        }
        match neutron.delete_port(port_id, Some(revision)).await {
            Ok(()) => {
                info!(port = %port_id, instance = %finding.instance, kind = finding.kind.as_str(), "Deleted {port_id}: {}", finding.why);
                GcOutcome::Deleted
            }
            Err(e) if e.is_not_found() => GcOutcome::Gone,
            Err(e) if e.status() == Some(412) => skipped("it changed after the re-read (412 on If-Match)"),
            Err(e) => GcOutcome::Failed { error: e.to_string() },
        }
    }

    /// Tells Nova about the ghosts it shows that were deleted, in one request.
    async fn tell_nova(&self, acted: &mut [GcAct]) {
        let told: Vec<VifDeleted> = acted
            .iter()
            .filter(|a| a.outcome == GcOutcome::Deleted && a.finding.plan == GcPlan::DeletePortAndTellNova)
            .filter_map(|a| {
                Some(VifDeleted {
                    instance: a.finding.instance.clone(),
                    port: a.finding.port.clone()?,
                })
            })
            .collect();
        if let Err(e) = self.events.vifs_deleted(&told).await {
            warn!(error = %e, "Could not tell Nova about {} deleted ports: {e}", told.len());
            for act in acted
                .iter_mut()
                .filter(|a| a.outcome == GcOutcome::Deleted && a.finding.plan == GcPlan::DeletePortAndTellNova)
            {
                act.outcome = GcOutcome::DeletedNovaNotTold { error: e.to_string() };
            }
        }
    }
}
