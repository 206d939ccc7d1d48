//! The domain crate is pure: it holds the model and the decisions, and is
//! handed everything it would otherwise read from the world — the time, new
//! ids, what Neutron and the store hold. So nothing in it (tests included)
//! reads a clock, draws a random number, or touches files, sockets, processes,
//! threads or the environment; and it depends only on data crates.

use crate::source;

/// What the domain must not name, and what naming it would mean.
const FORBIDDEN: &[(&str, &str)] = &[
    ("::now(", "reads a clock"),
    ("SystemTime", "reads a clock"),
    ("Instant", "reads a clock"),
    ("new_v4", "draws a random id"),
    ("rand::", "draws random numbers"),
    ("std::fs", "touches files"),
    ("std::net::Tcp", "opens sockets"),
    ("std::net::Udp", "opens sockets"),
    ("std::env", "reads the environment"),
    ("std::process", "runs processes"),
    ("std::thread", "starts threads"),
    ("tokio", "does asynchronous I/O"),
    ("reqwest", "does HTTP"),
    ("sqlx", "talks to a database"),
];

/// The data crates the domain may depend on.
const DEPENDENCIES: &[&str] = &["chrono", "ipnet", "serde", "serde_json", "uuid"];

/// Each line of `code` that names something forbidden: (line, name, meaning).
fn impurities(code: &str) -> Vec<(usize, &'static str, &'static str)> {
    let code = source::code(code);
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for (name, meaning) in FORBIDDEN {
            if line.contains(name) {
                found.push((n + 1, *name, *meaning));
            }
        }
    }
    found
}

/// The names under `[dependencies]` of a manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
            names.push(name.to_owned());
        }
    }
    names
}

#[test]
fn the_domain_crate_reads_no_clock_draws_no_random_number_and_does_no_io() {
    let domain = source::workspace().join("crates/netcache-domain");
    let mut broken = Vec::new();
    for dir in ["src", "tests"] {
        for path in source::rust_files(&domain.join(dir)) {
            for (line, name, meaning) in impurities(&source::read(&path)) {
                broken.push(format!("{}:{line}: `{name}` {meaning}", path.display()));
            }
        }
    }
    for name in dependencies(&source::read(&domain.join("Cargo.toml"))) {
        if !DEPENDENCIES.contains(&name.as_str()) {
            broken.push(format!("depends on {name}, which is not a data crate"));
        }
    }
    assert!(
        broken.is_empty(),
        "the domain crate is not pure:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_clock_read_a_random_id_or_a_socket_in_the_domain_is_found() {
    let code = "fn decide(at: DateTime<Utc>) {}\n\
                fn stamp() { let at = Utc::now(); }\n\
                // Utc::now() in a comment is no read\n\
                fn id() -> ServerId { ServerId(Uuid::new_v4()) }\n\
                use std::net::TcpStream;";
    let found: Vec<(usize, &str)> = impurities(code).into_iter().map(|(n, name, _)| (n, name)).collect();
    assert_eq!(found, [(2, "::now("), (4, "new_v4"), (5, "std::net::Tcp")]);
    let manifest = "[dependencies]\nchrono.workspace = true\ntokio = \"1\"\n\n[dev-dependencies]\nproptest = \"1\"";
    assert_eq!(dependencies(manifest), ["chrono", "tokio"]);
}
