//! HTTP-level conformance cases, run against the embedded simulator (always, with and
//! without `tag-ports-during-bulk-creation`) and against a real Neutron 29.0.0 when
//! `NEUTRON_CONFORMANCE_URL` is set (`NEUTRON_CONFORMANCE_TAG_EXTENSION=0|1` says whether
//! that server has the tag extension; default 1). Plain reqwest + serde_json only; every
//! case creates its own uniquely named resources and deletes them. Admin noauth: no
//! X-Project-Id header.

use std::collections::BTreeSet;

use neutron_sim::{NeutronSim, RunningSim, SimConfig};
use reqwest::Method;
use serde_json::{Value, json};

struct Api {
    name: String,
    base: String,
    tag_ext: bool,
    http: reqwest::Client,
}

struct Target {
    api: Api,
    sim: Option<RunningSim>,
}

impl Target {
    async fn stop(self) {
        if let Some(s) = self.sim {
            s.shutdown().await;
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client")
}

async fn targets() -> Vec<Target> {
    let mut out = Vec::new();
    for (name, cfg) in [
        ("sim", SimConfig::default()),
        (
            "sim-without-tag-ext",
            SimConfig::default().without_extension("tag-ports-during-bulk-creation"),
        ),
    ] {
        let tag_ext = cfg.extensions.is_none();
        let sim = NeutronSim::start(cfg, "127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("start sim");
        out.push(Target {
            api: Api {
                name: name.into(),
                base: sim.url(),
                tag_ext,
                http: client(),
            },
            sim: Some(sim),
        });
    }
    if let Ok(url) = std::env::var("NEUTRON_CONFORMANCE_URL") {
        let base = url.trim_end_matches('/').trim_end_matches("/v2.0").to_string();
        let tag_ext = std::env::var("NEUTRON_CONFORMANCE_TAG_EXTENSION")
            .map(|v| v != "0")
            .unwrap_or(true);
        let name = if tag_ext { "real" } else { "real-without-tag-ext" };
        out.push(Target {
            api: Api {
                name: name.into(),
                base,
                tag_ext,
                http: client(),
            },
            sim: None,
        });
    }
    out
}

/// Runs the body once per target, printing `[target] case` so failures name their server.
macro_rules! case {
    ($name:ident, |$api:ident| $body:block) => {
        #[tokio::test]
        async fn $name() {
            for target in targets().await {
                let $api = &target.api;
                println!("[{}] {} ...", $api.name, stringify!($name));
                $body
                println!("[{}] {} ok", $api.name, stringify!($name));
                target.stop().await;
            }
        }
    };
}

fn uniq(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}")).to_string()
}

impl Api {
    async fn call_h(&self, method: Method, path: &str, body: Option<&Value>, headers: &[(&str, &str)]) -> (u16, Value) {
        let mut rb = self.http.request(method, format!("{}{path}", self.base));
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let resp = rb.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        let v = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, v)
    }
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.call_h(method, path, body, &[]).await
    }
    async fn raw(&self, method: Method, path: &str, body: &str) -> (u16, Value) {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
    async fn ok(&self, method: Method, path: &str, body: Option<&Value>, want: u16) -> Value {
        let (st, v) = self.call(method.clone(), path, body).await;
        assert_eq!(st, want, "{method} {path}: {v}");
        v
    }
    async fn network(&self, extra: Value) -> String {
        let mut body = json!({"name": uniq("conf")});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let v = self
            .ok(Method::POST, "/v2.0/networks", Some(&json!({"network": body})), 201)
            .await;
        s(&v["network"]["id"])
    }
    async fn subnet(&self, net: &str, cidr: &str, extra: Value) -> Value {
        let v6 = cidr.contains(':');
        let mut body = json!({"network_id": net, "ip_version": if v6 { 6 } else { 4 }, "cidr": cidr});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        self.ok(Method::POST, "/v2.0/subnets", Some(&json!({"subnet": body})), 201)
            .await["subnet"]
            .clone()
    }
    async fn port(&self, body: Value) -> Value {
        self.ok(Method::POST, "/v2.0/ports", Some(&json!({"port": body})), 201)
            .await["port"]
            .clone()
    }
    /// Deletes every port of the network (as admin) then the network.
    async fn cleanup(&self, net: &str) {
        let (_, v) = self
            .call(Method::GET, &format!("/v2.0/ports?network_id={net}&fields=id"), None)
            .await;
        for p in v["ports"].as_array().cloned().unwrap_or_default() {
            self.call(Method::DELETE, &format!("/v2.0/ports/{}", s(&p["id"])), None)
                .await;
        }
        let (st, v) = self.call(Method::DELETE, &format!("/v2.0/networks/{net}"), None).await;
        assert_eq!(st, 204, "cleanup of network {net}: {v}");
    }
}

fn assert_error(v: &Value, kind: &str, message: &str) {
    assert_eq!(
        v,
        &json!({"NeutronError": {"type": kind, "message": message, "detail": ""}})
    );
}

fn is_timestamp(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|t| t.len() == 20 && t.ends_with('Z') && &t[10..11] == "T")
}

