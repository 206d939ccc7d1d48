//! One-off operator commands: `netcache heal`, `netcache gc`, `netcache audit`,
//! `netcache purge`.
//! They run in this process against the configured database and Neutron, beside
//! (or without) a running service. They print their result on stdout and
//! nothing else: progress only as a bar for a person at a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use netcache_compute::{AuditOps, AuditReport};

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use netcache_domain::retention::Purged;

use crate::app::{offline_compute, open_store};
use crate::client::{Progress, print_table};
use crate::settings::Settings;

/// Exit codes of `netcache audit` (Terraform's `-detailed-exitcode` convention).
pub const AUDIT_CLEAN: i32 = 0;
pub const AUDIT_ERROR: i32 = 1;
pub const AUDIT_DRIFT: i32 = 2;

pub async fn heal(settings: &Settings) -> anyhow::Result<()> {
    let compute = offline_compute(settings).await?;
    let r = compute.heal().await?;
    println!(
        "Healed {} servers in {} batches: {} cache writes, {} lost ports, {} ghosts, {} writes skipped for concurrent changes, {} batches failed",
        r.servers,
        r.batches,
        r.cache_writes,
        r.lost.len(),
        r.ghosts.len(),
        r.conflicts,
        r.batch_failures
    );
    Ok(())
}

pub async fn gc(settings: &Settings) -> anyhow::Result<()> {
    let compute = offline_compute(settings).await?;
    let pass = compute.gc().await;
    // This process exits next: what it could not finish is a service's to take over now.
    compute.hand_back_operations().await?;
    let r = pass?;
    if r.held_elsewhere {
        println!("Another process is running a GC pass; nothing done");
        return Ok(());
    }
    let list = |ids: &[netcache_domain::PortId]| ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    if settings.gc.dry_run {
        println!(
            "Dry run: would delete [{}], would unbind [{}]",
            list(&r.would_delete),
            list(&r.would_unbind)
        );
    } else {
        println!(
            "Deleted [{}], unbound [{}], {} releases retried, {} stale intents resolved",
            list(&r.deleted),
            list(&r.unbound),
            r.released,
            r.intents_resolved
        );
    }
    for (reason, count) in &r.skipped {
        println!("skipped {count} ghost(s): {reason}");
    }
    if r.failures > 0 {
        println!(
            "{} ghost(s) or release(s) failed (logged); the next pass tries again",
            r.failures
        );
    }
    Ok(())
}

/// `--before`: a date (midnight UTC) or an RFC 3339 time.
pub fn parse_before(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("{text:?} is neither YYYY-MM-DD nor an RFC 3339 time"))
}

/// Purges servers deleted before `before` (the store alone: no Neutron needed).
pub async fn purge(
    settings: &Settings,
    before: DateTime<Utc>,
    dry_run: bool,
    progress: Progress,
) -> anyhow::Result<()> {
    let store = open_store(&settings.database).await?;
    let ghost_watch =
        TimeDelta::from_std(std::time::Duration::from_secs_f64(settings.heal.deleted_window)).unwrap_or(TimeDelta::MAX);
    let bar = (progress == Progress::Shown).then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} purged {pos} servers").expect("valid template"));
        bar
    });
    let purged = netcache_compute::purge(
        store.as_ref(),
        before,
        Utc::now(),
        ghost_watch,
        dry_run,
        &|total: Purged| {
            if let Some(bar) = &bar {
                bar.set_position(total.servers);
            }
        },
    )
    .await?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let rows = format!(
        "{} servers, {} port intents, {} actions, {} action events",
        purged.servers, purged.intents, purged.actions, purged.events
    );
    if dry_run {
        println!("Dry run: would purge {rows}");
    } else {
        println!("Purged {rows}");
    }
    Ok(())
}

/// Runs the audit and prints it; returns the exit code.
pub async fn audit(settings: &Settings, json: bool, progress: Progress) -> anyhow::Result<i32> {
    let compute = offline_compute(settings).await?;
    let bar = (progress == Progress::Shown).then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(ProgressStyle::with_template("auditing {bar:30} {pos}/{len} servers").expect("valid template"));
        bar
    });
    let report = compute
        .audit(&|done, total| {
            if let Some(bar) = &bar {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
        })
        .await?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&netcache_api::wire::audit_view(&report))?
        );
    } else {
        print_report(&report);
    }
    Ok(if report.is_clean() { AUDIT_CLEAN } else { AUDIT_DRIFT })
}

fn print_report(report: &AuditReport) {
    let rows: Vec<Vec<String>> = report
        .servers
        .iter()
        .filter(|s| s.has_drift())
        .map(|s| {
            let ghosts: Vec<String> = s
                .ghosts
                .iter()
                .map(|g| format!("{} ({}, seen {}x)", g.port_id, g.owner, g.times_seen))
                .collect();
            let lost: Vec<String> = s.lost.iter().map(|l| format!("{} ({})", l.port_id, l.reason)).collect();
            vec![
                s.id.to_string(),
                if s.deleted {
                    format!("{} (deleted)", s.name)
                } else {
                    s.name.clone()
                },
                format!("{}/{}", s.cached_ports.len(), s.neutron_ports.len()),
                if s.stale_cache { "yes".into() } else { String::new() },
                ghosts.join(", "),
                lost.join(", "),
                (s.pending_intents.len() + s.releasing.len()).to_string(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        print_table(
            &["Server", "Name", "Cached/Neutron", "Stale", "Ghosts", "Lost", "Pending"],
            &rows,
        );
        println!();
    }
    let t = &report.totals;
    println!(
        "{} servers: {} ghosts ours, {} foreign ({} of deleted servers), {} lost, {} stale caches, {} pending intents, {} releases pending, {} stuck and {} orphaned operations, {} leaked ports — {}",
        t.servers,
        t.ghosts_ours,
        t.ghosts_foreign,
        t.deleted_server_ghosts,
        t.lost,
        t.stale_caches,
        t.pending_intents,
        t.releasing,
        t.stuck_operations,
        t.orphaned_operations,
        t.leaked_vifs,
        if report.is_clean() { "clean" } else { "DRIFT" }
    );
}
