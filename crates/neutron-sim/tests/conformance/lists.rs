//! List filters, fields and pagination.

use super::*;

case!(list_filters_or_and_fields, |api| {
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.40.0.0/24", json!({})).await;
    let (a, b, c) = (uniq("dev"), uniq("dev"), uniq("dev"));
    let pa = api.port(json!({"network_id": net, "device_id": a, "name": "x"})).await;
    let pb = api.port(json!({"network_id": net, "device_id": b, "name": "y"})).await;
    let _pc = api
        .port(json!({"network_id": net, "device_id": c, "name": "x", "admin_state_up": false}))
        .await;

    let v = api
        .get(&format!(
            "/v2.0/ports?device_id={a}&device_id={b}&fields=id&fields=device_id"
        ))
        .await;
    let got: BTreeSet<(String, String)> = v["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| (s(&p["id"]), s(&p["device_id"])))
        .collect();
    assert_eq!(
        got,
        BTreeSet::from([(s(&pa["id"]), a.clone()), (s(&pb["id"]), b.clone())])
    );
    for p in v["ports"].as_array().expect("ports") {
        let keys: BTreeSet<&str> = p.as_object().expect("port").keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["device_id", "id"]));
    }
    // AND across attributes, OR within one.
    let v = api
        .get(&format!("/v2.0/ports?network_id={net}&name=x&fields=device_id"))
        .await;
    let got: BTreeSet<&str> = strings(&v["ports"], "device_id").into_iter().collect();
    assert_eq!(got, BTreeSet::from([a.as_str(), c.as_str()]));
    let v = api
        .get(&format!(
            "/v2.0/ports?network_id={net}&admin_state_up=false&fields=device_id"
        ))
        .await;
    assert_eq!(v["ports"], json!([{"device_id": c}]));
    let v = api
        .get(&format!("/v2.0/ports?device_id={}&fields=id", uniq("none")))
        .await;
    assert_eq!(v, json!({"ports": []}));
    // fixed_ips filters.
    let ip = s(&pa["fixed_ips"][0]["ip_address"]);
    let on_net = |filter: String| format!("/v2.0/ports?{filter}&network_id={net}&fields=id");
    let v = api.get(&on_net(format!("fixed_ips=ip_address%3D{ip}"))).await;
    assert_eq!(ids(&v, "ports"), vec![s(&pa["id"])]);
    let v = api
        .get(&on_net(format!("fixed_ips=subnet_id%3D{}", s(&sub["id"]))))
        .await;
    assert_eq!(ids(&v, "ports").len(), 3);
    // Unknown filter attribute.
    let unknown = (400, "HTTPBadRequest", "['foo'] is invalid attribute for filtering");
    api.refused(Method::GET, "/v2.0/ports?foo=bar", None, unknown).await;
    // Network filters.
    let v = api.get(&format!("/v2.0/networks?id={net}&fields=id&fields=mtu")).await;
    assert_eq!(v, json!({"networks": [{"id": net, "mtu": 1450}]}));
    api.cleanup(&net).await;
});

case!(pagination_links, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.70.0.0/24", json!({})).await;
    let mut all = Vec::new();
    for _ in 0..5 {
        all.push(s(&api.port(json!({"network_id": net})).await["id"]));
    }
    all.sort();
    let first = format!("/v2.0/ports?network_id={net}&fields=id&limit=2");
    let v = api.get(&first).await;
    assert_eq!(ids(&v, "ports"), all[..2].to_vec());
    assert_eq!(strings(&v["ports_links"], "rel"), ["next", "previous"]);
    let links = &v["ports_links"];
    let prefix = format!("{}/v2.0/ports?", api.base);
    assert_eq!(
        s(&links[0]["href"]),
        format!("{prefix}network_id={net}&fields=id&limit=2&marker={}", all[1])
    );
    assert_eq!(
        s(&links[1]["href"]),
        format!(
            "{prefix}network_id={net}&fields=id&limit=2&marker={}&page_reverse=True",
            all[0]
        )
    );
    // Follow next links to the end.
    let mut seen = ids(&v, "ports");
    let mut next = s(&links[0]["href"]);
    let mut pages = 1;
    loop {
        let v = api.get(&next[api.base.len()..]).await;
        pages += 1;
        seen.extend(ids(&v, "ports"));
        match v["ports_links"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["rel"] == "next"))
        {
            Some(l) => next = s(&l["href"]),
            None => break,
        }
        assert!(pages < 10);
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, all);
    // page_reverse from a marker returns the items before it, in order.
    let v = api
        .get(&format!(
            "/v2.0/ports?network_id={net}&fields=id&limit=2&marker={}&page_reverse=True",
            all[4]
        ))
        .await;
    assert_eq!(ids(&v, "ports"), all[2..4].to_vec());
    // A limit larger than the result gives only a "previous" link.
    let v = api
        .get(&format!("/v2.0/ports?network_id={net}&fields=id&limit=10"))
        .await;
    assert_eq!(ids(&v, "ports"), all);
    assert_eq!(strings(&v["ports_links"], "rel"), ["previous"]);
    // Bad limit / unknown marker.
    let bad_limit = (
        400,
        "BadRequest",
        "Bad limit request: Limit must be an integer 0 or greater and not 'abc'.",
    );
    api.refused(Method::GET, "/v2.0/ports?limit=abc", None, bad_limit).await;
    let missing = uuid::Uuid::new_v4();
    let not_found = format!("Port {missing} could not be found.");
    let after_missing = format!("/v2.0/ports?limit=2&marker={missing}");
    api.refused(Method::GET, &after_missing, None, (404, "PortNotFound", &not_found))
        .await;
    api.cleanup(&net).await;
});