fn eui64(prefix: &str, mac: &str) -> String {
    let b: Vec<u8> = mac
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).expect("mac"))
        .collect();
    let iid = u64::from_be_bytes([b[0] ^ 2, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]]);
    let p: std::net::Ipv6Addr = prefix.parse().expect("prefix");
    std::net::Ipv6Addr::from(u128::from(p) | u128::from(iid)).to_string()
}

fn ids(v: &Value, coll: &str) -> Vec<String> {
    v[coll]
        .as_array()
        .expect("collection")
        .iter()
        .map(|p| s(&p["id"]))
        .collect()
}

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

case!(network_and_subnet_crud, |api| {
    let name = uniq("net");
    let v = api
        .ok(
            Method::POST,
            "/v2.0/networks",
            Some(&json!({"network": {"name": name}})),
            201,
        )
        .await;
    let n = &v["network"];
    let net = s(&n["id"]);
    assert_eq!(n["name"], name.as_str());
    assert_eq!(n["status"], "ACTIVE");
    assert_eq!(n["mtu"], 1450);
    assert_eq!(n["subnets"], json!([]));
    assert_eq!(n["shared"], false);
    assert_eq!(n["router:external"], false);
    assert_eq!(n["admin_state_up"], true);
    assert_eq!(n["project_id"], "fake_project_id");
    assert_eq!(n["tenant_id"], "fake_project_id");
    assert!(is_timestamp(&n["created_at"]) && is_timestamp(&n["updated_at"]), "{n}");
    let rev0 = n["revision_number"].as_u64().expect("revision");

    let s4 = api.subnet(&net, "10.20.0.0/24", json!({})).await;
    assert_eq!(s4["gateway_ip"], "10.20.0.1");
    assert_eq!(
        s4["allocation_pools"],
        json!([{"start": "10.20.0.2", "end": "10.20.0.254"}])
    );
    assert_eq!(s4["enable_dhcp"], true);
    assert_eq!(s4["ip_version"], 4);
    assert_eq!(s4["dns_nameservers"], json!([]));
    assert_eq!(s4["host_routes"], json!([]));
    assert_eq!(s4["ipv6_address_mode"], Value::Null);
    let s6 = api
        .subnet(
            &net,
            "fd00:20::/64",
            json!({"ipv6_address_mode": "slaac", "ipv6_ra_mode": "slaac"}),
        )
        .await;
    assert_eq!(s6["gateway_ip"], "fd00:20::");
    assert_eq!(
        s6["allocation_pools"],
        json!([{"start": "fd00:20::1", "end": "fd00:20::ffff:ffff:ffff:ffff"}])
    );
    assert_eq!(s6["ipv6_address_mode"], "slaac");
    let s29 = api
        .subnet(
            &net,
            "10.21.0.0/29",
            json!({"gateway_ip": "10.21.0.6", "enable_dhcp": false, "dns_nameservers": ["8.8.8.8"]}),
        )
        .await;
    assert_eq!(
        s29["allocation_pools"],
        json!([{"start": "10.21.0.1", "end": "10.21.0.5"}])
    );
    assert_eq!(s29["dns_nameservers"], json!(["8.8.8.8"]));

    let v = api.ok(Method::GET, &format!("/v2.0/networks/{net}"), None, 200).await;
    let subnets: BTreeSet<String> = v["network"]["subnets"]
        .as_array()
        .expect("subnets")
        .iter()
        .map(s)
        .collect();
    assert_eq!(subnets, BTreeSet::from([s(&s4["id"]), s(&s6["id"]), s(&s29["id"])]));

    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/subnets?network_id={net}&ip_version=6&fields=id&fields=cidr"),
            None,
            200,
        )
        .await;
    assert_eq!(v["subnets"], json!([{"id": s6["id"], "cidr": "fd00:20::/64"}]));

    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/networks/{net}"),
            Some(&json!({"network": {"name": "renamed"}})),
            200,
        )
        .await;
    assert_eq!(v["network"]["name"], "renamed");
    assert!(v["network"]["revision_number"].as_u64().expect("rev") > rev0);
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/subnets/{}", s(&s29["id"])),
            Some(&json!({"subnet": {"name": "s29"}})),
            200,
        )
        .await;
    assert_eq!(v["subnet"]["name"], "s29");

    api.ok(Method::DELETE, &format!("/v2.0/subnets/{}", s(&s29["id"])), None, 204)
        .await;
    let (st, v) = api
        .call(Method::GET, &format!("/v2.0/subnets/{}", s(&s29["id"])), None)
        .await;
    assert_eq!(st, 404);
    assert_error(
        &v,
        "SubnetNotFound",
        &format!("Subnet {} could not be found.", s(&s29["id"])),
    );
    api.ok(Method::DELETE, &format!("/v2.0/networks/{net}"), None, 204)
        .await;
    let (st, v) = api.call(Method::GET, &format!("/v2.0/networks/{net}"), None).await;
    assert_eq!(st, 404);
    assert_error(&v, "NetworkNotFound", &format!("Network {net} could not be found."));
});

