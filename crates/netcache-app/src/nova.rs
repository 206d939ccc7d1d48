//! `netcache nova audit|gc|watch`: netcache for an existing Nova cloud. The
//! audit and GC are `netcache-nova`'s; this wires them to the settings and
//! prints what they found. Nova's databases are read only; Neutron and Nova are
//! changed only through their APIs, and only by `gc --apply` and `watch`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use chrono::Utc;
use indicatif::{ProgressBar, ProgressStyle};
use netcache_domain::nova::Finding;
use netcache_neutron::{ClientConfig, HttpNeutron, http_client, keystone_tokens};
use netcache_nova::{
    AuditReport, GcReport, HttpNovaEvents, MysqlNova, NovaAuditor, NovaEndpoint, NovaEvents, NovaGc, NovaRecords,
};
use serde_json::json;
use tracing::{error, info};
use url::Url;

use crate::app::{neutron_client_config, offline_neutron_url};
use crate::client::{Progress, print_table};
use crate::ops::{AUDIT_CLEAN, AUDIT_DRIFT};
use crate::settings::Settings;
use crate::settings::redact;

/// Nova's records, from the listed cell databases or the API database's cells.
async fn records(settings: &Settings) -> anyhow::Result<Arc<dyn NovaRecords>> {
    let nova = &settings.nova;
    let records = if nova.database_urls.is_empty() {
        let Some(api) = &nova.api_database_url else {
            bail!(
                "invalid configuration: netcache nova needs nova.database_urls (the cell databases) or nova.api_database_url"
            );
        };
        MysqlNova::from_api_database(api)
            .await
            .with_context(|| format!("cannot read the cells of Nova's API database {}", redact::url(api)))?
    } else {
        let cells = nova
            .database_urls
            .iter()
            .map(|url| (cell_name(url), url.clone()))
            .collect();
        MysqlNova::connect(cells)
            .await
            .context("cannot open Nova's cell databases")?
    };
    Ok(Arc::new(records))
}

/// A cell named by its database (`nova_cell1` of `mysql://…/nova_cell1`).
fn cell_name(url: &str) -> String {
    Url::parse(url)
        .ok()
        .and_then(|u| u.path_segments()?.next_back().map(str::to_owned))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| redact::url(url))
}

fn auditor(settings: &Settings, config: ClientConfig, records: Arc<dyn NovaRecords>) -> anyhow::Result<NovaAuditor> {
    let neutron = HttpNeutron::new(config)?;
    Ok(NovaAuditor::new(records, Arc::new(neutron), settings.nova.config()))
}

/// Nova's external events API: the catalog's `compute` endpoint with the
/// Neutron client's Keystone credentials (`config`), or `nova.api_url`.
fn events(settings: &Settings, config: &ClientConfig) -> anyhow::Result<Arc<dyn NovaEvents>> {
    let api_url = settings
        .nova
        .api_url
        .as_deref()
        .map(|u| Url::parse(u).with_context(|| format!("invalid configuration: nova.api_url {u:?} is not a URL")))
        .transpose()?;
    let endpoint = match keystone_tokens(config, "compute", api_url.clone())? {
        Some(tokens) => NovaEndpoint::Keystone(tokens),
        None => NovaEndpoint::Static(api_url.context(
            "invalid configuration: without Keystone credentials ([neutron] auth_url…), nova.api_url is required",
        )?),
    };
    Ok(Arc::new(HttpNovaEvents::new(http_client(config)?, endpoint)))
}

/// GC over Nova's records, Neutron and Nova's events API, from one Neutron
/// client configuration.
async fn nova_gc(settings: &Settings) -> anyhow::Result<NovaGc> {
    let config = neutron_client_config(settings, &offline_neutron_url(settings))?;
    let events = events(settings, &config)?;
    Ok(NovaGc::new(
        auditor(settings, config, records(settings).await?)?,
        events,
    ))
}

/// A spinner for a person at a terminal.
fn progress_bar(progress: Progress) -> Option<ProgressBar> {
    (progress == Progress::Shown).then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        bar
    })
}

