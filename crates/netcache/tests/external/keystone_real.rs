//! `auth.strategy = keystone` against a real Keystone (CI's Keystone tier:
//! `NETCACHE_TEST_KEYSTONE_URL` names one started by `scripts/keystone.sh`, with
//! admin/`secret` and the service user nova/nova-secret): real tokens of two
//! projects' members, a reader, an admin and a service user decide everything.

use crate::common;

use common::TestApp;
use common::keystone::{Keystone, project_named};
use reqwest::Method;
use serde_json::{Value, json};

async fn call(t: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = t.http.request(method, t.url(path)).header("x-auth-token", token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    common::send(request).await
}

pub async fn real_keystone_tokens_decide_who_does_what(url: String) {
    let keystone = Keystone::connect(&url).await;
    let (project_a, alice) = keystone.member("a", "member").await;
    let (_, bob) = keystone.member("b", "member").await;
    let rita = keystone.reader_of(&project_a).await;
    let nova = Keystone::token(&keystone.http, &url, "nova", "nova-secret", project_named("service")).await;

    let mut t = TestApp::start().await;
    common::keystone::validate_tokens_as_nova(&mut t.settings, &url);
    t.restart(|_| {}).await;

    assert_eq!(t.get("/servers").await.0, 401, "no token");
    assert_eq!(call(&t, "not-a-token", Method::GET, "/servers", None).await.0, 401);

    let boot = json!({"server": {"name": "k", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    let (status, body) = call(&t, &alice, Method::POST, "/servers", Some(boot.clone())).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    // The build (a host for the server) is done before events name it.
    t.app().compute.settle().await;
    let (_, shown) = call(&t, &alice, Method::GET, &format!("/servers/{id}"), None).await;
    assert_eq!(shown["server"]["tenant_id"], project_a.as_str(), "{shown}");

    // Keystone's implied roles: member implies reader; a reader reads only.
    assert_eq!(
        call(&t, &rita, Method::GET, &format!("/servers/{id}"), None).await.0,
        200
    );
    assert_eq!(call(&t, &rita, Method::POST, "/servers", Some(boot)).await.0, 403);
    assert_eq!(
        call(&t, &rita, Method::DELETE, &format!("/servers/{id}"), None).await.0,
        403
    );
    // Another project's member does not see it; the admin does, with all_tenants.
    assert_eq!(
        call(&t, &bob, Method::GET, &format!("/servers/{id}"), None).await.0,
        404
    );
    assert_eq!(call(&t, &bob, Method::GET, "/servers?all_tenants=1", None).await.0, 403);
    let (status, all) = call(&t, &keystone.admin_token, Method::GET, "/servers?all_tenants=1", None).await;
    assert_eq!(status, 200);
    assert!(all.to_string().contains(&id), "{all}");
    // Neutron's notifier authenticates as nova (service): events are its; not alice's.
    let events = json!({"events": [{"name": "network-changed", "server_uuid": id}]});
    let path = "/os-server-external-events";
    assert_eq!(call(&t, &alice, Method::POST, path, Some(events.clone())).await.0, 403);
    assert_eq!(call(&t, &nova, Method::POST, path, Some(events)).await.0, 200);
    assert_eq!(
        call(&t, &alice, Method::DELETE, &format!("/servers/{id}"), None)
            .await
            .0,
        204
    );
}
