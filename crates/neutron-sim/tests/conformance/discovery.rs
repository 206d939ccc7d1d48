//! Version discovery and extensions.

use super::*;

case!(versions_and_extensions, |api| {
    let v = api.get("/").await;
    assert_eq!(v["versions"][0]["id"], "v2.0");
    assert_eq!(v["versions"][0]["status"], "CURRENT");
    let v = api.get("/v2.0/").await;
    let colls = strings(&v["resources"], "collection");
    assert!(colls.contains(&"ports") && colls.contains(&"networks"), "{v}");
    let v = api.get("/v2.0/extensions").await;
    let exts = v["extensions"].as_array().expect("extensions");
    for e in exts {
        let keys: BTreeSet<&str> = e.as_object().expect("ext").keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from(["alias", "description", "links", "name", "updated"]),
            "{e}"
        );
    }
    let aliases: BTreeSet<&str> = exts.iter().filter_map(|e| e["alias"].as_str()).collect();
    for a in [
        "binding",
        "standard-attr-tag",
        "revision-if-match",
        "router",
        "external-net",
        "pagination",
        "fip-port-details",
        "standard-attr-revisions",
        "standard-attr-timestamp",
    ] {
        assert!(aliases.contains(a), "missing {a}");
    }
    assert_eq!(aliases.contains("tag-ports-during-bulk-creation"), api.tag_ext);
    let v = api.get("/v2.0/extensions/binding").await;
    assert_eq!(v["extension"]["name"], "Port Binding");
});
