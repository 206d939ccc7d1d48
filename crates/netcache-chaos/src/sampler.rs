//! Periodic samples during the run: `GET /servers/detail` (every server's addresses),
//! `os-interface` of a few seeded servers, and Neutron's full port list. Reads that
//! fail with a 5xx are recorded (the checker judges them); others are skipped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::Method;
use serde_json::Value;
use tokio::sync::watch;

use super::api::{Answer, Api};
use super::history::{OpKind, Record, SampleSource, ServerSample};
use super::model::Model;
use super::neutron::Neutron;
use super::recorder::Recorder;

pub struct Sampler {
    pub seed: u64,
    pub api: Api,
    pub neutron: Neutron,
    pub rec: Arc<Recorder>,
    pub model: Arc<Mutex<Model>>,
    pub interval: Duration,
    /// os-interface reads per round.
    pub interfaces_per_round: usize,
}

/// MACs of a server view's `addresses`, deduplicated.
pub fn macs(server: &Value) -> Vec<String> {
    let mut macs: Vec<String> = server["addresses"]
        .as_object()
        .into_iter()
        .flat_map(|nets| nets.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|a| a["OS-EXT-IPS-MAC:mac_addr"].as_str())
        .map(str::to_ascii_lowercase)
        .collect();
    macs.sort();
    macs.dedup();
    macs
}

/// Port ids of an `interfaceAttachments` body.
pub fn interface_ports(body: &Value) -> Vec<String> {
    body["interfaceAttachments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["port_id"].as_str())
        .map(str::to_owned)
        .collect()
}

pub fn task_state(server: &Value) -> Option<String> {
    server["OS-EXT-STS:task_state"].as_str().map(str::to_owned)
}

impl Sampler {
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(u64::MAX - 4);
        let mut round = 0usize;
        while !*stop.borrow() {
            self.round(round, &mut rng).await;
            round += 1;
            let _ = tokio::time::timeout(self.interval, stop.changed()).await;
        }
    }

    fn failed_read(&self, answer: &Answer, process: usize, server: Option<&str>) {
        if answer.status().is_some_and(|s| s >= 500) {
            self.rec.record(Record {
                seq: self.rec.seq(),
                op: OpKind::SampleRead,
                process: Some(process),
                server: server.map(str::to_owned),
                port: None,
                user_ports: vec![],
                start_ms: answer.start_ms,
                end_ms: answer.end_ms,
                outcome: answer.outcome.clone(),
                ports_seen: vec![],
                note: answer.note(),
            });
        }
    }

    async fn round(&self, round: usize, rng: &mut ChaCha8Rng) {
        let process = self.api.route(round % self.api.processes());
        let list = self.api.call(process, Method::GET, "/servers/detail", None).await;
        let mut ids = Vec::new();
        if list.outcome.is_ack() {
            let servers = list.body["servers"].as_array().cloned().unwrap_or_default();
            let mut listed = Vec::new();
            for s in &servers {
                let Some(id) = s["id"].as_str() else { continue };
                let status = s["status"].as_str().unwrap_or_default().to_owned();
                listed.push((id.to_owned(), status.clone()));
                ids.push(id.to_owned());
                self.rec.sample(ServerSample {
                    start_ms: list.start_ms,
                    end_ms: list.end_ms,
                    server: id.to_owned(),
                    source: SampleSource::Addresses,
                    status: Some(status),
                    task_state: task_state(s),
                    ports: vec![],
                    macs: macs(s),
                    last_start_ms: 0,
                });
            }
            self.model
                .lock()
                .expect("model lock")
                .observe_list(list.start_ms, &listed);
        } else {
            self.failed_read(&list, process, None);
        }
        for _ in 0..self.interfaces_per_round.min(ids.len()) {
            let server = &ids[rng.random_range(0..ids.len())];
            let process = self.api.route(rng.random_range(0..self.api.processes()));
            let answer = self
                .api
                .call(process, Method::GET, &format!("/servers/{server}/os-interface"), None)
                .await;
            if answer.outcome.is_ack() {
                let ports = interface_ports(&answer.body);
                self.model.lock().expect("model lock").observe_ports(server, &ports);
                self.rec.sample(ServerSample {
                    start_ms: answer.start_ms,
                    end_ms: answer.end_ms,
                    server: server.clone(),
                    source: SampleSource::Interfaces,
                    status: None,
                    task_state: None,
                    ports,
                    macs: vec![],
                    last_start_ms: 0,
                });
            } else {
                self.failed_read(&answer, process, Some(server));
            }
        }
        let start_ms = self.rec.now_ms();
        if let Ok(ports) = self.neutron.ports().await {
            self.rec.neutron_list(start_ms, self.rec.now_ms(), &ports);
        }
    }
}
