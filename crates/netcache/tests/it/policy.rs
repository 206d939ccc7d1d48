//! The policy matrix: every endpoint × {reader, member, admin, service, another
//! project's member, no identity headers}, with the code Nova's default policy
//! (secure RBAC) gives. Identity comes from the noauth headers (`X-Project-Id`,
//! `X-Roles`); noauth fails closed, so no headers at all is a member of the
//! default project, never an admin.

use crate::common;

use common::{PROJECT, TestApp};
use netcache_testenv::json::items;
use reqwest::Method;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug)]
enum Who {
    Reader,
    Member,
    Admin,
    Service,
    OtherMember,
    Nobody,
}

const EVERYONE: [Who; 6] = [
    Who::Reader,
    Who::Member,
    Who::Admin,
    Who::Service,
    Who::OtherMember,
    Who::Nobody,
];

impl Who {
    fn headers(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Who::Reader => vec![("x-project-id", PROJECT), ("x-roles", "reader")],
            Who::Member => vec![("x-project-id", PROJECT), ("x-roles", "member,reader")],
            Who::Admin => vec![("x-project-id", PROJECT), ("x-roles", "admin,member,reader")],
            Who::Service => vec![("x-project-id", "service"), ("x-roles", "service")],
            Who::OtherMember => vec![("x-project-id", "other"), ("x-roles", "member,reader")],
            Who::Nobody => vec![],
        }
    }
}

