//! Tests never wait on timing luck: a test that needs something to happen
//! polls for it with `netcache_testenv::poll` (bounded; virtual under a paused
//! clock), the one place a wait sleeps. Any other sleep in test code is a
//! deliberate passage of time — a fault's delay, time passing on a paused clock
//! — and says so on the line before: `// tidy: allow sleep — why`.

use crate::source;

const ALLOW: &str = "tidy: allow sleep";

/// The lines of `text` that sleep without saying why on the line before.
fn unexplained_sleeps(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let code: Vec<String> = lines.iter().map(|line| source::code(line)).collect();
    (0..lines.len())
        .filter(|&n| code[n].contains("sleep(") && !(n > 0 && lines[n - 1].contains(ALLOW)))
        .map(|n| n + 1)
        .collect()
}

#[test]
fn tests_wait_only_by_polling_and_every_other_sleep_says_why() {
    let mut broken = Vec::new();
    for krate in source::crates() {
        for (path, text) in source::test_code(&krate) {
            for line in unexplained_sleeps(&text) {
                broken.push(format!("{}:{line}", path.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "sleeps in tests outside netcache_testenv::poll, with no `// {ALLOW} — why` before them:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_sleep_without_its_reason_is_found() {
    let text = "loop {\n\
                    if done() { break; }\n\
                    tokio::time::sleep(Duration::from_millis(10)).await;\n\
                }\n\
                // tidy: allow sleep — an hour passes on the paused clock\n\
                tokio::time::sleep(Duration::from_secs(3600)).await;\n\
                // sleep(1) in a comment is no sleep\n\
                std::thread::sleep(Duration::from_millis(1));";
    assert_eq!(unexplained_sleeps(text), [3, 8]);
}
