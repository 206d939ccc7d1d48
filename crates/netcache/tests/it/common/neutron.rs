//! Talking to a Neutron (real or embedded) behind netcache's back, over HTTP as
//! Neutron's admin (noauth without project headers, or an admin's Keystone
//! token), and giving each test its own networks so tests can share one real
//! Neutron.

#![allow(dead_code)]

use netcache_testenv::json::strings;
use serde_json::{Value, json};

pub struct Backdoor {
    pub url: String,
    http: reqwest::Client,
    /// An admin's token, when Neutron runs with Keystone auth.
    token: Option<String>,
}

/// One test's networks: a project network with an IPv4 subnet, and an external
/// network routed to it (for floating IPs).
#[derive(Clone, Debug)]
pub struct Networks {
    pub private: String,
    pub private_name: String,
    pub subnet: String,
    pub public: String,
}

impl Backdoor {
    pub fn new(url: &str, token: Option<String>) -> Self {
        Self {
            url: url.trim_end_matches('/').trim_end_matches("/v2.0").to_owned(),
            http: reqwest::Client::new(),
            token,
        }
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, format!("{}/v2.0{path}", self.url));
        if let Some(token) = &self.token {
            request = request.header("x-auth-token", token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        super::send(request).await
    }

    /// A call Neutron must answer 200; the answer.
    async fn call_ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        let (mut status, mut created) = self.call(reqwest::Method::POST, path, Some(body.clone())).await;
        // A freshly started real Neutron can refuse its very first concurrent
        // creates with a spurious policy 403 while it loads its policies.
        if status == 403 && created["NeutronError"]["type"] == "PolicyNotAuthorized" {
            // tidy: allow sleep — one retry of a real Neutron's spurious 403, after a pause
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            (status, created) = self.call(reqwest::Method::POST, path, Some(body)).await;
        }
        assert!(status == 201 || status == 200, "POST {path}: {status} {created}");
        created
    }

    /// POSTs a new `kind` of resource (`body` is `{kind: …}`); returns its id.
    pub async fn created_id(&self, kind: &str, path: &str, body: Value) -> String {
        self.post(path, body).await[kind]["id"].as_str().unwrap().to_owned()
    }

    pub async fn extensions(&self) -> Vec<String> {
        let (_, body) = self.call(reqwest::Method::GET, "/extensions", None).await;
        strings(&body, "extensions", "alias")
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Fresh networks for one test, in `project`. The private subnet hands out
    /// `.2`–`.199` only: a real Neutron picks addresses at random, so a test that asks
    /// for a fixed IP takes one from `.200` up, where no allocated port can be.
    pub async fn networks(&self, project: &str, third_octet: u8) -> Networks {
        let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let private_name = format!("private-{tag}");
        let private = self
            .created_id(
                "network",
                "/networks",
                json!({"network": {"name": private_name, "project_id": project}}),
            )
            .await;
        let subnet = self
            .created_id(
                "subnet",
                "/subnets",
                json!({"subnet": {"network_id": private, "ip_version": 4, "cidr": format!("10.{third_octet}.0.0/24"), "project_id": project, "name": format!("sub-{tag}"),
                    "allocation_pools": [{"start": format!("10.{third_octet}.0.2"), "end": format!("10.{third_octet}.0.199")}]}}),
            )
            .await;
        let public = self
            .created_id(
                "network",
                "/networks",
                json!({"network": {"name": format!("public-{tag}"), "router:external": true}}),
            )
            .await;
        self.post(
            "/subnets",
            json!({"subnet": {"network_id": public, "ip_version": 4, "cidr": format!("172.{}.{third_octet}.0/24", 16 + third_octet % 16), "enable_dhcp": false}}),
        )
        .await;
        let router = self
            .created_id(
                "router",
                "/routers",
                json!({"router": {"name": format!("router-{tag}"), "project_id": project, "external_gateway_info": {"network_id": public}}}),
            )
            .await;
        self.call_ok(
            reqwest::Method::PUT,
            &format!("/routers/{router}/add_router_interface"),
            Some(json!({"subnet_id": subnet})),
        )
        .await;
        Networks {
            private,
            private_name,
            subnet,
            public,
        }
    }

    pub async fn ports_of(&self, device_id: &str) -> Vec<Value> {
        let body = self
            .call_ok(reqwest::Method::GET, &format!("/ports?device_id={device_id}"), None)
            .await;
        body["ports"].as_array().unwrap().clone()
    }

    pub async fn port(&self, id: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, &format!("/ports/{id}"), None).await
    }

    pub async fn create_port(&self, body: Value) -> Value {
        self.post("/ports", json!({ "port": body })).await["port"].clone()
    }

    pub async fn delete_port(&self, id: &str) -> u16 {
        self.call(reqwest::Method::DELETE, &format!("/ports/{id}"), None)
            .await
            .0
    }

    pub async fn update_port(&self, id: &str, body: Value) -> Value {
        let port = self
            .call_ok(
                reqwest::Method::PUT,
                &format!("/ports/{id}"),
                Some(json!({ "port": body })),
            )
            .await;
        port["port"].clone()
    }

    pub async fn associate_floating_ip(&self, public: &str, port: &str, project: &str) -> String {
        self.post(
            "/floatingips",
            json!({"floatingip": {"floating_network_id": public, "port_id": port, "project_id": project}}),
        )
        .await["floatingip"]["floating_ip_address"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}
