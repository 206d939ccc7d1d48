//! `netcache chaos` end to end through the built binary: short fixed-seed runs that
//! must end without a violated invariant (exit 0). A failure prints the harness's
//! summary, the violations and each offending server's history; the seed replays it.
//! The PostgreSQL variant runs only when `NETCACHE_TEST_PG_URL` is set.
//! Before the durable operations, both found the defects they were written for (stuck
//! `deleting`/`BUILD` servers after a kill, 500s from a detach or delete racing GC,
//! ports leaked by a bogus `network-vif-deleted`).

use std::process::{Command, Output};

fn chaos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_netcache"))
        .arg("chaos")
        .args(args)
        .env("NETCACHE_LOG", "warn")
        .output()
        .expect("run netcache chaos")
}

fn assert_clean(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    assert!(
        output.status.success(),
        "netcache chaos exited {:?}\n--- stdout ---\n{stdout}\n--- stderr (tail) ---\n{}",
        output.status.code(),
        tail.join("\n")
    );
    assert!(stdout.contains("violations: 0"), "{stdout}");
}

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

#[test]
fn a_short_postgres_run_with_two_processes_and_three_kills_violates_no_invariant() {
    let Ok(url) = std::env::var("NETCACHE_TEST_PG_URL") else {
        eprintln!("NETCACHE_TEST_PG_URL is not set: skipped");
        return;
    };
    let output = chaos(&[
        "--seed",
        "9002",
        "--ops",
        "120",
        "--rate",
        "20",
        "--concurrency",
        "4",
        "--processes",
        "2",
        "--database",
        &url,
        "--kills",
        "3",
        "--settle-timeout",
        "45",
        "--request-timeout",
        "20",
    ]);
    assert_clean(&output);
}
