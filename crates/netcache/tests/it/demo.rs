//! `netcache demo`: the seed scenario end to end, ending with the ghost
//! collected and the audit clean.

#[test]
fn demo_shows_the_ghost_then_collects_it() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netcache"))
        .arg("demo")
        .env_remove("NETCACHE_LOG")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    // No logs by default, and the wait is a line of the story of its own.
    assert_eq!(stderr, "", "the demo wrote to stderr");
    let lines: Vec<&str> = stdout.lines().collect();
    let waiting = lines
        .iter()
        .position(|l| l.starts_with("Waiting for server ") && l.ends_with(" to build…"))
        .unwrap_or_else(|| panic!("no waiting line: {stdout}"));
    assert!(
        lines[waiting + 1].starts_with("Server ") && lines[waiting + 1].contains(" is ACTIVE on "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Neutron holds 2 ports for the server; netcache shows 1."),
        "{stdout}"
    );
    assert!(stdout.contains("GHOST: carries our marker of intent"), "{stdout}");
    assert!(stdout.contains("(abandoned)"), "{stdout}");
    assert!(stdout.contains("GC deleted ghost port"), "{stdout}");
    assert!(
        stdout.contains("audit after: clean — Neutron now holds 1 port(s) for the server"),
        "{stdout}"
    );
}
