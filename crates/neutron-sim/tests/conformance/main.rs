//! HTTP-level conformance cases, run against the embedded simulator (always, with and
//! without `tag-ports-during-bulk-creation`) and against a real Neutron 29.0.0 when
//! `NEUTRON_CONFORMANCE_URL` is set (`NEUTRON_CONFORMANCE_TAG_EXTENSION=0|1` says whether
//! that server has the tag extension; default 1). Plain reqwest + serde_json only; every
//! case creates its own uniquely named resources and deletes them. Admin noauth: no
//! X-Project-Id header.
//!
//! A `harness = false` target (`netcache-testenv`): each case is a trial per server,
//! `AREA::CASE::sim`, `::sim_without_tag_ext` and `::real`; without
//! `NEUTRON_CONFORMANCE_URL` the last is reported ignored (failed with
//! `NETCACHE_TEST_REQUIRE_ENV=1`). A case is a `case!` in its area's file and a line
//! of `CASES` below; a `#[test]` here would never run.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;

use netcache_testenv::{Trial, block_on, needs, plain};
use neutron_sim::{NeutronSim, SimConfig};
use reqwest::Method;
use serde_json::{Value, json};

/// What a refused call must answer: its status, and its `NeutronError`'s type and message.
type Refusal<'a> = (u16, &'a str, &'a str);

struct Api {
    base: String,
    tag_ext: bool,
    http: reqwest::Client,
}

/// The variable naming a real Neutron to run the cases against too.
const REAL_URL: &str = "NEUTRON_CONFORMANCE_URL";

/// A case: its body against one server.
type Case = for<'a> fn(&'a Api) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client")
}

/// The case against the embedded Neutron, started for it with `cfg`.
async fn on_sim(case: Case, cfg: SimConfig) {
    let tag_ext = cfg.extensions.is_none();
    let sim = NeutronSim::start(cfg, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("start sim");
    let api = Api {
        base: sim.url(),
        tag_ext,
        http: client(),
    };
    case(&api).await;
    sim.shutdown().await;
}

/// The case against the real Neutron at `url`.
async fn on_real(case: Case, url: &str) {
    let base = url.trim_end_matches('/').trim_end_matches("/v2.0").to_string();
    let tag_ext = std::env::var("NEUTRON_CONFORMANCE_TAG_EXTENSION").map_or(true, |v| v != "0");
    let api = Api {
        base,
        tag_ext,
        http: client(),
    };
    case(&api).await;
}

/// The trials of one case: the embedded Neutron with and without the tag
/// extension, and the real one when `NEUTRON_CONFORMANCE_URL` names it.
fn trials(name: &str, case: Case) -> [Trial; 3] {
    [
        plain(format!("{name}::sim"), move || {
            block_on(on_sim(case, SimConfig::default()));
        }),
        plain(format!("{name}::sim_without_tag_ext"), move || {
            let cfg = SimConfig::default().without_extension("tag-ports-during-bulk-creation");
            block_on(on_sim(case, cfg));
        }),
        needs(format!("{name}::real"), REAL_URL, move |url| {
            block_on(on_real(case, &url));
        }),
    ]
}

/// Defines a case: `case!(name, |api| { … })` is `name(api: &Api)`, run on every server.
macro_rules! case {
    ($name:ident, |$api:ident| $body:block) => {
        pub fn $name($api: &Api) -> Pin<Box<dyn Future<Output = ()> + '_>> {
            Box::pin(async move $body)
        }
    };
}

/// `area::case` → (`"area::case"`, the case).
macro_rules! cases {
    ($($area:ident :: $case:ident),+ $(,)?) => {
        [$((concat!(stringify!($area), "::", stringify!($case)), $area::$case as Case)),+]
    };
}

