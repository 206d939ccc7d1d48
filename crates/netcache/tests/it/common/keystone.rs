//! Keystone v3 over HTTP as its admin, for tests against a real Keystone
//! started by `scripts/keystone.sh` (admin/`secret`, the service users
//! nova/nova-secret and neutron/neutron-secret in project `service`).

#![allow(dead_code)]

use netcache_app::settings::Settings;
use serde_json::{Value, json};

pub const ADMIN_PASSWORD: &str = "secret";

pub fn project_named(name: &str) -> Value {
    json!({"project": {"name": name, "domain": {"id": "default"}}})
}

/// Keystone v3 over HTTP as its admin.
pub struct Keystone {
    pub url: String,
    pub http: reqwest::Client,
    pub admin_token: String,
}

impl Keystone {
    /// A password token of `user` with `scope`.
    pub async fn token(http: &reqwest::Client, url: &str, user: &str, password: &str, scope: Value) -> String {
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

    pub async fn connect(url: &str) -> Self {
        let http = reqwest::Client::new();
        let admin_token = Self::token(&http, url, "admin", ADMIN_PASSWORD, project_named("admin")).await;
        Self {
            url: url.to_owned(),
            http,
            admin_token,
        }
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
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

    pub async fn role_id(&self, name: &str) -> String {
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
    pub async fn member(&self, tag: &str, role: &str) -> (String, String) {
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
    pub async fn reader_of(&self, project: &str) -> String {
        let name = format!("nc-reader-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        self.user_with_role(&name, project, "reader").await
    }

    /// A new user `name` with `role` on `project`; returns its token for that project.
    pub async fn user_with_role(&self, name: &str, project: &str, role: &str) -> String {
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

/// `auth.strategy = keystone` against the Keystone at `url`, with netcache's
/// service user `nova` (project `service`) validating callers' tokens.
pub fn validate_tokens_as_nova(settings: &mut Settings, url: &str) {
    let auth = &mut settings.auth;
    auth.strategy = "keystone".into();
    auth.auth_url = Some(url.to_owned());
    auth.username = Some("nova".into());
    auth.password = Some("nova-secret".into());
    auth.project_name = Some("service".into());
}