case!(port_crud_binding_and_dual_stack, |api| {
    let net = api.network(json!({})).await;
    let s4 = api.subnet(&net, "10.30.0.0/24", json!({})).await;
    let s6 = api
        .subnet(
            &net,
            "fd00:30::/64",
            json!({"ipv6_address_mode": "slaac", "ipv6_ra_mode": "slaac"}),
        )
        .await;
    let device = uuid::Uuid::new_v4().to_string();
    // binding:profile is service-only by policy, even for admin.
    let body = json!({"port": {"network_id": net, "device_id": device, "binding:host_id": "host1", "binding:profile": {"k": "v"}}});
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&body)).await;
    assert_eq!(st, 403);
    assert_error(
        &v,
        "PolicyNotAuthorized",
        "(((rule:create_port and rule:create_port:device_id) and rule:create_port:binding:host_id) and rule:create_port:binding:profile) is disallowed by policy",
    );
    let p = api
        .port(json!({
            "network_id": net, "name": "p1", "description": "d", "device_id": device, "device_owner": "compute:nova",
            "binding:host_id": "host1", "binding:vnic_type": "normal",
        }))
        .await;
    let id = s(&p["id"]);
    assert_eq!(p["status"], "ACTIVE");
    assert_eq!(p["binding:vif_type"], "ovs");
    assert_eq!(p["binding:vif_details"]["port_filter"], true);
    assert_eq!(p["binding:vif_details"]["ovs_hybrid_plug"], false);
    assert_eq!(p["binding:host_id"], "host1");
    assert_eq!(p["binding:profile"], json!({}));
    assert_eq!(p["device_id"], device.as_str());
    assert_eq!(p["project_id"], "fake_project_id");
    assert_eq!(p["tenant_id"], "fake_project_id");
    assert_eq!(p["tags"], json!([]));
    assert_eq!(p["security_groups"].as_array().map(Vec::len), Some(1));
    let mac = s(&p["mac_address"]);
    assert!(mac.starts_with("fa:16:3e:") && mac.len() == 17, "{mac}");
    let ips = p["fixed_ips"].as_array().expect("fixed_ips");
    assert_eq!(ips.len(), 2, "{p}");
    assert_eq!(ips[0]["subnet_id"], s4["id"]);
    assert!(s(&ips[0]["ip_address"]).starts_with("10.30.0."));
    assert_eq!(ips[1]["subnet_id"], s6["id"]);
    assert_eq!(s(&ips[1]["ip_address"]), eui64("fd00:30::", &mac));
    assert!(is_timestamp(&p["created_at"]));
    let rev = p["revision_number"].as_u64().expect("rev");

    let v = api.ok(Method::GET, &format!("/v2.0/ports/{id}"), None, 200).await;
    assert_eq!(v["port"]["mac_address"], mac.as_str());
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports/{id}?fields=id&fields=status"),
            None,
            200,
        )
        .await;
    assert_eq!(v, json!({"port": {"id": id, "status": "ACTIVE"}}));

    let (st, v) = api
        .call(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"name": "x", "binding:profile": {}}})),
        )
        .await;
    assert_eq!(st, 403);
    assert_error(
        &v,
        "PolicyNotAuthorized",
        "(rule:update_port and rule:update_port:binding:profile) is disallowed by policy",
    );
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"name": "p1b"}})),
            200,
        )
        .await;
    assert_eq!(v["port"]["name"], "p1b");
    let rev2 = v["port"]["revision_number"].as_u64().expect("rev");
    assert!(rev2 > rev, "{rev2} > {rev}");
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"binding:host_id": ""}})),
            200,
        )
        .await;
    assert_eq!(v["port"]["status"], "DOWN");
    assert_eq!(v["port"]["binding:vif_type"], "unbound");
    assert_eq!(v["port"]["binding:vif_details"], json!({}));
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"device_id": "", "device_owner": ""}})),
            200,
        )
        .await;
    assert_eq!(v["port"]["device_id"], "");

    // A port created without a host stays DOWN/unbound.
    let p2 = api
        .port(json!({"network_id": net, "fixed_ips": [{"subnet_id": s4["id"], "ip_address": "10.30.0.77"}]}))
        .await;
    assert_eq!(p2["status"], "DOWN");
    assert_eq!(p2["binding:vif_type"], "unbound");
    // The SLAAC subnet auto-addresses the port even when only an IPv4 address is requested.
    let slaac = json!({"subnet_id": s6["id"], "ip_address": eui64("fd00:30::", &s(&p2["mac_address"]))});
    assert_eq!(
        p2["fixed_ips"],
        json!([{"subnet_id": s4["id"], "ip_address": "10.30.0.77"}, slaac])
    );
    // Changing fixed IPs keeps the SLAAC address.
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/ports/{}", s(&p2["id"])),
            Some(&json!({"port": {"fixed_ips": [{"ip_address": "10.30.0.78"}]}})),
            200,
        )
        .await;
    assert_eq!(
        v["port"]["fixed_ips"],
        json!([{"subnet_id": s4["id"], "ip_address": "10.30.0.78"}, slaac])
    );

    api.ok(Method::DELETE, &format!("/v2.0/ports/{id}"), None, 204).await;
    let (st, v) = api.call(Method::GET, &format!("/v2.0/ports/{id}"), None).await;
    assert_eq!(st, 404);
    assert_error(&v, "PortNotFound", &format!("Port {id} could not be found."));
    let (st, _) = api.call(Method::DELETE, &format!("/v2.0/ports/{id}"), None).await;
    assert_eq!(st, 404);
    api.cleanup(&net).await;
});

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
        .ok(
            Method::GET,
            &format!("/v2.0/ports?device_id={a}&device_id={b}&fields=id&fields=device_id"),
            None,
            200,
        )
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
        .ok(
            Method::GET,
            &format!("/v2.0/ports?network_id={net}&name=x&fields=device_id"),
            None,
            200,
        )
        .await;
    let got: BTreeSet<String> = v["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| s(&p["device_id"]))
        .collect();
    assert_eq!(got, BTreeSet::from([a.clone(), c.clone()]));
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports?network_id={net}&admin_state_up=false&fields=device_id"),
            None,
            200,
        )
        .await;
    assert_eq!(v["ports"], json!([{"device_id": c}]));
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports?device_id={}&fields=id", uniq("none")),
            None,
            200,
        )
        .await;
    assert_eq!(v, json!({"ports": []}));
    // fixed_ips filters.
    let ip = s(&pa["fixed_ips"][0]["ip_address"]);
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports?fixed_ips=ip_address%3D{ip}&network_id={net}&fields=id"),
            None,
            200,
        )
        .await;
    assert_eq!(ids(&v, "ports"), vec![s(&pa["id"])]);
    let v = api
        .ok(
            Method::GET,
            &format!(
                "/v2.0/ports?fixed_ips=subnet_id%3D{}&network_id={net}&fields=id",
                s(&sub["id"])
            ),
            None,
            200,
        )
        .await;
    assert_eq!(ids(&v, "ports").len(), 3);
    // Unknown filter attribute.
    let (st, v) = api.call(Method::GET, "/v2.0/ports?foo=bar", None).await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "['foo'] is invalid attribute for filtering");
    // Network filters.
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/networks?id={net}&fields=id&fields=mtu"),
            None,
            200,
        )
        .await;
    assert_eq!(v, json!({"networks": [{"id": net, "mtu": 1450}]}));
    api.cleanup(&net).await;
});

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

