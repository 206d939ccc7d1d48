//! `netcache demo`: the seed scenario end to end, ending with the ghost
//! collected and the audit clean.

#[test]
fn demo_shows_the_ghost_then_collects_it() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netcache"))
        .arg("demo")
        .env("NETCACHE_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
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
