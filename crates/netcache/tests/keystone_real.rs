//! `auth.strategy = keystone` against a real Keystone (CI's Keystone tier, when
//! `NETCACHE_TEST_KEYSTONE_URL` names one started by `scripts/keystone.sh`, with
//! admin/`secret` and the service user nova/nova-secret): real tokens of two
//! projects' members, a reader, an admin and a service user decide everything.

mod common;

use common::TestApp;
use reqwest::Method;
use serde_json::{Value, json};

const ADMIN_PASSWORD: &str = "secret";

fn project_named(name: &str) -> Value {
    json!({"project": {"name": name, "domain": {"id": "default"}}})
}

/// Keystone v3 over HTTP as its admin.
struct Keystone {
    url: String,
    http: reqwest::Client,
    admin_token: String,
}

impl Keystone {
    /// A password token of `user` with `scope`.
    async fn token(http: &reqwest::Client, url: &str, user: &str, password: &str, scope: Value) -> String {
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"id": "default"}, "password": password}}},
            "scope": scope}});
        let response = http
            .post(format!("{url}/auth/tokens"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201, "token of {user}");
        response.headers()["x-subject-token"].to_str().unwrap().to_owned()
    }

    async fn connect(url: &str) -> Self {
        let http = reqwest::Client::new();
        let admin_token = Self::token(&http, url, "admin", ADMIN_PASSWORD, project_named("admin")).await;
        Self {
            url: url.to_owned(),
            http,
            admin_token,
        }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .header("x-auth-token", &self.admin_token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "POST {path}: {}", response.status());
        response.json().await.unwrap()
    }

    async fn role_id(&self, name: &str) -> String {
        let response = self
            .http
            .get(format!("{}/roles?name={name}", self.url))
            .header("x-auth-token", &self.admin_token)
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        body["roles"][0]["id"].as_str().unwrap().to_owned()
    }

    /// A fresh project and a user with `role` in it; returns (project id, the user's token).
    async fn member(&self, tag: &str, role: &str) -> (String, String) {
        let name = format!("nc-{tag}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let project = self
            .post("/projects", json!({"project": {"name": name, "domain_id": "default"}}))
            .await["project"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let token = self.user_with_role(&name, &project, role).await;
        (project, token)
    }

    /// A reader of an existing project; returns its token.
    async fn reader_of(&self, project: &str) -> String {
        let name = format!("nc-reader-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        self.user_with_role(&name, project, "reader").await
    }

    /// A new user `name` with `role` on `project`; returns its token for that project.
    async fn user_with_role(&self, name: &str, project: &str, role: &str) -> String {
        let user = self
            .post(
                "/users",
                json!({"user": {"name": name, "password": "pw", "domain_id": "default"}}),
            )
            .await["user"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let role = self.role_id(role).await;
        let response = self
            .http
            .put(format!("{}/projects/{project}/users/{user}/roles/{role}", self.url))
            .header("x-auth-token", &self.admin_token)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "grant {role} on {project}");
        Self::token(&self.http, &self.url, name, "pw", json!({"project": {"id": project}})).await
    }
}

async fn call(t: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = t.http.request(method, t.url(path)).header("x-auth-token", token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    common::send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_keystone_tokens_decide_who_does_what() {
    let Ok(url) = std::env::var("NETCACHE_TEST_KEYSTONE_URL") else {
        eprintln!("NETCACHE_TEST_KEYSTONE_URL is not set: skipped");
        return;
    };
    let keystone = Keystone::connect(&url).await;
    let (project_a, alice) = keystone.member("a", "member").await;
    let (_, bob) = keystone.member("b", "member").await;
    let rita = keystone.reader_of(&project_a).await;
    let nova = Keystone::token(&keystone.http, &url, "nova", "nova-secret", project_named("service")).await;

    let mut t = TestApp::start().await;
    let auth = &mut t.settings.auth;
    auth.strategy = "keystone".into();
    auth.auth_url = Some(url.clone());
    auth.username = Some("nova".into());
    auth.password = Some("nova-secret".into());
    auth.project_name = Some("service".into());
    t.restart(|_| {}).await;

    assert_eq!(t.get("/servers").await.0, 401, "no token");
    assert_eq!(call(&t, "not-a-token", Method::GET, "/servers", None).await.0, 401);

    let boot = json!({"server": {"name": "k", "flavorRef": "1", "networks": "none"}});
    let (status, body) = call(&t, &alice, Method::POST, "/servers", Some(boot.clone())).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
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
