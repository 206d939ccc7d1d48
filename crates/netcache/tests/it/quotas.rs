//! Quotas over HTTP with Nova's default limits (TestApp lifts the servers'
//! quotas for the other tests; these put the defaults back): who may read and
//! set them, boots refused with Nova's 403 (and `min_count`/`max_count` cut to
//! what fits), a deleted server's room given back, racing boots never passing
//! the limit, the metadata quota, `/limits` following usage, and the extensions.

use crate::common;

use common::{IMAGE, Options, PROJECT, TestApp};
use netcache_app::settings::QuotaSettings;
use netcache_testenv::json::{sorted_strings, strings};
use reqwest::Method;
use serde_json::{Value, json};

async fn start() -> TestApp {
    TestApp::with(Options {
        tweak: |s| s.quota = QuotaSettings::default(),
        ..Options::default()
    })
    .await
}

const MEMBER: &[(&str, &str)] = &[("x-roles", "member,reader")];
const READER: &[(&str, &str)] = &[("x-roles", "reader")];
const ADMIN: &[(&str, &str)] = &[("x-roles", "admin,member,reader")];
const OTHER_MEMBER: &[(&str, &str)] = &[("x-project-id", "other"), ("x-roles", "member,reader")];

async fn call(t: &TestApp, who: &[(&str, &str)], method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = t.http.request(method, t.url(path));
    for (name, value) in who {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    common::send(request).await
}

/// An admin sets the project's limits.
async fn set_quotas(t: &TestApp, quota_set: Value) {
    let path = format!("/os-quota-sets/{PROJECT}");
    let (status, body) = call(t, ADMIN, Method::PUT, &path, Some(json!({"quota_set": quota_set}))).await;
    assert_eq!(status, 200, "{body}");
}

fn boot_body(fields: Value) -> Value {
    let mut server = json!({"name": "vm", "flavorRef": "1", "imageRef": IMAGE, "networks": "none"});
    server
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    json!({"server": server})
}

/// A boot as a member of the project; the builds are waited for.
async fn boot(t: &TestApp, fields: Value) -> (u16, Value) {
    let answer = call(t, MEMBER, Method::POST, "/servers", Some(boot_body(fields))).await;
    t.app().compute.settle().await;
    answer
}

async fn server_names(t: &TestApp) -> Vec<String> {
    let (status, body) = t.get("/servers").await;
    assert_eq!(status, 200, "{body}");
    sorted_strings(&body, "servers", "name")
}

#[track_caller]
fn assert_forbidden(got: (u16, Value), message: &str) {
    let (status, body) = got;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["forbidden"]["message"], message, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_read_their_projects_quotas_and_only_admins_set_them() {
    let t = start().await;
    let own = format!("/os-quota-sets/{PROJECT}");
    let update = Some(json!({"quota_set": {"instances": 20}}));
    //   method, path, body → reader, member, admin, another project's member
    let table: Vec<(Method, String, Option<Value>, [u16; 4])> = vec![
        (Method::GET, own.clone(), None, [200, 200, 200, 403]),
        (Method::GET, format!("{own}/detail"), None, [200, 200, 200, 403]),
        (Method::GET, format!("{own}/defaults"), None, [200; 4]),
        (Method::GET, "/os-quota-sets/other".into(), None, [403, 403, 200, 200]),
        (Method::PUT, own.clone(), update.clone(), [403, 403, 200, 403]),
        (Method::PUT, "/os-quota-sets/other".into(), update, [403, 403, 200, 403]),
        (Method::DELETE, own.clone(), None, [403, 403, 202, 403]),
        (Method::GET, "/limits".into(), None, [200; 4]),
        (
            Method::GET,
            format!("/limits?tenant_id={PROJECT}"),
            None,
            [403, 403, 200, 403],
        ),
        (Method::GET, "/extensions".into(), None, [200; 4]),
        (Method::GET, "/extensions/os-keypairs".into(), None, [200; 4]),
    ];
    let callers = [READER, MEMBER, ADMIN, OTHER_MEMBER];
    common::check_policy_table(&table, callers, async |who, method, path, body| {
        call(&t, who, method, path, body).await
    })
    .await;
    let (_, body) = call(&t, MEMBER, Method::PUT, &own, Some(json!({"quota_set": {"ram": 0}}))).await;
    assert_eq!(
        body["forbidden"]["message"],
        "Policy doesn't allow os_compute_api:os-quota-sets:update to be performed."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boot_over_quota_is_refused_and_a_deleted_server_frees_its_room() {
    let t = start().await;
    let (_, shown) = t.get(&format!("/os-quota-sets/{PROJECT}")).await;
    assert_eq!(shown["quota_set"]["instances"], 10, "Nova's default: {shown}");
    set_quotas(&t, json!({"instances": 3})).await;

    let (status, body) = boot(&t, json!({"name": "one"})).await;
    assert_eq!(status, 202, "{body}");
    let first = body["server"]["id"].as_str().unwrap().to_owned();
    // Two asked for at least, up to five: the two that fit are booted.
    let (status, body) = boot(&t, json!({"name": "many", "min_count": 2, "max_count": 5})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(server_names(&t).await, ["many-1", "many-2", "one"]);
    assert_forbidden(
        boot(&t, json!({"name": "four"})).await,
        "Quota exceeded for instances: Requested 1, but already used 3 of 3 instances",
    );
    assert_forbidden(
        boot(&t, json!({"name": "four", "min_count": 1, "max_count": 2})).await,
        "Quota exceeded for instances: Requested 1-2, but already used 3 of 3 instances",
    );

    let (status, body) = t.delete(&format!("/servers/{first}")).await;
    assert_eq!(status, 204, "{body}");
    let (status, body) = boot(&t, json!({"name": "four"})).await;
    assert_eq!(status, 202, "a deleted server frees its room: {body}");
    assert_eq!(server_names(&t).await, ["four", "many-1", "many-2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cores_and_ram_count_the_flavor() {
    let t = start().await;
    set_quotas(&t, json!({"cores": 3, "ram": 10240})).await;
    let (status, body) = boot(&t, json!({"flavorRef": "3"})).await;
    assert_eq!(status, 202, "{body}");
    assert_forbidden(
        boot(&t, json!({"flavorRef": "3"})).await,
        "Quota exceeded for cores: Requested 2, but already used 2 of 3 cores",
    );
    assert_forbidden(
        boot(&t, json!({"flavorRef": "2", "min_count": 2, "max_count": 4})).await,
        "Quota exceeded for cores, ram: Requested 4, 8192, but already used 2, 4096 of 3, 10240 cores, ram",
    );
    let (status, body) = boot(&t, json!({"flavorRef": "1"})).await;
    assert_eq!(status, 202, "one more core and 512 MB fit: {body}");
    // Tempest's negative tests: a quota set to 0 refuses any boot.
    set_quotas(&t, json!({"ram": 0, "cores": -1, "force": true})).await;
    assert_forbidden(
        boot(&t, json!({})).await,
        "Quota exceeded for ram: Requested 512, but already used 4608 of 0 ram",
    );
}

/// Boots racing for the last places: however they interleave, exactly as many
/// pass as there is room (the store judges each claim under the project's
/// quota lock, in the transaction that records the servers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_boots_never_pass_the_limit() {
    let t = start().await;
    set_quotas(&t, json!({"instances": 4})).await;
    let (status, body) = boot(&t, json!({"name": "first"})).await;
    assert_eq!(status, 202, "{body}");
    let mut boots = Vec::new();
    for i in 0..8 {
        let (http, url) = (t.http.clone(), t.url("/servers"));
        let body = boot_body(json!({"name": format!("racer-{i}")}));
        boots.push(tokio::spawn(async move {
            common::send(http.post(url).header("x-roles", "member").json(&body)).await
        }));
    }
    let mut passed = 0;
    for task in boots {
        match task.await.unwrap() {
            (202, _) => passed += 1,
            (403, body) => assert!(
                body["forbidden"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Quota exceeded for instances"),
                "{body}"
            ),
            other => panic!("a boot failed other than by the quota: {other:?}"),
        }
    }
    t.app().compute.settle().await;
    assert_eq!(passed, 3);
    assert_eq!(server_names(&t).await.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_beyond_the_quota_is_refused() {
    let t = start().await;
    set_quotas(&t, json!({"metadata_items": 2})).await;
    let three = json!({"a": "1", "b": "2", "c": "3"});
    assert_forbidden(
        boot(&t, json!({"metadata": three})).await,
        "Maximum number of metadata items exceeds 2",
    );
    let (status, body) = boot(&t, json!({"metadata": {"a": "1"}})).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap();
    let path = format!("/servers/{id}/metadata");
    let (status, body) = call(&t, MEMBER, Method::POST, &path, Some(json!({"metadata": {"b": "2"}}))).await;
    assert_eq!(status, 200, "{body}");
    assert_forbidden(
        call(&t, MEMBER, Method::POST, &path, Some(json!({"metadata": {"c": "3"}}))).await,
        "Maximum number of metadata items exceeds 2",
    );
    let (_, limits) = t.get("/limits").await;
    assert_eq!(limits["limits"]["absolute"]["maxServerMeta"], 2, "{limits}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_follow_usage() {
    let t = start().await;
    let absolute = |limits: &Value, name: &str| limits["limits"]["absolute"][name].as_i64().unwrap();
    let (status, limits) = t.get("/limits").await;
    assert_eq!(status, 200, "{limits}");
    assert_eq!(limits["limits"]["rate"], json!([]));
    let used = ["totalInstancesUsed", "totalCoresUsed", "totalRAMUsed"];
    assert_eq!(used.map(|n| absolute(&limits, n)), [0, 0, 0]);

    let (_, first) = boot(&t, json!({"flavorRef": "3"})).await;
    boot(&t, json!({"flavorRef": "1"})).await;
    set_quotas(&t, json!({"instances": 7})).await;
    let (_, limits) = t.get("/limits").await;
    assert_eq!(used.map(|n| absolute(&limits, n)), [2, 3, 4608]);
    assert_eq!(absolute(&limits, "maxTotalInstances"), 7);
    assert_eq!(absolute(&limits, "maxTotalCores"), 20);

    t.delete(&format!("/servers/{}", first["server"]["id"].as_str().unwrap()))
        .await;
    let (_, limits) = t.get("/limits").await;
    assert_eq!(used.map(|n| absolute(&limits, n)), [1, 1, 512]);
    // Another project's, for an admin.
    let (_, other) = call(&t, ADMIN, Method::GET, "/limits?tenant_id=other", None).await;
    assert_eq!(absolute(&other, "totalInstancesUsed"), 0);
    assert_eq!(absolute(&other, "maxTotalInstances"), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extensions_list_what_is_served_and_404_the_rest() {
    let t = start().await;
    let (status, list) = t.get("/extensions").await;
    assert_eq!(status, 200, "{list}");
    let aliases = strings(&list, "extensions", "alias");
    assert!(
        aliases.contains(&"os-quota-sets") && aliases.contains(&"os-lock-server"),
        "{aliases:?}"
    );
    let (status, one) = t.get("/extensions/os-lock-server").await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["extension"]["alias"], "os-lock-server");
    assert_eq!(one["extension"]["name"], "LockServer");
    let (status, body) = t.get("/extensions/os-volumes").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["itemNotFound"]["message"], "The resource could not be found.");
}
