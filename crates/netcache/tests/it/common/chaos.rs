//! `netcache chaos` through the built binary, for the chaos tests of both test
//! targets (`it`, and `external` for PostgreSQL).

use std::process::{Command, Output};

/// Runs `netcache chaos ARGS` to its end.
pub fn chaos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_netcache"))
        .arg("chaos")
        .args(args)
        .env("NETCACHE_LOG", "warn")
        .output()
        .expect("run netcache chaos")
}

/// The run exited 0 with no violated invariant; else its summary, violations and
/// the tail of its log.
pub fn assert_clean(output: &Output) {
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
