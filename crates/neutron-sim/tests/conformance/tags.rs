//! Tags: in a port POST body and the tag subresource.

use super::*;

case!(tags_in_port_post_body, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.50.0.0/24", json!({})).await;
    let tag = uniq("t");
    let p = api.port(json!({"network_id": net, "tags": ["b-tag", tag]})).await;
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports?tags={tag}&fields=id&fields=tags"),
            None,
            200,
        )
        .await;
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
    let (st, v) = api
        .call(
            Method::PUT,
            &format!("/v2.0/ports/{}", s(&p["id"])),
            Some(&json!({"port": {"tags": ["x"]}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Cannot update read-only attribute tags");
    api.cleanup(&net).await;
});

case!(tag_subresource, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.60.0.0/24", json!({})).await;
    let p = api.port(json!({"network_id": net})).await;
    let p2 = api.port(json!({"network_id": net})).await;
    let id = s(&p["id"]);
    let base = format!("/v2.0/ports/{id}/tags");
    let rev = |v: &Value| v["port"]["revision_number"].as_u64().expect("rev");
    let mut last = p["revision_number"].as_u64().expect("rev");
    let (red, blue) = (uniq("red"), uniq("blue"));

    let (st, v) = api.call(Method::PUT, &format!("{base}/{red}"), None).await;
    assert_eq!((st, v), (201, Value::Null));
    let r = rev(&api.ok(Method::GET, &format!("/v2.0/ports/{id}"), None, 200).await);
    assert!(r > last);
    last = r;
    api.ok(Method::PUT, &format!("{base}/{blue}"), None, 201).await;
    let v = api.ok(Method::GET, &base, None, 200).await;
    let mut want = vec![red.clone(), blue.clone()];
    want.sort();
    assert_eq!(v, json!({"tags": want}));
    api.ok(Method::GET, &format!("{base}/{red}"), None, 204).await;
    let (st, v) = api.call(Method::GET, &format!("{base}/nope"), None).await;
    assert_eq!(st, 404);
    assert_error(&v, "TagNotFound", "Tag nope could not be found.");

    // Tag filters.
    api.ok(
        Method::PUT,
        &format!("/v2.0/ports/{}/tags/{red}", s(&p2["id"])),
        None,
        201,
    )
    .await;
    let q = |f: &str| format!("/v2.0/ports?network_id={net}&fields=id&{f}");
    let mut both = vec![id.clone(), s(&p2["id"])];
    both.sort();
    assert_eq!(
        ids(
            &api.ok(Method::GET, &q(&format!("tags={red}")), None, 200).await,
            "ports"
        ),
        both
    );
    assert_eq!(
        ids(
            &api.ok(Method::GET, &q(&format!("tags={red},{blue}")), None, 200).await,
            "ports"
        ),
        vec![id.clone()]
    );
    assert_eq!(
        ids(
            &api.ok(Method::GET, &q(&format!("tags-any={blue},zz")), None, 200).await,
            "ports"
        ),
        vec![id.clone()]
    );
    assert_eq!(
        ids(
            &api.ok(Method::GET, &q(&format!("not-tags={red},{blue}")), None, 200)
                .await,
            "ports"
        ),
        vec![s(&p2["id"])]
    );
    assert_eq!(
        ids(
            &api.ok(Method::GET, &q(&format!("not-tags-any={blue}")), None, 200)
                .await,
            "ports"
        ),
        vec![s(&p2["id"])]
    );

    // Replace all.
    let v = api
        .ok(Method::PUT, &base, Some(&json!({"tags": ["z", "a"]})), 200)
        .await;
    assert_eq!(v, json!({"tags": ["z", "a"]}));
    assert_eq!(api.ok(Method::GET, &base, None, 200).await, json!({"tags": ["a", "z"]}));
    let r = rev(&api.ok(Method::GET, &format!("/v2.0/ports/{id}"), None, 200).await);
    assert!(r > last);
    last = r;
    let (st, v) = api.call(Method::PUT, &base, Some(&json!({"tags": ["a", "a"]}))).await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "InvalidInput",
        "Invalid input for operation: Duplicate items in the list: 'a'.",
    );
    // Length: 255 is fine, 256 is not.
    api.ok(Method::PUT, &format!("{base}/{}", "t".repeat(255)), None, 201)
        .await;
    let long = "u".repeat(256);
    let (st, v) = api.call(Method::PUT, &format!("{base}/{long}"), None).await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "InvalidInput",
        &format!("Invalid input for operation: '{long}' exceeds maximum length of 255."),
    );
    // Delete one, then all.
    api.ok(Method::DELETE, &format!("{base}/a"), None, 204).await;
    let (st, _) = api.call(Method::DELETE, &format!("{base}/a"), None).await;
    assert_eq!(st, 404);
    let r = rev(&api.ok(Method::GET, &format!("/v2.0/ports/{id}"), None, 200).await);
    assert!(r > last);
    api.ok(Method::DELETE, &base, None, 204).await;
    assert_eq!(api.ok(Method::GET, &base, None, 200).await, json!({"tags": []}));
    // Networks have tags too.
    api.ok(Method::PUT, &format!("/v2.0/networks/{net}/tags/{red}"), None, 201)
        .await;
    let v = api
        .ok(Method::GET, &format!("/v2.0/networks?tags={red}&fields=id"), None, 200)
        .await;
    assert_eq!(v, json!({"networks": [{"id": net}]}));
    api.cleanup(&net).await;
});