case!(pagination_links, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.70.0.0/24", json!({})).await;
    let mut all = Vec::new();
    for _ in 0..5 {
        all.push(s(&api.port(json!({"network_id": net})).await["id"]));
    }
    all.sort();
    let first = format!("/v2.0/ports?network_id={net}&fields=id&limit=2");
    let v = api.ok(Method::GET, &first, None, 200).await;
    assert_eq!(ids(&v, "ports"), all[..2].to_vec());
    let links = v["ports_links"].as_array().expect("links");
    let rels: Vec<&str> = links.iter().filter_map(|l| l["rel"].as_str()).collect();
    assert_eq!(rels, ["next", "previous"]);
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
        let (st, v) = api.call(Method::GET, &next[api.base.len()..], None).await;
        assert_eq!(st, 200);
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
        .ok(
            Method::GET,
            &format!(
                "/v2.0/ports?network_id={net}&fields=id&limit=2&marker={}&page_reverse=True",
                all[4]
            ),
            None,
            200,
        )
        .await;
    assert_eq!(ids(&v, "ports"), all[2..4].to_vec());
    // A limit larger than the result gives only a "previous" link.
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports?network_id={net}&fields=id&limit=10"),
            None,
            200,
        )
        .await;
    assert_eq!(ids(&v, "ports"), all);
    let rels: Vec<&str> = v["ports_links"]
        .as_array()
        .expect("links")
        .iter()
        .filter_map(|l| l["rel"].as_str())
        .collect();
    assert_eq!(rels, ["previous"]);
    // Bad limit / unknown marker.
    let (st, v) = api.call(Method::GET, "/v2.0/ports?limit=abc", None).await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "BadRequest",
        "Bad limit request: Limit must be an integer 0 or greater and not 'abc'.",
    );
    let missing = uuid::Uuid::new_v4();
    let (st, v) = api
        .call(Method::GET, &format!("/v2.0/ports?limit=2&marker={missing}"), None)
        .await;
    assert_eq!(st, 404);
    assert_error(&v, "PortNotFound", &format!("Port {missing} could not be found."));
    api.cleanup(&net).await;
});

