//! After the workload: let late commits land, wait (bounded) until no server is in
//! BUILD or has a task state, run heal and GC passes past the grace period, and take
//! the final snapshot the checker judges.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use reqwest::Method;
use serde_json::Value;
use tracing::{info, warn};

use super::api::Api;
use super::checker::unexplained_drift;
use super::history::{AuditOutcome, FinalServer, FinalSnapshot, OpKind};
use super::neutron::Neutron;
use super::recorder::Recorder;
use super::sampler::{interface_ports, macs, task_state};
use super::topology::OneOff;
use super::workload::run_one_off;

pub struct Settle<'a> {
    pub api: &'a Api,
    pub neutron: &'a Neutron,
    pub one_off: &'a OneOff,
    pub rec: &'a Recorder,
    /// Bound on waiting for builds and deletes to finish.
    pub timeout: Duration,
    /// Held commits land within this.
    pub late_commits: Duration,
    pub gc_grace: Duration,
    pub one_off_timeout: Duration,
}

impl Settle<'_> {
    /// Servers of any process that answers.
    async fn servers(&self) -> Option<Vec<Value>> {
        for process in 0..self.api.processes() {
            let answer = self.api.call(process, Method::GET, "/servers/detail", None).await;
            if answer.outcome.is_ack() {
                return answer.body["servers"].as_array().cloned();
            }
        }
        None
    }

    async fn audit(&self) -> AuditOutcome {
        match self.one_off.run("audit", &["--json"], self.one_off_timeout).await {
            Ok(out) => AuditOutcome {
                exit_code: out.code,
                report: serde_json::from_str(&out.stdout).ok(),
            },
            Err(e) => {
                warn!(error = %e, "audit could not be run");
                AuditOutcome::default()
            }
        }
    }

    async fn pass(&self, command: &str) {
        let op = if command == "heal" { OpKind::Heal } else { OpKind::Gc };
        run_one_off(
            self.one_off,
            self.rec,
            self.rec.seq(),
            op,
            command,
            self.one_off_timeout,
        )
        .await;
    }

    /// Waits until nothing is building or has a task state; `false` on timeout.
    pub async fn wait_quiet(&self) -> bool {
        tokio::time::sleep(self.late_commits).await;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(servers) = self.servers().await {
                let busy = servers
                    .iter()
                    .filter(|s| s["status"] == "BUILD" || task_state(s).is_some())
                    .count();
                if busy == 0 {
                    return true;
                }
                info!(busy, "waiting for {busy} servers to settle");
            }
            if Instant::now() > deadline {
                warn!("servers did not settle within {:?}", self.timeout);
                return false;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Heal, then GC past the grace period, a few rounds until the audit shows no
    /// drift but the `planted` foreign ghosts. Returns the audit taken before GC.
    pub async fn collect_garbage(&self, planted: &BTreeSet<String>) -> Option<Value> {
        self.pass("heal").await;
        let before = self.audit().await.report;
        let wait = self.gc_grace + Duration::from_millis(500);
        for round in 0..3 {
            self.pass("heal").await;
            tokio::time::sleep(wait).await;
            self.pass("heal").await;
            tokio::time::sleep(wait).await;
            self.pass("gc").await;
            self.pass("heal").await;
            self.pass("gc").await;
            let audit = self.audit().await;
            let explained = match (audit.exit_code, &audit.report) {
                (Some(0), _) => true,
                (Some(2), Some(report)) => unexplained_drift(report, planted).is_empty(),
                _ => false,
            };
            if explained {
                break;
            }
            info!(round, "audit not clean yet after GC");
        }
        before
    }

    pub async fn snapshot(&self, audit_before_gc: Option<Value>) -> anyhow::Result<FinalSnapshot> {
        let servers = self.servers().await.context("no netcache process lists servers")?;
        let mut finals = Vec::new();
        for s in &servers {
            let id = s["id"].as_str().unwrap_or_default().to_owned();
            let mut interfaces = None;
            let mut gone = false;
            for process in 0..self.api.processes() {
                let answer = self
                    .api
                    .call(process, Method::GET, &format!("/servers/{id}/os-interface"), None)
                    .await;
                if answer.outcome.is_ack() {
                    interfaces = Some(interface_ports(&answer.body));
                    break;
                }
                gone |= answer.status() == Some(404);
            }
            if gone && interfaces.is_none() {
                // Deleted since the list.
                continue;
            }
            finals.push(FinalServer {
                status: s["status"].as_str().unwrap_or_default().to_owned(),
                task_state: task_state(s),
                interfaces: interfaces.with_context(|| format!("no os-interface list for server {id}"))?,
                macs: macs(s),
                id,
            });
        }
        Ok(FinalSnapshot {
            servers: finals,
            ports: self.neutron.ports().await?,
            audit: self.audit().await,
            audit_before_gc,
        })
    }
}
