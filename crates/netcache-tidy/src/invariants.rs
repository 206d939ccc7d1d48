//! Every numbered invariant of `docs/ARCHITECTURE.md` is enforced by a test it
//! names ("Test: `name`"), and each named test exists and cites the invariant
//! in the comments above it (`invariant N`), so neither the document nor the
//! test can drift away from the other unnoticed.

use std::collections::BTreeMap;

use crate::source;

/// The numbered items of the document's `## Invariants` section: number, and
/// the tests its text names after `Test:`.
fn invariants(doc: &str) -> Vec<(u32, Vec<String>)> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Invariants"))
        .unwrap_or_default();
    let mut items: Vec<(u32, String)> = Vec::new();
    for line in section.lines() {
        let number = line.split_once(". ").and_then(|(n, _)| n.parse::<u32>().ok());
        match (number, items.last_mut()) {
            (Some(n), _) => items.push((n, line.to_owned())),
            (None, Some((_, text))) if line.starts_with(' ') => text.push_str(line),
            _ => {}
        }
    }
    items
        .into_iter()
        .map(|(n, text)| {
            let after = text.split_once("Test:").map_or("", |(_, after)| after);
            let names = after
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|name| {
                    name.contains('_')
                        && name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                })
                .map(str::to_owned)
                .collect();
            (n, names)
        })
        .collect()
}

/// Whether `text` cites invariant `n`: `invariant n`, or `invariants 1, n and
/// 15` (any case); `invariant n0` is another one.
fn cites(text: &str, n: u32) -> bool {
    let text = text.to_lowercase();
    text.match_indices("invariant").any(|(at, word)| {
        let rest = &text[at + word.len()..];
        let list = rest.strip_prefix('s').unwrap_or(rest);
        let end = list
            .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == ' ' || "and".contains(c)))
            .unwrap_or(list.len());
        list[..end]
            .split(|c: char| !c.is_ascii_digit())
            .any(|number| number.parse() == Ok(n))
    })
}

/// The comments and attributes right above each function of `text`, by name.
fn preambles(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let Some(at) = line.find("fn ") else { continue };
        let head = line[..at].trim();
        if !matches!(
            head,
            "" | "async" | "pub" | "pub async" | "pub(crate)" | "pub(crate) async"
        ) {
            continue;
        }
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut above = Vec::new();
        for previous in lines[..n].iter().rev().map(|l| l.trim()) {
            if previous.starts_with("//") || previous.starts_with("#[") {
                above.push(previous);
            } else {
                break;
            }
        }
        found.push((name, above.join("\n")));
    }
    found
}

#[test]
fn every_invariant_names_a_test_that_exists_and_cites_it() {
    let doc = source::read(&source::workspace().join("docs/ARCHITECTURE.md"));
    let listed = invariants(&doc);
    assert!(!listed.is_empty(), "no numbered invariants in docs/ARCHITECTURE.md");
    // Functions of one name in several crates: any of them may be the test.
    let mut tests: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for krate in source::crates() {
        for (_, text) in source::test_code(&krate) {
            for (name, above) in preambles(&text) {
                tests.entry(name).or_default().push(above);
            }
        }
    }
    let mut broken = Vec::new();
    for (i, (n, names)) in listed.iter().enumerate() {
        if *n as usize != i + 1 {
            broken.push(format!("invariant {n} is numbered out of order"));
        }
        if names.is_empty() {
            broken.push(format!("invariant {n} names no test"));
        }
        for name in names {
            match tests.get(name) {
                None => broken.push(format!("invariant {n} names `{name}`, which is no test")),
                Some(above) if !above.iter().any(|a| cites(a, *n)) => {
                    broken.push(format!("`{name}` does not cite invariant {n} in the comments above it"));
                }
                Some(_) => {}
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn an_invariant_whose_test_is_missing_or_silent_is_found() {
    let doc = "# A\n\n## Invariants\n\n1. **One.** Test: `first_test` (a.rs),\n   `second_test` (b.rs).\n\
               2. **Two**, `not_a_test` before. Test: none yet.\n\n## Testing\n\n3. Not an invariant. Test: `x_y`.";
    assert_eq!(
        invariants(doc),
        [
            (1, vec!["first_test".to_owned(), "second_test".to_owned()]),
            (2, vec![])
        ]
    );
    let code =
        "/// Invariant 1: it holds.\n#[test]\nfn first_test() {}\n\n/// Invariant 12.\n#[test]\nfn second_test() {}";
    let above: BTreeMap<String, String> = preambles(code).into_iter().collect();
    assert!(cites(&above["first_test"], 1));
    assert!(!cites(&above["second_test"], 1), "12 is not 1");
}
