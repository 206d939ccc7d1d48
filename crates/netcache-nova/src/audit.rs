//! The audit: every instance of every cell, live and recently deleted, in
//! keyset pages; each page's ports fetched in one Neutron list by `device_id`;
//! each instance judged by `netcache_domain::nova::audit_instance`. Memory
//! holds one page and the findings.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::neutron::Port;
use netcache_domain::nova::{Finding, FindingKind, InstanceRecords, audit_instance};
use netcache_neutron::{NeutronApi, PortFilter};
use serde::Serialize;
use tracing::info;

use crate::{NovaConfig, NovaRecords, Result, Which};

/// What one audit found.
#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    pub at: DateTime<Utc>,
    pub findings: Vec<Finding>,
    pub totals: AuditTotals,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct AuditTotals {
    /// Live instances judged.
    pub instances: u64,
    /// Deleted instances looked at for leaked ports.
    pub deleted_instances: u64,
    /// Instances Nova was working on, left for the next audit.
    pub busy: u64,
    /// Neutron ports carrying a looked-at instance's `device_id`.
    pub ports: u64,
    /// Pages read: one Neutron port list each.
    pub pages: u64,
    /// Findings by kind (every kind, zeros included).
    pub findings: BTreeMap<&'static str, u64>,
}

impl AuditReport {
    /// Whether anything but `undecided` was found (the audit exits 2).
    #[must_use]
    pub fn drift(&self) -> bool {
        self.findings.iter().any(|f| f.kind.is_drift())
    }

    /// Sets the `netcache_nova_*` gauges an operator alerts on.
    pub fn record_metrics(&self) {
        for (kind, count) in &self.totals.findings {
            metrics::gauge!("netcache_nova_findings", "kind" => *kind).set(*count as f64);
        }
        metrics::gauge!("netcache_nova_instances_audited").set(self.totals.instances as f64);
        metrics::gauge!("netcache_nova_audit_last_success_timestamp_seconds").set(self.at.timestamp() as f64);
    }
}

/// How far an audit has come, for a progress bar.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    pub cell: &'a str,
    pub deleted: bool,
    /// Instances looked at so far, in all cells.
    pub instances: u64,
}

pub struct NovaAuditor {
    records: Arc<dyn NovaRecords>,
    neutron: Arc<dyn NeutronApi>,
    config: NovaConfig,
}

impl NovaAuditor {
    #[must_use]
    pub fn new(records: Arc<dyn NovaRecords>, neutron: Arc<dyn NeutronApi>, config: NovaConfig) -> Self {
        Self {
            records,
            neutron,
            config,
        }
    }

    pub(crate) fn records(&self) -> &Arc<dyn NovaRecords> {
        &self.records
    }

    pub(crate) fn neutron(&self) -> &Arc<dyn NeutronApi> {
        &self.neutron
    }

    pub(crate) fn config(&self) -> &NovaConfig {
        &self.config
    }

    /// Audits every cell. An error of Nova's database or of Neutron ends it:
    /// an audit with a hole would call a cloud clean that is not.
    pub async fn run(&self, progress: &(dyn Fn(&Progress<'_>) + Send + Sync)) -> Result<AuditReport> {
        let now = Utc::now();
        let lookback = TimeDelta::from_std(self.config.deleted_lookback).unwrap_or(TimeDelta::days(30));
        let mut report = AuditReport {
            at: now,
            findings: Vec::new(),
            totals: AuditTotals {
                findings: FindingKind::ALL.iter().map(|k| (k.as_str(), 0)).collect(),
                ..AuditTotals::default()
            },
        };
        for cell in self.records.cells() {
            for which in [Which::Live, Which::DeletedSince(now - lookback)] {
                self.audit_cell(&cell, which, now, &mut report, progress).await?;
            }
        }
        for finding in &report.findings {
            *report.totals.findings.entry(finding.kind.as_str()).or_default() += 1;
        }
        info!(
            instances = report.totals.instances,
            deleted = report.totals.deleted_instances,
            findings = report.findings.len(),
            pages = report.totals.pages,
            "Nova audit done"
        );
        Ok(report)
    }

    async fn audit_cell(
        &self,
        cell: &str,
        which: Which,
        now: DateTime<Utc>,
        report: &mut AuditReport,
        progress: &(dyn Fn(&Progress<'_>) + Send + Sync),
    ) -> Result<()> {
        let mut after = None;
        loop {
            let page = self
                .records
                .instances(cell, which, after.as_ref(), self.config.page_size)
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.instance.uuid.clone());
            let mut ports = self.ports_of(&page, report).await?;
            for records in &page {
                let mine = ports.remove(records.instance.uuid.as_str()).unwrap_or_default();
                let audit = audit_instance(records, &mine, now);
                if records.instance.deleted {
                    report.totals.deleted_instances += 1;
                } else {
                    report.totals.instances += 1;
                }
                report.totals.busy += u64::from(audit.busy);
                report.findings.extend(audit.findings);
            }
            progress(&Progress {
                cell,
                deleted: which != Which::Live,
                instances: report.totals.instances + report.totals.deleted_instances,
            });
            if page.len() < self.config.page_size {
                break;
            }
        }
        Ok(())
    }

    /// The ports carrying the page's instances' `device_id`s, by `device_id`.
    async fn ports_of(&self, page: &[InstanceRecords], report: &mut AuditReport) -> Result<HashMap<String, Vec<Port>>> {
        let filter = PortFilter {
            device_ids: page.iter().map(|r| r.instance.uuid.to_string()).collect(),
            ..PortFilter::default()
        };
        report.totals.pages += 1;
        let mut by_device: HashMap<String, Vec<Port>> = HashMap::new();
        for port in self.neutron.list_ports(&filter).await? {
            report.totals.ports += 1;
            by_device.entry(port.device_id.clone()).or_default().push(port);
        }
        Ok(by_device)
    }
}
