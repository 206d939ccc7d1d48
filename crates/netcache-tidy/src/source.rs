//! The workspace's files as the rules read them.

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace's root.
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace's root")
}

/// Every crate's directory, by name.
pub(crate) fn crates() -> Vec<PathBuf> {
    let mut crates: Vec<PathBuf> = fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .map(|entry| entry.expect("an entry of crates/").path())
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    crates
}

/// The `.rs` files under `dir`, sorted (none if it does not exist).
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

pub(crate) fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` without its `//` comments (doc comments included); a `//` inside a
/// string literal ends the line early, which no rule minds.
pub(crate) fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a file's unit tests begin: the line of its `#[cfg(test)]` module.
fn unit_tests_line(text: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    (0..lines.len()).find(|&n| {
        lines[n] == "#[cfg(test)]"
            && lines[n + 1..]
                .iter()
                .find(|l| !l.starts_with("#[") && !l.is_empty())
                .is_some_and(|l| l.starts_with("mod ") || l.starts_with("pub(crate) mod "))
    })
}

/// A `src/` file's text without its unit tests (which sit last, in their module).
pub(crate) fn without_unit_tests(text: &str) -> String {
    match unit_tests_line(text) {
        Some(first) => text.lines().take(first).collect::<Vec<_>>().join("\n"),
        None => text.to_owned(),
    }
}

/// The test code of a crate: its `tests/` files and `src/` files named
/// `tests.rs` whole, and each other `src/` file's unit test module (the rest
/// blanked, so line numbers stay right).
pub(crate) fn test_code(krate: &Path) -> Vec<(PathBuf, String)> {
    let mut files: Vec<(PathBuf, String)> = rust_files(&krate.join("tests"))
        .into_iter()
        .map(|path| {
            let text = read(&path);
            (path, text)
        })
        .collect();
    for path in rust_files(&krate.join("src")) {
        let text = read(&path);
        if path.ends_with("tests.rs") {
            files.push((path, text));
        } else if let Some(first) = unit_tests_line(&text) {
            let tests: Vec<&str> = text.lines().skip(first).collect();
            files.push((path, "\n".repeat(first) + &tests.join("\n")));
        }
    }
    files
}