const CASES: &[(&str, Case)] = &cases![
    discovery::versions_and_extensions,
    floating_ips::floating_ip_association,
    floating_ips::floating_ip_reassociation,
    lists::list_filters_or_and_fields,
    lists::pagination_links,
    networks::network_and_subnet_crud,
    ports::port_crud_binding_and_dual_stack,
    ports::ip_exhaustion_and_already_allocated_409,
    security_groups::default_group_is_made_by_the_first_list,
    security_groups::security_group_crud_and_filters,
    security_groups::ports_carry_security_groups,
    security_groups::security_group_rules_crud_and_validation,
    tags::tags_in_port_post_body,
    tags::tag_subresource,
    validation::if_match_revision_412,
    validation::id_in_post_and_bad_input_400,
];

fn main() -> ExitCode {
    netcache_testenv::run(CASES.iter().flat_map(|&(name, case)| trials(name, case)).collect())
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
    /// A call that must answer `want`: its body.
    async fn expect(&self, method: Method, path: &str, body: Option<&Value>, want: u16) -> Value {
        let (st, v) = self.call(method.clone(), path, body).await;
        assert_eq!(st, want, "{method} {path}: {v}");
        v
    }
    /// A call that must be refused with `status` and exactly this `NeutronError`.
    async fn refused(&self, method: Method, path: &str, body: Option<&Value>, (status, kind, message): Refusal<'_>) {
        let (st, v) = self.call(method.clone(), path, body).await;
        assert_eq!(st, status, "{method} {path} {body:?}: {v}");
        assert_error(&v, kind, message);
    }
    /// A `GET` that must answer 200: its body.
    async fn get(&self, path: &str) -> Value {
        self.expect(Method::GET, path, None, 200).await
    }
    /// A `POST` that must create (201): its body.
    async fn post(&self, path: &str, body: Value) -> Value {
        self.expect(Method::POST, path, Some(&body), 201).await
    }
    /// A `PUT` that must answer 200: its body.
    async fn put(&self, path: &str, body: Value) -> Value {
        self.expect(Method::PUT, path, Some(&body), 200).await
    }
    /// A `DELETE` that must answer 204.
    async fn delete(&self, path: &str) {
        self.expect(Method::DELETE, path, None, 204).await;
    }
    async fn network(&self, extra: Value) -> String {
        let body = merged(json!({"name": uniq("conf")}), &extra);
        s(&self.post("/v2.0/networks", json!({"network": body})).await["network"]["id"])
    }
    async fn subnet(&self, net: &str, cidr: &str, extra: Value) -> Value {
        let v6 = cidr.contains(':');
        let body = merged(
            json!({"network_id": net, "ip_version": if v6 { 6 } else { 4 }, "cidr": cidr}),
            &extra,
        );
        self.post("/v2.0/subnets", json!({"subnet": body})).await["subnet"].clone()
    }
    async fn port(&self, body: Value) -> Value {
        self.post("/v2.0/ports", json!({"port": body})).await["port"].clone()
    }
    /// A port `POST` that must be refused with `status`: the error body.
    async fn port_refused(&self, body: Value, status: u16) -> Value {
        self.expect(Method::POST, "/v2.0/ports", Some(&json!({"port": body})), status)
            .await
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

/// `base` with the members of `extra` added (an `extra` that is no object adds nothing).
fn merged(mut base: Value, extra: &Value) -> Value {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    base
}

/// The subnet attributes of IPv6 SLAAC addressing.
fn slaac() -> Value {
    json!({"ipv6_address_mode": "slaac", "ipv6_ra_mode": "slaac"})
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

/// The string `key` of each member of the array `list` (those that have one).
fn strings<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .expect("array")
        .iter()
        .filter_map(|m| m[key].as_str())
        .collect()
}

fn ids(v: &Value, coll: &str) -> Vec<String> {
    v[coll]
        .as_array()
        .expect("collection")
        .iter()
        .map(|p| s(&p["id"]))
        .collect()
}

mod discovery;
mod floating_ips;
mod lists;
mod networks;
mod ports;
mod security_groups;
mod tags;
mod validation;
