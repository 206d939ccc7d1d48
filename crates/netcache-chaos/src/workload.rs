//! The workload: `ops` operations drawn from a weighted mix, run by `concurrency`
//! workers, optionally paced to `rate` per second, each sent to a seeded netcache
//! process. Operation `i` draws everything from its own ChaCha stream `i` of the
//! seed, so a replay draws the same kinds, processes and parameters; the targets
//! (which server, which port) come from what the run has seen so far.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::api::{Answer, Api};
use super::history::{OpKind, Outcome, Record};
use super::model::Model;
use super::neutron::{Networks, Neutron};
use super::recorder::Recorder;
use super::topology::OneOff;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Choice {
    BootAuto,
    BootNetwork,
    BootMulti,
    BootFixedIp,
    BootUserPort,
    Delete,
    AttachNetwork,
    AttachPort,
    Detach,
    EventChanged,
    EventVifDeleted,
    PlantForeign,
    Heal,
    Gc,
    Disconnect,
}

/// Default weights (`--mix` overrides some).
const DEFAULT_MIX: [(Choice, &str, u32); 15] = [
    (Choice::BootAuto, "boot-auto", 8),
    (Choice::BootNetwork, "boot-network", 8),
    (Choice::BootMulti, "boot-multi", 4),
    (Choice::BootFixedIp, "boot-fixed-ip", 3),
    (Choice::BootUserPort, "boot-user-port", 4),
    (Choice::Delete, "delete", 10),
    (Choice::AttachNetwork, "attach-network", 8),
    (Choice::AttachPort, "attach-port", 4),
    (Choice::Detach, "detach", 6),
    (Choice::EventChanged, "event-changed", 4),
    (Choice::EventVifDeleted, "event-vif-deleted", 3),
    (Choice::PlantForeign, "plant-foreign", 1),
    (Choice::Heal, "heal", 2),
    (Choice::Gc, "gc", 2),
    (Choice::Disconnect, "disconnect", 4),
];

#[derive(Clone, Debug)]
pub struct Mix(Vec<(Choice, u32)>);

impl FromStr for Mix {
    type Err = anyhow::Error;
    /// `name=weight,…` over the defaults; e.g. `delete=20,plant-foreign=0`.
    fn from_str(spec: &str) -> anyhow::Result<Self> {
        let mut weights: Vec<(Choice, u32)> = DEFAULT_MIX.iter().map(|(c, _, w)| (*c, *w)).collect();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((name, weight)) = item.split_once('=') else {
                bail!("--mix takes name=weight pairs, not {item:?}");
            };
            let Some(index) = DEFAULT_MIX.iter().position(|(_, n, _)| *n == name.trim()) else {
                let names: Vec<&str> = DEFAULT_MIX.iter().map(|(_, n, _)| *n).collect();
                bail!("unknown operation {name:?} in --mix; known: {names:?}");
            };
            weights[index].1 = weight.trim().parse()?;
        }
        if weights.iter().all(|(_, w)| *w == 0) {
            bail!("--mix leaves no operation");
        }
        Ok(Self(weights))
    }
}

impl Mix {
    fn pick(&self, rng: &mut ChaCha8Rng) -> Choice {
        let total: u32 = self.0.iter().map(|(_, w)| w).sum();
        let mut n = rng.random_range(0..total);
        for (choice, weight) in &self.0 {
            if n < *weight {
                return *choice;
            }
            n -= weight;
        }
        unreachable!("n < total")
    }
}

pub struct Workload {
    pub seed: u64,
    pub ops: u64,
    pub concurrency: usize,
    /// Operations per second; 0 = as fast as the workers go.
    pub rate: f64,
    pub mix: Mix,
    pub api: Api,
    pub neutron: Neutron,
    pub networks: Networks,
    pub project: String,
    pub one_off: OneOff,
    pub rec: Arc<Recorder>,
    pub model: Arc<Mutex<Model>>,
    /// Operations started so far (the kill schedule waits on it).
    pub progress: watch::Sender<u64>,
    pub one_off_timeout: Duration,
    /// Live servers beyond which a boot becomes a delete (keeps address space and
    /// the sampler's reads bounded in long runs).
    pub max_servers: usize,
    /// Operations that found no target (no server yet, no port to detach).
    pub skipped: AtomicU64,
}

/// A seeded uuid for bogus ids.
fn bogus_uuid(rng: &mut ChaCha8Rng) -> String {
    uuid::Builder::from_random_bytes(rng.random()).into_uuid().to_string()
}

