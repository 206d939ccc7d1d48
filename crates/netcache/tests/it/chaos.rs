//! `netcache chaos` end to end through the built binary: short fixed-seed runs that
//! must end without a violated invariant (exit 0). A failure prints the harness's
//! summary, the violations and each offending server's history; the seed replays it.
//! The PostgreSQL variant is in the `external` test target (it needs
//! `NETCACHE_TEST_PG_URL`).
//! Before the durable operations, both found the defects they were written for (stuck
//! `deleting`/`BUILD` servers after a kill, 500s from a detach or delete racing GC,
//! ports leaked by a bogus `network-vif-deleted`).
//! The checker itself is tested too: a build sabotaged with the test hook
//! `compute.sabotage = "skip-release"` must fail it with leaked ports.

use crate::common::chaos::{assert_clean, chaos};

#[test]
fn a_short_sqlite_run_with_a_kill_violates_no_invariant() {
    let output = chaos(&[
        "--seed",
        "9001",
        "--ops",
        "60",
        "--rate",
        "15",
        "--concurrency",
        "4",
        "--kills",
        "1",
        "--settle-timeout",
        "30",
        "--request-timeout",
        "20",
    ]);
    assert_clean(&output);
}

/// Short, fast and bounded: no Neutron faults, no kills, no spawn failures; boots
/// (user ports above all), deletes and detaches.
const SABOTAGE_RUN: [&str; 17] = [
    "--seed",
    "9003",
    "--ops",
    "36",
    "--rate",
    "12",
    "--concurrency",
    "3",
    "--no-faults",
    "--kills",
    "0",
    "--spawn-failure-rate",
    "0",
    "--mix",
    "boot-auto=4,boot-network=2,boot-multi=0,boot-fixed-ip=0,boot-user-port=10,delete=8,attach-network=2,\
     attach-port=6,detach=6,event-changed=0,event-vif-deleted=0,plant-foreign=0,heal=1,gc=1,disconnect=0",
    "--settle-timeout",
    "30",
];

/// The violations a run's history file lists: (invariant, message).
fn violations(history: &std::path::Path) -> Vec<(u64, String)> {
    std::fs::read_to_string(history)
        .expect("read the history")
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|v| {
            let v = v.get("violation")?;
            Some((v["invariant"].as_u64()?, v["message"].as_str()?.to_owned()))
        })
        .collect()
}

#[test]
fn a_build_that_skips_releases_fails_the_checker_with_leaked_ports() {
    let dir = tempfile::tempdir().expect("temp dir");
    let extra = dir.path().join("sabotage.toml");
    std::fs::write(&extra, "[compute]\nsabotage = \"skip-release\"\n").expect("write the extra config");
    let history = dir.path().join("sabotaged.jsonl");
    let mut args: Vec<&str> = SABOTAGE_RUN.to_vec();
    args.extend(["--serve-config-extra", extra.to_str().unwrap()]);
    args.extend(["--history", history.to_str().unwrap()]);
    let output = chaos(&args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "the sabotaged run must fail\n{stdout}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("violations: "))
        .unwrap_or_default();
    println!("sabotaged run: {summary}");
    // Invariant 2, no leaks after GC: the ports it never released are still in Neutron,
    // bound to servers that are deleted or no longer list them.
    let leaks: Vec<String> = violations(&history)
        .into_iter()
        .filter(|(invariant, message)| {
            *invariant == 2 && (message.contains("still bound to") || message.contains("left after GC"))
        })
        .map(|(_, message)| message)
        .collect();
    assert!(!leaks.is_empty(), "no leaked port was reported\n{stdout}");
    for leak in &leaks {
        println!("  [2] {leak}");
    }

    // The same run without the sabotage is clean.
    let output = chaos(&SABOTAGE_RUN);
    assert_clean(&output);
}
