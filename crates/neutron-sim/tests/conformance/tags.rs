//! Tags: in a port POST body and the tag subresource.

use super::*;

case!(tags_in_port_post_body, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.50.0.0/24", json!({})).await;
    let tag = uniq("t");
    let p = api.port(json!({"network_id": net, "tags": ["b-tag", tag]})).await;
    let v = api.get(&format!("/v2.0/ports?tags={tag}&fields=id&fields=tags")).await;
    if api.tag_ext {
        let mut want = vec!["b-tag".to_string(), tag.clone()];
        want.sort();
        assert_eq!(p["tags"], json!(want));
        assert_eq!(v["ports"], json!([{"id": p["id"], "tags": want}]));
    } else {
        assert_eq!(
            p["tags"],
            json!([]),
            "tags must be silently dropped without the extension"
        );
        assert_eq!(v["ports"], json!([]));
    }
    // Tags in PUT /ports/{id} are read-only either way.
    let path = format!("/v2.0/ports/{}", s(&p["id"]));
    let update = json!({"port": {"tags": ["x"]}});
    let read_only = (400, "HTTPBadRequest", "Cannot update read-only attribute tags");
    api.refused(Method::PUT, &path, Some(&update), read_only).await;
    api.cleanup(&net).await;
});

case!(tag_subresource, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.60.0.0/24", json!({})).await;
    let p = api.port(json!({"network_id": net})).await;
    let p2 = api.port(json!({"network_id": net})).await;
    let id = s(&p["id"]);
    let base = format!("/v2.0/ports/{id}/tags");
    let port_path = format!("/v2.0/ports/{id}");
    let rev = |v: &Value| v["port"]["revision_number"].as_u64().expect("rev");
    let mut last = p["revision_number"].as_u64().expect("rev");
    let (red, blue) = (uniq("red"), uniq("blue"));

    let (st, v) = api.call(Method::PUT, &format!("{base}/{red}"), None).await;
    assert_eq!((st, v), (201, Value::Null));
    let r = rev(&api.get(&port_path).await);
    assert!(r > last);
    last = r;
    api.expect(Method::PUT, &format!("{base}/{blue}"), None, 201).await;
    let v = api.get(&base).await;
    let mut want = vec![red.clone(), blue.clone()];
    want.sort();
    assert_eq!(v, json!({"tags": want}));
    api.expect(Method::GET, &format!("{base}/{red}"), None, 204).await;
    let nope = (404, "TagNotFound", "Tag nope could not be found.");
    api.refused(Method::GET, &format!("{base}/nope"), None, nope).await;

    // Tag filters.
    let id2 = s(&p2["id"]);
    api.expect(Method::PUT, &format!("/v2.0/ports/{id2}/tags/{red}"), None, 201)
        .await;
    let mut both = vec![id.clone(), id2.clone()];
    both.sort();
    for (filter, want) in [
        (format!("tags={red}"), both),
        (format!("tags={red},{blue}"), vec![id.clone()]),
        (format!("tags-any={blue},zz"), vec![id.clone()]),
        (format!("not-tags={red},{blue}"), vec![id2.clone()]),
        (format!("not-tags-any={blue}"), vec![id2.clone()]),
    ] {
        let v = api
            .get(&format!("/v2.0/ports?network_id={net}&fields=id&{filter}"))
            .await;
        assert_eq!(ids(&v, "ports"), want, "{filter}");
    }

    // Replace all.
    let v = api.put(&base, json!({"tags": ["z", "a"]})).await;
    assert_eq!(v, json!({"tags": ["z", "a"]}));
    assert_eq!(api.get(&base).await, json!({"tags": ["a", "z"]}));
    let r = rev(&api.get(&port_path).await);
    assert!(r > last);
    last = r;
    let duplicates = "Invalid input for operation: Duplicate items in the list: 'a'.";
    let twice = json!({"tags": ["a", "a"]});
    api.refused(Method::PUT, &base, Some(&twice), (400, "InvalidInput", duplicates))
        .await;
    // Length: 255 is fine, 256 is not.
    api.expect(Method::PUT, &format!("{base}/{}", "t".repeat(255)), None, 201)
        .await;
    let long = "u".repeat(256);
    let too_long = format!("Invalid input for operation: '{long}' exceeds maximum length of 255.");
    let long_path = format!("{base}/{long}");
    api.refused(Method::PUT, &long_path, None, (400, "InvalidInput", &too_long))
        .await;
    // Delete one, then all.
    api.delete(&format!("{base}/a")).await;
    api.expect(Method::DELETE, &format!("{base}/a"), None, 404).await;
    let r = rev(&api.get(&port_path).await);
    assert!(r > last);
    api.delete(&base).await;
    assert_eq!(api.get(&base).await, json!({"tags": []}));
    // Networks have tags too.
    api.expect(Method::PUT, &format!("/v2.0/networks/{net}/tags/{red}"), None, 201)
        .await;
    let v = api.get(&format!("/v2.0/networks?tags={red}&fields=id")).await;
    assert_eq!(v, json!({"networks": [{"id": net}]}));
    api.cleanup(&net).await;
});