impl Workload {
    pub async fn run(self: Arc<Self>) {
        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let workers: Vec<_> = (0..self.concurrency.max(1))
            .map(|_| tokio::spawn(self.clone().worker(next.clone(), started)))
            .collect();
        for worker in workers {
            let _ = worker.await;
        }
    }

    async fn worker(self: Arc<Self>, next: Arc<AtomicU64>, started: Instant) {
        loop {
            let idx = next.fetch_add(1, Ordering::SeqCst);
            if idx >= self.ops {
                return;
            }
            if self.rate > 0.0 {
                let due = started + Duration::from_secs_f64(idx as f64 / self.rate);
                tokio::time::sleep_until(due.into()).await;
            }
            self.progress.send_modify(|done| *done = (*done).max(idx + 1));
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            rng.set_stream(idx);
            let choice = self.mix.pick(&mut rng);
            let process = self.api.route(rng.random_range(0..self.api.processes()));
            if !self.execute(idx, choice, process, &mut rng).await {
                self.skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().expect("model lock")
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        seq: u64,
        op: OpKind,
        process: Option<usize>,
        server: Option<String>,
        port: Option<String>,
        user_ports: Vec<String>,
        answer: &Answer,
        ports_seen: Vec<String>,
    ) {
        self.rec.record(Record {
            seq,
            op,
            process,
            server,
            port,
            user_ports,
            start_ms: answer.start_ms,
            end_ms: answer.end_ms,
            outcome: answer.outcome.clone(),
            ports_seen,
            note: answer.note(),
        });
    }

    /// Runs one operation; `false` when it found no target.
    async fn execute(&self, idx: u64, choice: Choice, process: usize, rng: &mut ChaCha8Rng) -> bool {
        let boot = matches!(
            choice,
            Choice::BootAuto | Choice::BootNetwork | Choice::BootMulti | Choice::BootFixedIp | Choice::BootUserPort
        );
        let choice = if boot && self.model().live_servers() >= self.max_servers {
            Choice::Delete
        } else {
            choice
        };
        match choice {
            Choice::BootAuto | Choice::BootNetwork | Choice::BootMulti | Choice::BootFixedIp | Choice::BootUserPort => {
                self.boot(idx, choice, process, rng, None).await
            }
            Choice::Delete => self.delete(idx, process, rng, None).await,
            Choice::AttachNetwork | Choice::AttachPort => self.attach(idx, choice, process, rng, None).await,
            Choice::Detach => self.detach(idx, process, rng, None).await,
            Choice::EventChanged | Choice::EventVifDeleted => self.event(idx, choice, process, rng).await,
            Choice::PlantForeign => self.plant(idx, rng).await,
            Choice::Heal | Choice::Gc => self.one_off(idx, choice).await,
            Choice::Disconnect => {
                let hold = Some(Duration::from_millis(rng.random_range(0..=300)));
                match rng.random_range(0..100) {
                    0..40 => self.delete(idx, process, rng, hold).await,
                    40..65 => self.detach(idx, process, rng, hold).await,
                    65..90 => self.attach(idx, Choice::AttachNetwork, process, rng, hold).await,
                    _ => self.boot(idx, Choice::BootNetwork, process, rng, hold).await,
                }
            }
        }
    }

    /// Sends, or sends and disconnects after `hold`.
    async fn send(
        &self,
        process: usize,
        method: Method,
        path: &str,
        body: Option<Value>,
        hold: Option<Duration>,
    ) -> Answer {
        match hold {
            None => self.api.call(process, method, path, body).await,
            Some(hold) => self.api.call_and_disconnect(process, method, path, body, hold).await,
        }
    }

    /// A port of the workload's own on `private`, created through Neutron.
    async fn user_port(&self, idx: u64) -> Option<String> {
        let port = json!({
            "network_id": self.networks.user,
            "project_id": self.project,
            "name": format!("chaos-user-{idx}"),
        });
        self.create_port_recorded(idx, OpKind::CreateUserPort, None, port).await
    }

    /// Creates `port` straight in Neutron (no netcache process involved) and
    /// records it as operation `op` on `server`; returns the new port's id.
    async fn create_port_recorded(&self, idx: u64, op: OpKind, server: Option<String>, port: Value) -> Option<String> {
        let start_ms = self.rec.now_ms();
        let (outcome, id, note) = self.neutron.create_port(port).await;
        self.rec.record(Record {
            seq: idx,
            op,
            process: None,
            server,
            port: id.clone(),
            user_ports: vec![],
            start_ms,
            end_ms: self.rec.now_ms(),
            outcome,
            ports_seen: vec![],
            note,
        });
        id
    }

    async fn boot(
        &self,
        idx: u64,
        choice: Choice,
        process: usize,
        rng: &mut ChaCha8Rng,
        hold: Option<Duration>,
    ) -> bool {
        let nets = &self.networks;
        let mut user_ports = Vec::new();
        let (op, networks) = match choice {
            Choice::BootAuto => (OpKind::BootAuto, json!("auto")),
            Choice::BootMulti => (
                OpKind::BootMulti,
                json!([{"uuid": nets.private}, {"uuid": nets.second}]),
            ),
            Choice::BootFixedIp => {
                let ip = format!(
                    "{}.{}",
                    nets.fixed_prefix.as_deref().unwrap_or("10.0.0"),
                    rng.random_range(100..=250)
                );
                (OpKind::BootFixedIp, json!([{"uuid": nets.private, "fixed_ip": ip}]))
            }
            Choice::BootUserPort => {
                let with_network = rng.random_bool(0.5);
                let Some(port) = self.user_port(idx).await else {
                    return true;
                };
                user_ports.push(port.clone());
                let mut list = vec![json!({"port": port})];
                if with_network {
                    list.push(json!({"uuid": nets.private}));
                }
                (OpKind::BootUserPort, Value::Array(list))
            }
            _ => (OpKind::BootNetwork, json!([{"uuid": nets.private}])),
        };
        let body = json!({"server": {"name": format!("chaos-{idx}"), "flavorRef": "1", "imageRef": netcache_api::images::IMAGES[0].id, "networks": networks}});
        let answer = self.send(process, Method::POST, "/servers", Some(body), hold).await;
        let id = answer.body["server"]["id"].as_str().map(str::to_owned);
        if let Some(id) = &id
            && answer.outcome.is_ack()
        {
            self.model().add_server(id, answer.end_ms);
        }
        self.record(idx, op, Some(process), id, None, user_ports, &answer, vec![]);
        true
    }

    async fn delete(&self, idx: u64, process: usize, rng: &mut ChaCha8Rng, hold: Option<Duration>) -> bool {
        let Some(server) = self.model().pick_server(rng) else {
            return false;
        };
        let answer = self
            .send(process, Method::DELETE, &format!("/servers/{server}"), None, hold)
            .await;
        if answer.outcome.is_ack() {
            self.model().server_gone(&server);
        }
        self.record(
            idx,
            OpKind::Delete,
            Some(process),
            Some(server),
            None,
            vec![],
            &answer,
            vec![],
        );
        true
    }

    async fn attach(
        &self,
        idx: u64,
        choice: Choice,
        process: usize,
        rng: &mut ChaCha8Rng,
        hold: Option<Duration>,
    ) -> bool {
        let Some(server) = self.model().pick_server(rng) else {
            return false;
        };
        let fixed_ip = rng.random_bool(0.2).then(|| rng.random_range(100..=250));
        let (op, attachment, user_ports) = if choice == Choice::AttachPort {
            let Some(port) = self.user_port(idx).await else {
                return true;
            };
            (OpKind::AttachPort, json!({"port_id": port}), vec![port])
        } else {
            let mut a = json!({"net_id": self.networks.private});
            if let (Some(host), Some(prefix)) = (fixed_ip, &self.networks.fixed_prefix) {
                a["fixed_ips"] = json!([{"ip_address": format!("{prefix}.{host}")}]);
            }
            (OpKind::AttachNetwork, a, vec![])
        };
        let path = format!("/servers/{server}/os-interface");
        let answer = self
            .send(
                process,
                Method::POST,
                &path,
                Some(json!({"interfaceAttachment": attachment})),
                hold,
            )
            .await;
        let port = answer.body["interfaceAttachment"]["port_id"]
            .as_str()
            .map(str::to_owned);
        if let Some(port) = &port
            && answer.outcome.is_ack()
        {
            self.model().port_attached(&server, port);
        }
        let seen: Vec<String> = port.iter().cloned().collect();
        let named = user_ports.first().cloned();
        self.record(idx, op, Some(process), Some(server), named, user_ports, &answer, seen);
        true
    }

    async fn detach(&self, idx: u64, process: usize, rng: &mut ChaCha8Rng, hold: Option<Duration>) -> bool {
        let Some((server, port)) = self.model().pick_attached(rng) else {
            return false;
        };
        let path = format!("/servers/{server}/os-interface/{port}");
        let answer = self.send(process, Method::DELETE, &path, None, hold).await;
        if answer.outcome.is_ack() {
            self.model().port_detached(&server, &port);
        }
        self.record(
            idx,
            OpKind::Detach,
            Some(process),
            Some(server),
            Some(port),
            vec![],
            &answer,
            vec![],
        );
        true
    }

    async fn event(&self, idx: u64, choice: Choice, process: usize, rng: &mut ChaCha8Rng) -> bool {
        let Some(server) = self.model().pick_server(rng) else {
            return false;
        };
        let real = rng.random_bool(if choice == Choice::EventChanged { 0.7 } else { 0.5 });
        let bogus = bogus_uuid(rng);
        let tagless = choice == Choice::EventChanged && rng.random_bool(0.1);
        let port = if real {
            self.model().pick_port_of(&server, rng)
        } else {
            None
        }
        .unwrap_or(bogus);
        let (op, name) = match choice {
            Choice::EventChanged => (OpKind::EventChanged, "network-changed"),
            _ => (OpKind::EventVifDeleted, "network-vif-deleted"),
        };
        let mut event = json!({"name": name, "server_uuid": server});
        if !tagless {
            event["tag"] = json!(port);
        }
        let answer = self
            .api
            .call(
                process,
                Method::POST,
                "/os-server-external-events",
                Some(json!({"events": [event]})),
            )
            .await;
        let port = (!tagless).then_some(port);
        self.record(idx, op, Some(process), Some(server), port, vec![], &answer, vec![]);
        true
    }

    /// A port with a live server's `device_id` and no marker: a foreign ghost.
    async fn plant(&self, idx: u64, rng: &mut ChaCha8Rng) -> bool {
        let Some(server) = self.model().pick_server(rng) else {
            return false;
        };
        let port = json!({
            "network_id": self.networks.user,
            "project_id": self.project,
            "device_id": server,
            "device_owner": "compute:foreign",
            "name": format!("chaos-foreign-{idx}"),
        });
        self.create_port_recorded(idx, OpKind::PlantForeign, Some(server), port)
            .await;
        true
    }

    async fn one_off(&self, idx: u64, choice: Choice) -> bool {
        let (op, command) = if choice == Choice::Heal {
            (OpKind::Heal, "heal")
        } else {
            (OpKind::Gc, "gc")
        };
        run_one_off(&self.one_off, &self.rec, idx, op, command, self.one_off_timeout).await;
        true
    }
}

/// Runs `netcache heal|gc` once and records it; returns the exit code.
pub async fn run_one_off(
    one_off: &OneOff,
    rec: &Recorder,
    seq: u64,
    op: OpKind,
    command: &str,
    timeout: Duration,
) -> Option<i32> {
    let start_ms = rec.now_ms();
    let result = one_off.run(command, &[], timeout).await;
    let (outcome, note) = match result {
        Ok(out) => {
            let note = (out.code != Some(0)).then(|| {
                let lines: Vec<&str> = out.stderr.lines().rev().take(3).collect();
                lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
            });
            match out.code {
                Some(code) => (Outcome::Exit { code }, note),
                None => (Outcome::Timeout, note),
            }
        }
        Err(e) => (Outcome::Exit { code: -1 }, Some(e.to_string())),
    };
    let code = match &outcome {
        Outcome::Exit { code } => Some(*code),
        _ => None,
    };
    rec.record(Record {
        seq,
        op,
        process: None,
        server: None,
        port: None,
        user_ports: vec![],
        start_ms,
        end_ms: rec.now_ms(),
        outcome,
        ports_seen: vec![],
        note,
    });
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_overrides_defaults_and_is_seeded() {
        let mix: Mix = "delete=0,gc=5".parse().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let picks: Vec<Choice> = (0..500).map(|_| mix.pick(&mut rng)).collect();
        assert!(!picks.contains(&Choice::Delete));
        assert!(picks.contains(&Choice::Gc));
        let mut again = ChaCha8Rng::seed_from_u64(3);
        assert_eq!(picks, (0..500).map(|_| mix.pick(&mut again)).collect::<Vec<_>>());
        assert!("nope=1".parse::<Mix>().is_err());
        assert!("delete".parse::<Mix>().is_err());
    }
}
