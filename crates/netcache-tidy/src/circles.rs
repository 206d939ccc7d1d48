//! No import circles: within a crate, no top-level module names (by a
//! `crate::` path) a module that names it back, directly or round a longer
//! circle. A module's own children are part of it; the crate's root (`lib.rs`,
//! `main.rs`) wires every module, and unit tests (a file's `#[cfg(test)] mod`,
//! and `tests.rs` files) may use any module: neither is part of any circle. A circle is broken by moving what both sides need one floor down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::source;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level module a file of `src/` belongs to; `None` for the root.
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// The first segment of every `crate::` path in `code`, groups included
/// (`crate::{a::X, b}` names `a` and `b`).
fn named(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` is a macro's own path, and `foo_crate::` another crate's.
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start => {
                        names.insert(ident(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names.remove("");
    names
}

/// Which modules each module names, from `(module, code)` pairs.
fn graph<'a>(files: impl IntoIterator<Item = (String, &'a str)>) -> Graph {
    let files: Vec<(String, &str)> = files.into_iter().collect();
    let modules: BTreeSet<&String> = files.iter().map(|(m, _)| m).collect();
    let mut graph = Graph::new();
    for (module, code) in &files {
        let edges = graph.entry(module.clone()).or_default();
        for name in named(code) {
            if &name != module && modules.contains(&name) {
                edges.insert(name);
            }
        }
    }
    graph
}

/// The circles: strongly connected sets of more than one module (Tarjan's).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, module: &'g str) {
            let n = self.index.len();
            self.index.insert(module, n);
            self.low.insert(module, n);
            self.stack.push(module);
            for next in self.graph.get(module).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[module].min(self.low[next.as_str()]);
                    self.low.insert(module, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[module].min(self.index[next.as_str()]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let at = self.stack.iter().rposition(|m| *m == module).expect("on the stack");
                let mut set: Vec<String> = self.stack.drain(at..).map(str::to_owned).collect();
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for module in graph.keys() {
        if !walk.index.contains_key(module.as_str()) {
            walk.visit(module);
        }
    }
    walk.found
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut broken = Vec::new();
    for krate in source::crates() {
        let src = krate.join("src");
        let texts: Vec<(String, String)> = source::rust_files(&src)
            .into_iter()
            .filter(|path| !path.ends_with("tests.rs"))
            .filter_map(|path| {
                let module = module_of(path.strip_prefix(&src).ok()?)?;
                let text = source::without_unit_tests(&source::read(&path));
                Some((module, source::code(&text)))
            })
            .collect();
        let graph = graph(texts.iter().map(|(m, code)| (m.clone(), code.as_str())));
        for circle in circles(&graph) {
            let edges: Vec<String> = circle
                .iter()
                .flat_map(|m| {
                    graph[m]
                        .iter()
                        .filter(|n| circle.contains(n))
                        .map(move |n| format!("{m} → {n}"))
                })
                .collect();
            broken.push(format!("{}: {}", krate.display(), edges.join(", ")));
        }
    }
    assert!(broken.is_empty(), "import circles:\n{}", broken.join("\n"));
}

#[test]
fn a_module_that_names_one_naming_it_back_is_a_circle() {
    let files = [
        ("a", "use crate::b::Thing;"),
        ("b", "fn f() { crate::c::g() }"),
        ("c", "use crate::{d, a::{x, y}};"),
        ("d", "use crate::e; use other_crate::a;"),
        ("e", "macro_rules! m { () => { $crate::a::x() } }"),
    ];
    let graph = graph(files.map(|(m, code)| (m.to_owned(), code)));
    assert_eq!(circles(&graph), [["a", "b", "c"]]);
    let no_way_back = graph.into_iter().filter(|(m, _)| m != "c");
    assert!(circles(&no_way_back.collect()).is_empty());
}

#[test]
fn a_files_module_is_its_top_level_module() {
    assert_eq!(
        module_of(Path::new("engine/group_commit.rs")).as_deref(),
        Some("engine")
    );
    assert_eq!(module_of(Path::new("engine.rs")).as_deref(), Some("engine"));
    assert_eq!(module_of(Path::new("lib.rs")), None);
}
