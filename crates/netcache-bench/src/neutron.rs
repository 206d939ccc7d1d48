//! The bench's Neutron: the embedded one in the bench's process, or in a
//! process of its own (`--neutron-process`), so the bench's RSS is netcache's
//! alone; or a real Neutron already running (`--neutron-url`, noauth). Either
//! way the bench talks to it over HTTP, the embedded one's admin API included.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use neutron_sim::{NeutronSim, RunningSim, SimConfig};
use reqwest::Method;
use serde_json::Value;

enum Process {
    This(RunningSim),
    Own(Child),
    /// A Neutron the bench did not start (a real one has no call counter).
    External,
}

pub(super) struct Neutron {
    process: Process,
    url: String,
    http: reqwest::Client,
}

impl Neutron {
    pub async fn start(own_process: bool, external: Option<&str>, http: reqwest::Client) -> anyhow::Result<Self> {
        let (process, url) = if let Some(url) = external {
            (Process::External, url.trim_end_matches('/').to_owned())
        } else if own_process {
            // A free port: bound here, released, and handed to the child.
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let child = Command::new(std::env::current_exe()?)
                .args(["neutron-sim", "--listen", &format!("127.0.0.1:{port}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start `netcache neutron-sim`")?;
            (Process::Own(child), format!("http://127.0.0.1:{port}"))
        } else {
            let sim = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse()?).await?;
            let url = sim.url();
            (Process::This(sim), url)
        };
        let neutron = Self { process, url, http };
        for _ in 0..100 {
            if neutron.request(Method::GET, "/v2.0/networks", None).await.is_ok() {
                return Ok(neutron);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the Neutron at {} does not answer", neutron.url)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// One request; the status and the JSON body (null when empty).
    pub async fn request(&self, method: Method, path: &str, body: Option<&Value>) -> anyhow::Result<(u16, Value)> {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)?
        };
        Ok((status, body))
    }

    /// Calls counted since the last reset (the admin API is not counted);
    /// `None` from one the bench did not start.
    pub async fn calls(&self) -> anyhow::Result<Option<u64>> {
        if matches!(self.process, Process::External) {
            return Ok(None);
        }
        let (_, stats) = self.request(Method::GET, "/_sim/stats", None).await?;
        stats["total"].as_u64().context("no total in /_sim/stats").map(Some)
    }

    pub async fn reset_calls(&self) -> anyhow::Result<()> {
        if !matches!(self.process, Process::External) {
            self.request(Method::DELETE, "/_sim/stats", None).await?;
        }
        Ok(())
    }

    /// Whose memory the bench's RSS figure holds.
    pub fn rss_note(&self) -> String {
        match &self.process {
            Process::Own(child) => format!(
                "netcache and the client; Neutron's process: {:.0} MB",
                super::rss_mb_of(&format!("/proc/{}/status", child.id()))
            ),
            Process::This(_) => "this process, Neutron included".to_owned(),
            Process::External => "netcache and the client; Neutron runs outside the bench".to_owned(),
        }
    }

    pub async fn stop(self) {
        match self.process {
            Process::This(sim) => sim.shutdown().await,
            Process::Own(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Process::External => {}
        }
    }
}