case!(if_match_revision_412, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.80.0.0/24", json!({})).await;
    let p = api.port(json!({"network_id": net})).await;
    let id = s(&p["id"]);
    let rev = p["revision_number"].as_u64().expect("rev");
    let wrong = format!("revision_number={}", rev + 7);
    let (st, v) = api
        .call_h(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"name": "n"}})),
            &[("If-Match", &wrong)],
        )
        .await;
    assert_eq!(st, 412);
    assert_error(
        &v,
        "RevisionNumberConstraintFailed",
        &format!("Constrained to {}, but current revision is {rev}", rev + 7),
    );
    let right = format!("revision_number={rev}");
    let (st, v) = api
        .call_h(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"name": "n"}})),
            &[("If-Match", &right)],
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let rev2 = v["port"]["revision_number"].as_u64().expect("rev");
    let (st, _) = api
        .call_h(
            Method::DELETE,
            &format!("/v2.0/ports/{id}"),
            None,
            &[("If-Match", &right)],
        )
        .await;
    assert_eq!(st, 412);
    let right2 = format!("revision_number={rev2}");
    let (st, _) = api
        .call_h(
            Method::DELETE,
            &format!("/v2.0/ports/{id}"),
            None,
            &[("If-Match", &right2)],
        )
        .await;
    assert_eq!(st, 204);
    api.cleanup(&net).await;
});

