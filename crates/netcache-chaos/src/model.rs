//! The workload's belief of what exists (servers and their ports), from answers and
//! samples; only used to pick targets for the next operations, never to judge.

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Default)]
struct ServerState {
    /// When the workload learnt of it.
    known_ms: u64,
    gone: bool,
    status: String,
    ports: BTreeSet<String>,
}

#[derive(Debug, Default)]
pub struct Model {
    /// In order of discovery, so a seeded index picks the same server when the run
    /// unfolds the same way.
    order: Vec<String>,
    servers: BTreeMap<String, ServerState>,
}

impl Model {
    pub fn add_server(&mut self, id: &str, now_ms: u64) {
        if !self.servers.contains_key(id) {
            self.order.push(id.to_owned());
            self.servers.insert(
                id.to_owned(),
                ServerState {
                    known_ms: now_ms,
                    status: "BUILD".into(),
                    ..ServerState::default()
                },
            );
        }
    }

    pub fn server_gone(&mut self, id: &str) {
        if let Some(s) = self.servers.get_mut(id) {
            s.gone = true;
        }
    }

    pub fn port_attached(&mut self, server: &str, port: &str) {
        if let Some(s) = self.servers.get_mut(server) {
            s.ports.insert(port.to_owned());
        }
    }

    pub fn port_detached(&mut self, server: &str, port: &str) {
        if let Some(s) = self.servers.get_mut(server) {
            s.ports.remove(port);
        }
    }

    /// A complete server list that started at `start_ms`: servers it lacks that were
    /// known before are gone; new ones are learnt.
    pub fn observe_list(&mut self, start_ms: u64, servers: &[(String, String)]) {
        let listed: BTreeSet<&str> = servers.iter().map(|(id, _)| id.as_str()).collect();
        for (id, s) in &mut self.servers {
            if s.known_ms < start_ms && !listed.contains(id.as_str()) {
                s.gone = true;
            }
        }
        for (id, status) in servers {
            self.add_server(id, start_ms);
            if let Some(s) = self.servers.get_mut(id) {
                s.gone = false;
                s.status.clone_from(status);
            }
        }
    }

    pub fn observe_ports(&mut self, server: &str, ports: &[String]) {
        if let Some(s) = self.servers.get_mut(server) {
            s.ports = ports.iter().cloned().collect();
        }
    }

    #[must_use]
    pub fn live_servers(&self) -> usize {
        self.servers.values().filter(|s| !s.gone).count()
    }

    fn live(&self) -> Vec<&str> {
        self.order
            .iter()
            .filter(|id| !self.servers[*id].gone)
            .map(String::as_str)
            .collect()
    }

    /// A live server, preferring ACTIVE ones (3 in 4).
    pub fn pick_server(&self, rng: &mut ChaCha8Rng) -> Option<String> {
        let live = self.live();
        let active: Vec<&str> = live
            .iter()
            .copied()
            .filter(|id| self.servers[*id].status == "ACTIVE")
            .collect();
        let pool = if !active.is_empty() && rng.random_bool(0.75) {
            active
        } else {
            live
        };
        (!pool.is_empty()).then(|| pool[rng.random_range(0..pool.len())].to_owned())
    }

    /// A (server, port) believed attached.
    pub fn pick_attached(&self, rng: &mut ChaCha8Rng) -> Option<(String, String)> {
        let pairs: Vec<(&str, &String)> = self
            .live()
            .into_iter()
            .flat_map(|id| self.servers[id].ports.iter().map(move |p| (id, p)))
            .collect();
        (!pairs.is_empty()).then(|| {
            let (s, p) = pairs[rng.random_range(0..pairs.len())];
            (s.to_owned(), p.clone())
        })
    }

    /// A port believed attached to `server`.
    pub fn pick_port_of(&self, server: &str, rng: &mut ChaCha8Rng) -> Option<String> {
        let ports: Vec<&String> = self.servers.get(server)?.ports.iter().collect();
        (!ports.is_empty()).then(|| ports[rng.random_range(0..ports.len())].clone())
    }

    #[must_use]
    pub fn known_servers(&self) -> Vec<String> {
        self.order.clone()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_server_missing_from_a_later_list_is_gone() {
        let mut m = Model::default();
        m.add_server("a", 0);
        m.observe_list(10, &[("b".into(), "ACTIVE".into())]);
        m.add_server("c", 20);
        // A list that started before c was known proves nothing about c.
        m.observe_list(15, &[("b".into(), "ACTIVE".into())]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let picks: BTreeSet<String> = (0..50).filter_map(|_| m.pick_server(&mut rng)).collect();
        assert_eq!(picks, ["b".to_owned(), "c".to_owned()].into());
    }
}
