//! The run's summary on stdout (operations by kind and outcome, faults, kills,
//! violations), the history of each offending server, and the history file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use netcache_app::client::print_table;
use serde_json::json;

use super::checker::Report;
use super::history::{OpKind, Outcome, RunData};

/// Outcome columns of the summary table.
const COLUMNS: [&str; 8] = [
    "2xx",
    "4xx",
    "5xx",
    "conn failed",
    "timeout",
    "disconnected",
    "exit≠0",
    "total",
];

fn column(outcome: &Outcome) -> usize {
    match outcome {
        Outcome::Status { code } if *code < 400 => 0,
        Outcome::Status { code } if *code < 500 => 1,
        Outcome::Status { .. } => 2,
        Outcome::ConnectionFailed => 3,
        Outcome::Timeout => 4,
        Outcome::Disconnected => 5,
        Outcome::Exit { code: 0 } => 0,
        Outcome::Exit { .. } => 6,
    }
}

pub struct Context<'a> {
    pub seed: u64,
    pub command_line: &'a str,
    pub topology: String,
    pub skipped: u64,
    pub settled: bool,
}

pub fn print_summary(ctx: &Context<'_>, data: &RunData, report: &Report) {
    println!();
    println!("netcache chaos — seed {} — {}", ctx.seed, ctx.topology);
    println!();
    let mut counts: BTreeMap<OpKind, [u64; 8]> = BTreeMap::new();
    let mut statuses: BTreeMap<u16, u64> = BTreeMap::new();
    for r in &data.records {
        let row = counts.entry(r.op).or_default();
        row[column(&r.outcome)] += 1;
        row[7] += 1;
        if let Some(code) = r.outcome.status() {
            *statuses.entry(code).or_default() += 1;
        }
    }
    let mut headers = vec!["operation"];
    headers.extend(COLUMNS);
    let mut rows: Vec<Vec<String>> = counts
        .iter()
        .map(|(op, row)| {
            std::iter::once(op.label().to_owned())
                .chain(row.iter().map(u64::to_string))
                .collect()
        })
        .collect();
    let mut totals = [0u64; 8];
    for row in counts.values() {
        for (t, n) in totals.iter_mut().zip(row) {
            *t += n;
        }
    }
    rows.push(
        std::iter::once("all".to_owned())
            .chain(totals.iter().map(u64::to_string))
            .collect(),
    );
    print_table(&headers, &rows);
    let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
    println!("statuses: {}", statuses.join(" "));
    if ctx.skipped > 0 {
        println!("operations without a target (skipped): {}", ctx.skipped);
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for w in &data.faults {
        for k in &w.kinds {
            *kinds.entry(k.as_str()).or_default() += 1;
        }
    }
    let fired: u64 = data.faults.iter().map(|w| w.fired).sum();
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}×{n}")).collect();
    println!(
        "faults: {} phases [{}], rules fired {fired} times",
        data.faults.len(),
        kinds.join(" ")
    );
    let restarted = data.kills.iter().filter(|k| k.ready_ms.is_some()).count();
    println!("kills: {} ({restarted} restarted)", data.kills.len());
    println!(
        "samples: {} server samples, {} Neutron port lists, {} port sightings judged, {} unverifiable",
        data.samples.len(),
        data.neutron.lists,
        report.sightings,
        report.unverified
    );
    println!(
        "final: {} live servers, {} Neutron ports, audit exit {}{}",
        data.snapshot.servers.len(),
        data.snapshot.ports.len(),
        data.snapshot
            .audit
            .exit_code
            .map_or_else(|| "none".to_owned(), |c| c.to_string()),
        if ctx.settled { "" } else { " (did NOT settle)" }
    );
    let mut by_invariant = [0usize; 8];
    for v in &report.violations {
        by_invariant[usize::from(v.invariant).min(7)] += 1;
    }
    let per: Vec<String> = (1..=7).map(|i| format!("{i}:{}", by_invariant[i])).collect();
    println!("violations: {} ({})", report.violations.len(), per.join(" "));
}

pub fn print_violations(ctx: &Context<'_>, data: &RunData, report: &Report) {
    if report.is_clean() {
        return;
    }
    println!();
    println!("VIOLATIONS (seed {}):", ctx.seed);
    for v in report.violations.iter().take(100) {
        println!(
            "  [{}] server {} port {}{}: {}",
            v.invariant,
            v.server.as_deref().unwrap_or("-"),
            v.port.as_deref().unwrap_or("-"),
            v.at_ms.map(|t| format!(" at {t} ms")).unwrap_or_default(),
            v.message
        );
    }
    if report.violations.len() > 100 {
        println!("  … and {} more", report.violations.len() - 100);
    }
    for server in report.servers().iter().take(10) {
        println!();
        println!("history of server {server}:");
        for r in data.records_of(server) {
            println!(
                "  {:>7} ms  #{:<6} {:<22} p{} {:<16} port {}{}{}",
                r.start_ms,
                r.seq,
                r.op.label(),
                r.process.map_or_else(|| "-".to_owned(), |p| p.to_string()),
                r.outcome.label(),
                r.port.as_deref().unwrap_or("-"),
                if r.ports_seen.is_empty() {
                    String::new()
                } else {
                    format!(" → {}", r.ports_seen.join(","))
                },
                r.note.as_ref().map(|n| format!("  ({n})")).unwrap_or_default()
            );
        }
        let mut last: Option<(Option<&str>, Option<&str>)> = None;
        for s in data
            .samples
            .iter()
            .filter(|s| &s.server == server && s.status.is_some())
        {
            let state = (s.status.as_deref(), s.task_state.as_deref());
            if last != Some(state) {
                println!(
                    "  {:>7} ms  sampled {} task_state {}",
                    s.start_ms,
                    state.0.unwrap_or("-"),
                    state.1.unwrap_or("-")
                );
                last = Some(state);
            }
        }
        match data.snapshot.servers.iter().find(|s| &s.id == server) {
            Some(f) => println!(
                "  final: {} task_state {} interfaces [{}]",
                f.status,
                f.task_state.as_deref().unwrap_or("-"),
                f.interfaces.join(", ")
            ),
            None => println!("  final: gone"),
        }
        let ports: Vec<String> = data
            .snapshot
            .ports
            .iter()
            .filter(|p| &p.device_id == server)
            .map(|p| format!("{}{}", p.id, if p.is_netcache() { " (netcache)" } else { "" }))
            .collect();
        println!("  Neutron ports with its device_id at the end: [{}]", ports.join(", "));
    }
    println!();
    println!("replay: {}", ctx.command_line);
    println!("(add --keep to keep the processes' logs and the database, --history FILE for every request)");
}

/// The history as JSON lines: records, samples, Neutron ports, faults, kills, the
/// final snapshot and the violations, each line `{"<kind>": {...}}`.
pub fn write_history(path: &Path, data: &RunData, report: &Report) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for r in &data.records {
        writeln!(out, "{}", json!({ "record": r }))?;
    }
    for s in &data.samples {
        writeln!(out, "{}", json!({ "sample": s }))?;
    }
    for (id, facts) in &data.neutron.ports {
        writeln!(out, "{}", json!({ "neutron_port": {"id": id, "facts": facts} }))?;
    }
    for w in &data.faults {
        writeln!(out, "{}", json!({ "fault": w }))?;
    }
    for k in &data.kills {
        writeln!(out, "{}", json!({ "kill": k }))?;
    }
    writeln!(out, "{}", json!({ "snapshot": data.snapshot }))?;
    for v in &report.violations {
        writeln!(out, "{}", json!({ "violation": v }))?;
    }
    out.flush()?;
    Ok(())
}