fn show_progress(bar: Option<&ProgressBar>) -> impl Fn(&netcache_nova::Progress<'_>) + Send + Sync + '_ {
    move |p| {
        if let Some(bar) = bar {
            let what = if p.deleted { "deleted instances" } else { "instances" };
            bar.set_message(format!("{} instances audited ({what} of {})", p.instances, p.cell));
        }
    }
}

/// A finding as JSON: its fields, and what GC would do in words.
fn finding_json(finding: &Finding) -> serde_json::Value {
    let mut value = serde_json::to_value(finding).unwrap_or_default();
    value["gc"] = json!(finding.plan.describe());
    value
}

fn audit_json(report: &AuditReport) -> serde_json::Value {
    json!({
        "at": report.at,
        "findings": report.findings.iter().map(finding_json).collect::<Vec<_>>(),
        "totals": report.totals,
    })
}

fn print_findings(report: &AuditReport) {
    let now = Utc::now();
    let rows: Vec<Vec<String>> = report
        .findings
        .iter()
        .map(|f| {
            let facts = f.port_facts.as_ref();
            vec![
                f.kind.as_str().to_owned(),
                f.instance.to_string(),
                f.port.as_ref().map(ToString::to_string).unwrap_or_default(),
                facts.map_or_else(|| "gone".to_owned(), |p| p.status.clone()),
                facts
                    .map(|p| {
                        p.addresses
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .unwrap_or_default(),
                facts
                    .and_then(|p| p.created_at)
                    .map(|t| format!("{}s", (now - t).num_seconds()))
                    .unwrap_or_default(),
                f.plan.describe().to_owned(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        print_table(&["KIND", "INSTANCE", "PORT", "STATUS", "IPS", "AGE", "GC WOULD"], &rows);
        for f in &report.findings {
            println!(
                "{} {}: {}",
                f.kind.as_str(),
                f.port.as_ref().map(ToString::to_string).unwrap_or_default(),
                f.why
            );
        }
    }
    let t = &report.totals;
    println!(
        "{} instances and {} deleted instances audited ({} busy, left for the next audit), {} ports; findings: {}",
        t.instances,
        t.deleted_instances,
        t.busy,
        t.ports,
        t.findings
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Writes the audit's gauges as a Prometheus text file (for node_exporter's
/// textfile collector), atomically.
fn write_metrics_file(path: &Path, report: &AuditReport) -> anyhow::Result<()> {
    let handle = netcache_api::metrics::handle();
    netcache_api::metrics::describe();
    report.record_metrics();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, handle.render()).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// `netcache nova audit`: exit 0 clean, 2 drift, 1 error.
pub async fn audit(
    settings: &Settings,
    json_out: bool,
    metrics_file: Option<&Path>,
    progress: Progress,
) -> anyhow::Result<i32> {
    let config = neutron_client_config(settings, &offline_neutron_url(settings))?;
    let auditor = auditor(settings, config, records(settings).await?)?;
    let bar = progress_bar(progress);
    let report = auditor.run(&show_progress(bar.as_ref())).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report?;
    if let Some(path) = metrics_file {
        write_metrics_file(path, &report)?;
    }
    if json_out {
        println!("{}", serde_json::to_string_pretty(&audit_json(&report))?);
    } else {
        print_findings(&report);
    }
    Ok(if report.drift() { AUDIT_DRIFT } else { AUDIT_CLEAN })
}

fn print_gc(report: &GcReport, apply: bool) {
    for act in &report.acted {
        let port = act.finding.port.as_ref().map(ToString::to_string).unwrap_or_default();
        let outcome = serde_json::to_value(&act.outcome).unwrap_or_default();
        println!(
            "{} {port} of {}: {}{}",
            act.finding.kind.as_str(),
            act.finding.instance,
            outcome["outcome"].as_str().unwrap_or_default(),
            outcome
                .get("why")
                .or_else(|| outcome.get("error"))
                .and_then(|w| w.as_str())
                .map(|w| format!(" ({w})"))
                .unwrap_or_default()
        );
    }
    let (done, verb) = if apply {
        ("", "acted on")
    } else {
        ("Dry run: ", "would be acted on")
    };
    println!(
        "{done}{} findings {verb}, {} seen but not yet twice grace apart",
        report.acted.len(),
        report.waiting
    );
}

fn gc_json(report: &GcReport) -> serde_json::Value {
    json!({
        "audit": audit_json(&report.audit),
        "acted": report.acted.iter().map(|a| {
            let mut value = serde_json::to_value(&a.outcome).unwrap_or_default();
            value["finding"] = finding_json(&a.finding);
            value
        }).collect::<Vec<_>>(),
        "waiting": report.waiting,
    })
}

/// `netcache nova gc`: two audits `grace` apart; what both saw is acted on
/// (`apply`) or listed.
pub async fn gc(settings: &Settings, apply: bool, json_out: bool, progress: Progress) -> anyhow::Result<i32> {
    let gc = nova_gc(settings).await?;
    let bar = progress_bar(progress);
    let first = gc.pass(apply, &show_progress(bar.as_ref())).await?;
    if first.waiting > 0 {
        let grace = Duration::from_secs_f64(settings.nova.grace);
        if let Some(bar) = &bar {
            bar.set_message(format!("{} findings seen; looking again in {grace:?}", first.waiting));
        }
        tokio::time::sleep(grace).await;
    }
    let report = gc.pass(apply, &show_progress(bar.as_ref())).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report?;
    if json_out {
        println!("{}", serde_json::to_string_pretty(&gc_json(&report))?);
    } else {
        print_gc(&report, apply);
    }
    let failed = report
        .acted
        .iter()
        .any(|a| matches!(a.outcome, netcache_nova::GcOutcome::Failed { .. }));
    Ok(i32::from(failed))
}

/// `netcache nova watch`: audit and GC every `nova.interval`, `/metrics` on
/// `listen`; a failed pass is counted and logged, and the next one runs.
pub async fn watch(settings: &Settings, apply: bool, listen: Option<SocketAddr>) -> anyhow::Result<()> {
    let gc = nova_gc(settings).await?;
    let handle = netcache_api::metrics::handle();
    netcache_api::metrics::describe();
    if let Some(addr) = listen {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let router = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || async move {
                (
                    [(axum::http::header::CONTENT_TYPE, netcache_api::metrics::CONTENT_TYPE)],
                    handle.render(),
                )
            }),
        );
        info!(%addr, "Prometheus metrics on http://{addr}/metrics");
        tokio::spawn(async move { axum::serve(listener, router).await });
    }
    let interval = Duration::from_secs_f64(settings.nova.interval);
    let quiet = |_: &netcache_nova::Progress<'_>| {};
    loop {
        match gc.pass(apply, &quiet).await {
            Ok(report) => {
                report.audit.record_metrics();
                info!(
                    findings = report.audit.findings.len(),
                    acted = report.acted.len(),
                    waiting = report.waiting,
                    "Nova watch pass done"
                );
            }
            Err(e) => {
                metrics::counter!("netcache_nova_pass_failures_total").increment(1);
                error!(error = %e, "Nova watch pass failed: {e}; the next pass runs in {interval:?}");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use netcache_domain::nova::{FindingKind, GcPlan};
    use netcache_nova::AuditTotals;

    use super::*;

    #[test]
    fn the_metrics_file_has_each_kinds_count() {
        let finding = Finding {
            kind: FindingKind::Leaked,
            instance: "i1".into(),
            port: Some("p1".into()),
            port_facts: None,
            why: "a test".to_owned(),
            plan: GcPlan::DeletePort,
        };
        let mut totals = AuditTotals {
            instances: 7,
            findings: FindingKind::ALL.iter().map(|k| (k.as_str(), 0)).collect(),
            ..AuditTotals::default()
        };
        totals.findings.insert("leaked", 1);
        let report = AuditReport {
            at: Utc::now(),
            findings: vec![finding],
            totals,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nova.prom");
        write_metrics_file(&path, &report).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("netcache_nova_findings{kind=\"leaked\"} 1"), "{text}");
        assert!(
            text.contains("netcache_nova_findings{kind=\"ghost_shown\"} 0"),
            "{text}"
        );
        assert!(text.contains("netcache_nova_instances_audited 7"), "{text}");
        assert!(text.contains("# HELP netcache_nova_findings"), "{text}");
    }
}