async fn call(t: &TestApp, who: Who, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = if path == "/metrics" || path.starts_with("/netcache/") {
        format!("{}{path}", t.app().api_url())
    } else {
        t.url(path)
    };
    let mut request = t.http.request(method, url);
    for (name, value) in who.headers() {
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    common::send(request).await
}

/// A server of the test project for `who` to act on.
async fn server_of_project(t: &TestApp) -> String {
    t.boot(json!("none")).await
}

// What each caller gets, in the order of `EVERYONE`: reader, member, admin,
// service, another project's member, no roles.
/// A list of the caller's project's servers (a service may not list).
const LIST: [u16; 6] = [200, 200, 200, 403, 200, 200];
const ADMIN_ONLY: [u16; 6] = [403, 403, 200, 403, 403, 403];
/// The project's server, read by its project's callers; another project's
/// member finds no such server.
const READ: [u16; 6] = [200, 200, 200, 403, 404, 200];
const WRITE: [u16; 6] = [403, 200, 200, 403, 404, 200];
/// A write whose allowed callers get past the policy to a lookup, or a state
/// check, that refuses.
const WRITE_TO_A_MISSING_ITEM: [u16; 6] = [403, 404, 404, 403, 404, 404];
const WRITE_TO_A_STATE_CHECK: [u16; 6] = [403, 409, 409, 403, 404, 409];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_answers_each_role_as_novas_default_policy_does() {
    let t = TestApp::start().await;
    let s = server_of_project(&t).await;
    let event = json!({"events": [{"name": "network-changed", "server_uuid": s}]});
    let no_port = "00000000-0000-0000-0000-000000000001";
    let get = |path: String, want| (Method::GET, path, None, want);
    let with_body = |method: Method| move |path: String, body: Option<Value>, want| (method.clone(), path, body, want);
    let (post, put, delete) = (
        with_body(Method::POST),
        with_body(Method::PUT),
        with_body(Method::DELETE),
    );
    let action = |body: Value, want| post(format!("/servers/{s}/action"), Some(body), want);
    let table: Vec<(Method, String, Option<Value>, [u16; 6])> = vec![
        get("/servers".into(), LIST),
        get("/servers/detail".into(), LIST),
        get("/servers?all_tenants=1".into(), ADMIN_ONLY),
        get("/servers/detail?all_tenants=True".into(), ADMIN_ONLY),
        get(format!("/servers/{s}"), READ),
        get(format!("/servers/{s}/ips"), READ),
        get(format!("/servers/{s}/os-interface"), READ),
        get(format!("/servers/{s}/os-instance-actions"), READ),
        get(format!("/servers/{s}/os-security-groups"), READ),
        put(
            format!("/servers/{s}"),
            Some(json!({"server": {"name": "renamed"}})),
            WRITE,
        ),
        get(format!("/servers/{s}/metadata"), READ),
        post(
            format!("/servers/{s}/metadata"),
            Some(json!({"metadata": {"k": "v"}})),
            WRITE,
        ),
        put(
            format!("/servers/{s}/metadata"),
            Some(json!({"metadata": {"k": "v"}})),
            WRITE,
        ),
        put(
            format!("/servers/{s}/metadata/k"),
            Some(json!({"meta": {"k": "v"}})),
            WRITE,
        ),
        get(format!("/servers/{s}/metadata/k"), READ),
        // Allowed callers reach the lookup of an item the server does not have.
        delete(format!("/servers/{s}/metadata/nokey"), None, WRITE_TO_A_MISSING_ITEM),
        // Allowed callers reach the lookup of a port the server does not have.
        delete(
            format!("/servers/{s}/os-interface/{no_port}"),
            None,
            WRITE_TO_A_MISSING_ITEM,
        ),
        // Allowed callers reach the group's lookup: the project has no such group.
        action(
            json!({"addSecurityGroup": {"name": "none-such"}}),
            WRITE_TO_A_MISSING_ITEM,
        ),
        action(
            json!({"removeSecurityGroup": {"name": "none-such"}}),
            WRITE_TO_A_MISSING_ITEM,
        ),
        // Allowed callers reach the state check: an ACTIVE server cannot start.
        action(json!({"os-start": null}), WRITE_TO_A_STATE_CHECK),
        // …and a rebuild to the image check: this image does not exist.
        action(
            json!({"rebuild": {"imageRef": no_port}}),
            [403, 400, 400, 403, 404, 400],
        ),
        // A restore finds no soft-deleted server (netcache never has one).
        action(json!({"restore": null}), WRITE_TO_A_STATE_CHECK),
        post(
            format!("/servers/{no_port}/action"),
            Some(json!({"forceDelete": null})),
            WRITE_TO_A_MISSING_ITEM,
        ),
        // The console may hold secrets: members and admins only.
        action(json!({"os-getConsoleOutput": {"length": 1}}), WRITE),
        action(
            json!({"os-resetState": {"state": "active"}}),
            [403, 403, 202, 403, 403, 403],
        ),
        post(
            "/os-server-external-events".into(),
            Some(event),
            [403, 403, 200, 200, 403, 403],
        ),
        get("/os-availability-zone".into(), [200; 6]),
        get("/os-availability-zone/detail".into(), ADMIN_ONLY),
        get("/flavors".into(), [200; 6]),
        // A key pair is its user's, whatever the roles (Nova: admin or owner).
        get("/os-keypairs".into(), [200; 6]),
        get("/os-keypairs/none-such".into(), [404; 6]),
        post(
            "/os-keypairs".into(),
            Some(json!({"keypair": {"name": "bad/name"}})),
            [400; 6],
        ),
        get("/netcache/v1/audit".into(), ADMIN_ONLY),
        get("/metrics".into(), ADMIN_ONLY),
    ];
    common::check_policy_table(&table, EVERYONE, async |who, method, path, body| {
        call(&t, who, method, path, body).await
    })
    .await;
}

/// Writes: a reader and a service may not boot or delete; a member may, in its
/// own project; another project's member cannot see the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_members_and_admins_boot_delete_and_attach() {
    let t = TestApp::start().await;
    let boot = json!({"server": {"name": "p", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    for (who, want) in EVERYONE.iter().zip([403, 202, 202, 403, 202, 202]) {
        let (got, body) = call(&t, *who, Method::POST, "/servers", Some(boot.clone())).await;
        assert_eq!(got, want, "boot as {who:?}: {body}");
    }
    let net = t.topology.private_network_id.clone();
    let attach = json!({"interfaceAttachment": {"net_id": net}});
    for (who, want) in EVERYONE.iter().zip([403, 200, 200, 403, 404, 200]) {
        let s = server_of_project(&t).await;
        let path = format!("/servers/{s}/os-interface");
        let (got, body) = call(&t, *who, Method::POST, &path, Some(attach.clone())).await;
        assert_eq!(got, want, "attach as {who:?}: {body}");
    }
    for (who, want) in EVERYONE.iter().zip([403, 204, 204, 403, 404, 204]) {
        let s = server_of_project(&t).await;
        let (got, body) = call(&t, *who, Method::DELETE, &format!("/servers/{s}"), None).await;
        assert_eq!(got, want, "delete as {who:?}: {body}");
        t.app().compute.settle().await;
    }
}

/// An empty or unreadable identity header is refused, never read as admin.
/// Invariant 21.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_or_unreadable_identity_headers_are_refused() {
    let t = TestApp::start().await;
    for (name, value) in [
        ("x-roles", b"".as_slice()),
        ("x-roles", b" , ".as_slice()),
        ("x-roles", b"adm\xffin".as_slice()),
        ("x-project-id", b"".as_slice()),
    ] {
        let response = t
            .http
            .get(t.url("/servers"))
            .header(name, reqwest::header::HeaderValue::from_bytes(value).unwrap())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 400, "{name}: {value:?}: {body}");
        assert!(body["badRequest"]["message"].is_string(), "{body}");
    }
}

/// An admin sees its own project's servers unless it asks for all tenants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_sees_other_projects_only_with_all_tenants() {
    let t = TestApp::start().await;
    let boot = json!({"server": {"name": "theirs", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    let (status, body) = call(&t, Who::OtherMember, Method::POST, "/servers", Some(boot)).await;
    assert_eq!(status, 202, "{body}");
    let theirs = body["server"]["id"].as_str().unwrap().to_owned();
    let ids = |body: &Value| -> Vec<String> {
        items(body, "servers")
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, own) = call(&t, Who::Admin, Method::GET, "/servers", None).await;
    assert!(!ids(&own).contains(&theirs), "{own}");
    let (_, all) = call(&t, Who::Admin, Method::GET, "/servers?all_tenants=1", None).await;
    assert!(ids(&all).contains(&theirs), "{all}");
    let (_, one) = call(&t, Who::Admin, Method::GET, &format!("/servers/{theirs}"), None).await;
    assert_eq!(
        one["server"]["tenant_id"], "other",
        "an admin may act on any project's server"
    );
}

/// `api.metrics_listen`: Prometheus scrapes a second address with no identity;
/// it serves `/metrics` only, and the API's `/metrics` stays the admin's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_listener_serves_metrics_alone_without_identity() {
    let mut t = TestApp::start().await;
    t.settings.api.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    t.restart(|_| {}).await;
    server_of_project(&t).await;
    let addr = t.app().metrics_addr.expect("a metrics listener");
    let scrape = t.http.get(format!("http://{addr}/metrics")).send().await.unwrap();
    assert_eq!(scrape.status().as_u16(), 200);
    let text = scrape.text().await.unwrap();
    assert!(text.contains("netcache_operations_started_total"), "{text}");
    let (status, _) = common::send(t.http.get(format!("http://{addr}/v2.1/servers"))).await;
    assert_eq!(status, 404, "only /metrics there");
    assert_eq!(call(&t, Who::Member, Method::GET, "/metrics", None).await.0, 403);
}

/// A deployment's `[policy]` overrides a rule by name: here only admins boot,
/// while a member still reads and deletes as Nova's defaults say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_override_changes_one_rule_by_name() {
    let mut t = TestApp::start().await;
    let s = server_of_project(&t).await;
    t.settings
        .policy
        .insert("os_compute_api:servers:create".into(), "role:admin".into());
    t.restart(|_| {}).await;
    let boot = json!({"server": {"name": "p", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    let (status, body) = call(&t, Who::Member, Method::POST, "/servers", Some(boot.clone())).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["forbidden"]["message"],
        "Policy doesn't allow os_compute_api:servers:create to be performed."
    );
    assert_eq!(call(&t, Who::Admin, Method::POST, "/servers", Some(boot)).await.0, 202);
    assert_eq!(
        call(&t, Who::Member, Method::GET, &format!("/servers/{s}"), None)
            .await
            .0,
        200
    );
    assert_eq!(
        call(&t, Who::Member, Method::DELETE, &format!("/servers/{s}"), None)
            .await
            .0,
        204
    );
}
