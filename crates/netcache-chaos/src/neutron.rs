//! The harness's own Neutron calls (never through the fault rules): the port list the
//! sampler reads, user ports and planted foreign ports the workload creates, networks.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::history::{Outcome, PortObs};

#[derive(Clone)]
pub struct Neutron {
    http: reqwest::Client,
    base: String,
}

/// Networks the workload boots on.
#[derive(Clone, Debug)]
pub struct Networks {
    /// The project's network (`private`): "auto" resolves to it.
    pub private: String,
    /// The second network of multi-network boots: `public` if present, else `private`
    /// again (two ports on one network).
    pub second: String,
    /// The first three octets of private's IPv4 subnet, for fixed IPs (`10.0.0`).
    pub fixed_prefix: Option<String>,
    /// Where the workload's own ports go (they are never deleted, so they need room):
    /// `chaos-ports`, an external network with a /16, or `private` if it cannot be made.
    pub user: String,
}

impl Neutron {
    pub fn new(url: &str) -> anyhow::Result<Self> {
        Ok(Self {
            http: reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?,
            base: url.trim_end_matches('/').trim_end_matches("/v2.0").to_owned(),
        })
    }

    #[must_use]
    pub fn url(&self) -> &str {
        &self.base
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.http.get(format!("{}/v2.0/{path}", self.base)).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("GET /v2.0/{path}: {status}: {body}");
        }
        Ok(body)
    }

    /// Every port (admin view).
    pub async fn ports(&self) -> anyhow::Result<Vec<PortObs>> {
        let body = self.get("ports").await?;
        Ok(body["ports"]
            .as_array()
            .context("no ports in the answer")?
            .iter()
            .filter_map(PortObs::from_json)
            .collect())
    }

    /// Answers once Neutron lists networks.
    pub async fn ready(&self) -> bool {
        self.get("networks").await.is_ok()
    }

    pub async fn networks(&self, project: &str) -> anyhow::Result<Networks> {
        let list = self.get("networks").await?;
        let find = |name: &str| {
            list["networks"].as_array().into_iter().flatten().find(|n| {
                n["name"] == name && (name != "private" || n["project_id"] == project || n["tenant_id"] == project)
            })
        };
        let private = find("private")
            .and_then(|n| n["id"].as_str())
            .with_context(|| format!("Neutron has no network `private` of project {project}"))?
            .to_owned();
        let second = find("public")
            .and_then(|n| n["id"].as_str())
            .unwrap_or(&private)
            .to_owned();
        let subnets = self.get(&format!("subnets?network_id={private}")).await?;
        let fixed_prefix = subnets["subnets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["ip_version"] == 4)
            .filter_map(|s| s["cidr"].as_str())
            .find_map(|cidr| {
                let (addr, len) = cidr.split_once('/')?;
                (len == "24").then(|| addr.rsplit_once('.').map(|(p, _)| p.to_owned()))?
            });
        let user = match find("chaos-ports").and_then(|n| n["id"].as_str()) {
            Some(id) => id.to_owned(),
            None => self.create_user_network().await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "no network chaos-ports; user ports go to private");
                private.clone()
            }),
        };
        Ok(Networks {
            private,
            second,
            fixed_prefix,
            user,
        })
    }

    /// An external network (not a candidate for "auto") with room for every port the
    /// workload creates itself.
    async fn create_user_network(&self) -> anyhow::Result<String> {
        let post = |path: &str, body: Value| self.http.post(format!("{}/v2.0/{path}", self.base)).json(&body).send();
        let network: Value = post(
            "networks",
            json!({"network": {"name": "chaos-ports", "router:external": true}}),
        )
        .await?
        .error_for_status()?
        .json()
        .await?;
        let id = network["network"]["id"].as_str().context("no network id")?.to_owned();
        post(
            "subnets",
            json!({"subnet": {"name": "chaos-ports", "network_id": id, "ip_version": 4,
                "cidr": "10.64.0.0/16", "enable_dhcp": false}}),
        )
        .await?
        .error_for_status()?;
        Ok(id)
    }

    /// `POST /v2.0/ports`; the new port's id on 201.
    pub async fn create_port(&self, port: Value) -> (Outcome, Option<String>, Option<String>) {
        let sent = self
            .http
            .post(format!("{}/v2.0/ports", self.base))
            .json(&json!({ "port": port }))
            .send()
            .await;
        match sent {
            Ok(response) => {
                let code = response.status().as_u16();
                let body: Value = response.json().await.unwrap_or(Value::Null);
                let id = body["port"]["id"].as_str().map(str::to_owned);
                let note = (code >= 300).then(|| body.to_string().chars().take(200).collect());
                (Outcome::Status { code }, id, note)
            }
            Err(e) if e.is_timeout() => (Outcome::Timeout, None, None),
            Err(e) => (Outcome::ConnectionFailed, None, Some(e.to_string())),
        }
    }
}
