//! Version discovery and extensions.

use super::*;

case!(versions_and_extensions, |api| {
    let v = api.ok(Method::GET, "/", None, 200).await;
    assert_eq!(v["versions"][0]["id"], "v2.0");
    assert_eq!(v["versions"][0]["status"], "CURRENT");
    let v = api.ok(Method::GET, "/v2.0/", None, 200).await;
    let colls: Vec<&str> = v["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["collection"].as_str())
        .collect();
    assert!(colls.contains(&"ports") && colls.contains(&"networks"), "{v}");
    let v = api.ok(Method::GET, "/v2.0/extensions", None, 200).await;
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
    let v = api.ok(Method::GET, "/v2.0/extensions/binding", None, 200).await;
    assert_eq!(v["extension"]["name"], "Port Binding");
});
