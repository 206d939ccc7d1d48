//! The API reaches the compute service only through its narrow interfaces
//! (a server's lifecycle and attachments, key pairs, quotas, server groups,
//! services, aggregates, flavors and the Neutron proxies): `AppState` (in
//! `netcache-api/src/lib.rs`) hands each handler the one it asks for, as a
//! trait object. A handler that imported such a trait could call it on the
//! whole `Compute` again, so no other file of the API names one.

use std::collections::BTreeSet;

use crate::source;

/// The narrow interfaces `netcache-compute` defines: its `pub trait`s named
/// `…Ops`, `…Proxy` or `…Reads`.
fn interfaces(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| line.trim().strip_prefix("pub trait "))
        .filter_map(|rest| rest.split(|c: char| !c.is_alphanumeric() && c != '_').next())
        .filter(|name| ["Ops", "Proxy", "Reads"].iter().any(|end| name.ends_with(end)))
        .map(str::to_owned)
        .collect()
}

/// The interfaces of `names` that `code` names as a word.
fn named<'a>(code: &str, names: &'a BTreeSet<String>) -> Vec<&'a str> {
    let words: BTreeSet<&str> = code.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
    names.iter().map(String::as_str).filter(|n| words.contains(n)).collect()
}

#[test]
fn api_handlers_reach_compute_only_through_its_interfaces() {
    let root = source::workspace().join("crates");
    let defined: BTreeSet<String> = source::rust_files(&root.join("netcache-compute/src"))
        .iter()
        .flat_map(|path| interfaces(&source::code(&source::read(path))))
        .collect();
    assert!(defined.len() >= 22, "netcache-compute's narrow interfaces: {defined:?}");
    let state = root.join("netcache-api/src/lib.rs");
    let mut broken = Vec::new();
    for path in source::rust_files(&root.join("netcache-api/src")) {
        if path == state {
            continue;
        }
        for name in named(&source::code(&source::read(&path)), &defined) {
            broken.push(format!("{}: {name}", path.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "API files other than lib.rs that name a compute interface (ask AppState for it instead):\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_handler_importing_an_interface_is_found() {
    let compute = "#[async_trait]\npub trait FlavorOps: Send + Sync {\n}\npub trait Clock {}\n\
                   pub trait NetworkProxy {}";
    let defined = interfaces(compute);
    assert_eq!(
        defined,
        BTreeSet::from(["FlavorOps".to_owned(), "NetworkProxy".to_owned()])
    );
    let handler = "use netcache_compute::{FlavorOps, Server};\n\
                   let f = state.compute.flavor(&ctx, id).await?;";
    assert_eq!(named(handler, &defined), ["FlavorOps"]);
    // A comment may name one.
    assert!(
        named(
            &source::code("let f = state.flavors().flavor(&ctx, id).await?; // FlavorOps"),
            &defined
        )
        .is_empty()
    );
}