case!(id_in_post_and_bad_input_400, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.90.0.0/24", json!({})).await;
    let body = json!({"port": {"network_id": net, "id": uuid::Uuid::new_v4().to_string()}});
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&body)).await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Attribute 'id' not allowed in POST");
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": net, "foo": 1}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Unrecognized attribute(s) 'foo'");
    let (st, v) = api
        .raw(Method::POST, "/v2.0/ports", "{\"port\": {\"network_id\": ")
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Body contains invalid data");
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&json!({}))).await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Unable to find 'port' in request body");
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&json!({"port": {}}))).await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "HTTPBadRequest",
        "Failed to parse request. Required attribute 'network_id' not specified",
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": "nonexist"}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "HTTPBadRequest",
        "Invalid input for network_id. Reason: 'nonexist' is not a valid UUID.",
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": net, "admin_state_up": "x"}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "InvalidInput",
        "Invalid input for operation: 'x' cannot be converted to boolean.",
    );
    let missing = uuid::Uuid::new_v4().to_string();
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": missing}})),
        )
        .await;
    assert_eq!(st, 404);
    assert_error(&v, "NetworkNotFound", &format!("Network {missing} could not be found."));
    let p = api.port(json!({"network_id": net})).await;
    let (st, v) = api
        .call(
            Method::PUT,
            &format!("/v2.0/ports/{}", s(&p["id"])),
            Some(&json!({"port": {"network_id": net}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Cannot update read-only attribute network_id");
    let (st, v) = api
        .call(
            Method::PUT,
            &format!("/v2.0/ports/{}", s(&p["id"])),
            Some(&json!({"port": {"bar": 1}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Unrecognized attribute(s) 'bar'");
    // Unknown routes.
    let (st, v) = api.call(Method::GET, "/v2.0/nonexistent", None).await;
    assert_eq!(st, 404);
    assert_error(&v, "HTTPNotFound", "The resource could not be found.");
    let (st, v) = api
        .call(Method::GET, &format!("/v2.0/floatingips/{missing}"), None)
        .await;
    assert_eq!(st, 404);
    assert_error(
        &v,
        "FloatingIPNotFound",
        &format!("Floating IP {missing} could not be found"),
    );
    let (st, v) = api.call(Method::GET, &format!("/v2.0/routers/{missing}"), None).await;
    assert_eq!(st, 404);
    assert_error(&v, "RouterNotFound", &format!("Router {missing} could not be found"));
    api.cleanup(&net).await;
});

case!(ip_exhaustion_and_already_allocated_409, |api| {
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.99.0.0/29", json!({})).await;
    let taken = api
        .port(json!({"network_id": net, "fixed_ips": [{"ip_address": "10.99.0.5"}]}))
        .await;
    assert_eq!(
        taken["fixed_ips"],
        json!([{"subnet_id": sub["id"], "ip_address": "10.99.0.5"}])
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": net, "fixed_ips": [{"ip_address": "10.99.0.5"}]}})),
        )
        .await;
    assert_eq!(st, 409);
    assert_error(
        &v,
        "IpAddressAlreadyAllocated",
        &format!("IP address 10.99.0.5 already allocated in subnet {}", s(&sub["id"])),
    );
    let body = json!({"port": {"network_id": net, "fixed_ips": [{"subnet_id": sub["id"], "ip_address": "10.99.0.5"}]}});
    let (st, _) = api.call(Method::POST, "/v2.0/ports", Some(&body)).await;
    assert_eq!(st, 409);
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": net, "fixed_ips": [{"ip_address": "10.98.0.5"}]}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "InvalidIpForNetwork",
        "IP address 10.98.0.5 is not a valid IP for any of the subnets on the specified network.",
    );
    // 5 addresses in the pool (.2-.6): one taken, four more fit, the fifth fails.
    for _ in 0..4 {
        api.port(json!({"network_id": net})).await;
    }
    let (st, v) = api
        .call(Method::POST, "/v2.0/ports", Some(&json!({"port": {"network_id": net}})))
        .await;
    assert_eq!(st, 409);
    assert_error(
        &v,
        "IpAddressGenerationFailure",
        &format!("No more IP addresses available on network {net}."),
    );
    let (st, v) = api
        .call(Method::DELETE, &format!("/v2.0/subnets/{}", s(&sub["id"])), None)
        .await;
    assert_eq!(st, 409);
    assert_eq!(v["NeutronError"]["type"], "SubnetInUse");
    let (st, v) = api.call(Method::DELETE, &format!("/v2.0/networks/{net}"), None).await;
    assert_eq!(st, 409);
    assert_eq!(v["NeutronError"]["type"], "NetworkInUse");
    // Freeing one address makes room again.
    api.ok(Method::DELETE, &format!("/v2.0/ports/{}", s(&taken["id"])), None, 204)
        .await;
    let p = api.port(json!({"network_id": net})).await;
    assert_eq!(p["fixed_ips"][0]["ip_address"], "10.99.0.5");
    api.cleanup(&net).await;
});

case!(floating_ip_association, |api| {
    let ext = api.network(json!({"router:external": true})).await;
    let ext_sub = api.subnet(&ext, "172.24.40.0/24", json!({"enable_dhcp": false})).await;
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.100.0.0/24", json!({})).await;
    let device = uuid::Uuid::new_v4().to_string();
    let port = api
        .port(json!({"network_id": net, "device_id": device, "device_owner": "compute:nova", "binding:host_id": "h1"}))
        .await;
    let pid = s(&port["id"]);
    // Not reachable without a router.
    let body = json!({"floatingip": {"floating_network_id": ext, "port_id": pid}});
    let (st, v) = api.call(Method::POST, "/v2.0/floatingips", Some(&body)).await;
    assert_eq!(st, 404);
    assert_error(
        &v,
        "ExternalGatewayForFloatingIPNotFound",
        &format!(
            "External network {ext} is not reachable from subnet {}.  Therefore, cannot associate Port {pid} with a Floating IP.",
            s(&sub["id"])
        ),
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/floatingips",
            Some(&json!({"floatingip": {"floating_network_id": net}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "BadRequest",
        &format!("Bad floatingip request: Network {net} is not a valid external network."),
    );

    let v = api
        .ok(
            Method::POST,
            "/v2.0/routers",
            Some(&json!({"router": {"name": uniq("r"), "external_gateway_info": {"network_id": ext}}})),
            201,
        )
        .await;
    let router = s(&v["router"]["id"]);
    assert_eq!(v["router"]["external_gateway_info"]["network_id"], ext.as_str());
    assert_eq!(
        v["router"]["external_gateway_info"]["external_fixed_ips"][0]["subnet_id"],
        ext_sub["id"]
    );
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/routers/{router}/add_router_interface"),
            Some(&json!({"subnet_id": sub["id"]})),
            200,
        )
        .await;
    assert_eq!(v["id"], router.as_str());
    assert_eq!(v["subnet_id"], sub["id"]);
    assert_eq!(v["network_id"], net.as_str());

    let v = api.ok(Method::POST, "/v2.0/floatingips", Some(&body), 201).await;
    let f = &v["floatingip"];
    let fid = s(&f["id"]);
    let fip_addr = s(&f["floating_ip_address"]);
    assert!(fip_addr.starts_with("172.24.40."), "{f}");
    assert_eq!(f["port_id"], pid.as_str());
    assert_eq!(f["router_id"], router.as_str());
    assert_eq!(f["fixed_ip_address"], port["fixed_ips"][0]["ip_address"]);
    assert_eq!(f["floating_network_id"], ext.as_str());
    assert_eq!(f["status"], "DOWN");
    let pd = &f["port_details"];
    for k in [
        "name",
        "network_id",
        "mac_address",
        "admin_state_up",
        "status",
        "device_id",
        "device_owner",
    ] {
        assert_eq!(pd[k], port[k], "port_details.{k}");
    }
    assert_eq!(pd.as_object().map(|o| o.len()), Some(7));
    // Filters.
    for q in [
        format!("port_id={pid}"),
        format!("floating_ip_address={fip_addr}"),
        format!(
            "fixed_ip_address={}&floating_network_id={ext}",
            s(&f["fixed_ip_address"])
        ),
    ] {
        let v = api
            .ok(Method::GET, &format!("/v2.0/floatingips?{q}&fields=id"), None, 200)
            .await;
        assert_eq!(v, json!({"floatingips": [{"id": fid}]}), "{q}");
    }
    // Disassociate and reassociate.
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/floatingips/{fid}"),
            Some(&json!({"floatingip": {"port_id": null}})),
            200,
        )
        .await;
    assert_eq!(v["floatingip"]["port_id"], Value::Null);
    assert_eq!(v["floatingip"]["port_details"], Value::Null);
    assert_eq!(v["floatingip"]["fixed_ip_address"], Value::Null);
    assert_eq!(v["floatingip"]["router_id"], Value::Null);
    let v = api
        .ok(Method::GET, &format!("/v2.0/floatingips?port_id={pid}"), None, 200)
        .await;
    assert_eq!(v, json!({"floatingips": []}));
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/floatingips/{fid}"),
            Some(&json!({"floatingip": {"port_id": pid}})),
            200,
        )
        .await;
    assert_eq!(v["floatingip"]["port_id"], pid.as_str());
    assert_eq!(v["floatingip"]["port_details"]["mac_address"], port["mac_address"]);
    // The FIP's port revision is not bumped by association.
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports/{pid}?fields=revision_number"),
            None,
            200,
        )
        .await;
    assert_eq!(v["port"]["revision_number"], port["revision_number"]);
    // Router in use while it has an interface.
    let (st, v) = api.call(Method::DELETE, &format!("/v2.0/routers/{router}"), None).await;
    assert_eq!(st, 409);
    assert_eq!(v["NeutronError"]["type"], "RouterInUse");
    // Tear down.
    api.ok(Method::DELETE, &format!("/v2.0/floatingips/{fid}"), None, 204)
        .await;
    let (st, _) = api.call(Method::GET, &format!("/v2.0/floatingips/{fid}"), None).await;
    assert_eq!(st, 404);
    api.ok(Method::DELETE, &format!("/v2.0/ports/{pid}"), None, 204).await;
    api.ok(
        Method::PUT,
        &format!("/v2.0/routers/{router}/remove_router_interface"),
        Some(&json!({"subnet_id": sub["id"]})),
        200,
    )
    .await;
    api.ok(Method::DELETE, &format!("/v2.0/routers/{router}"), None, 204)
        .await;
    api.cleanup(&net).await;
    api.cleanup(&ext).await;
});
