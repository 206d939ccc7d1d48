//! What a chaos run saw, as plain data: every request and its outcome, samples of
//! the compute API, what Neutron's port lists showed over time, fault windows,
//! kills and the final snapshot. The checker is a pure function of a [`RunData`];
//! nothing here does I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a recorded request did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// `POST /servers` with `"networks": "auto"`.
    BootAuto,
    /// Boot on one named network.
    BootNetwork,
    /// Boot with several networks.
    BootMulti,
    /// Boot on a network with a fixed IP.
    BootFixedIp,
    /// Boot with a port the workload created in Neutron first.
    BootUserPort,
    /// `DELETE /servers/{id}`.
    Delete,
    /// Attach a new port on a network.
    AttachNetwork,
    /// Attach a port the workload created.
    AttachPort,
    /// `DELETE /servers/{id}/os-interface/{port}`.
    Detach,
    /// `network-changed` for a port (real or bogus).
    EventChanged,
    /// `network-vif-deleted` for a port (real or bogus).
    EventVifDeleted,
    /// The workload's own `POST /v2.0/ports` (a user port).
    CreateUserPort,
    /// A port the workload created with a server's `device_id`: a foreign ghost.
    PlantForeign,
    /// `netcache heal` (one-off command).
    Heal,
    /// `netcache gc` (one-off command).
    Gc,
    /// A read of the sampler that failed with a 5xx (successful reads are samples).
    SampleRead,
}

impl OpKind {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::BootAuto => "boot auto",
            Self::BootNetwork => "boot network",
            Self::BootMulti => "boot networks",
            Self::BootFixedIp => "boot fixed-ip",
            Self::BootUserPort => "boot user-port",
            Self::Delete => "delete",
            Self::AttachNetwork => "attach network",
            Self::AttachPort => "attach port",
            Self::Detach => "detach",
            Self::EventChanged => "event network-changed",
            Self::EventVifDeleted => "event vif-deleted",
            Self::CreateUserPort => "neutron create user port",
            Self::PlantForeign => "neutron plant foreign",
            Self::Heal => "heal (one-off)",
            Self::Gc => "gc (one-off)",
            Self::SampleRead => "sample read",
        }
    }

    #[must_use]
    pub fn is_boot(self) -> bool {
        matches!(
            self,
            Self::BootAuto | Self::BootNetwork | Self::BootMulti | Self::BootFixedIp | Self::BootUserPort
        )
    }
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    /// An HTTP answer.
    Status { code: u16 },
    /// No connection, or it broke before an answer (e.g. the process was killed).
    ConnectionFailed,
    /// No answer within the client's timeout.
    Timeout,
    /// The workload closed the connection on purpose after sending the request.
    Disconnected,
    /// A one-off command's exit code.
    Exit { code: i32 },
}

impl Outcome {
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { code } => Some(*code),
            _ => None,
        }
    }

    /// The service acknowledged the request (2xx).
    #[must_use]
    pub fn is_ack(&self) -> bool {
        self.status().is_some_and(|c| (200..300).contains(&c))
    }

    /// The request may have taken effect: anything but a 4xx refusal.
    #[must_use]
    pub fn may_have_applied(&self) -> bool {
        !self.status().is_some_and(|c| (400..500).contains(&c))
    }

    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Status { code } => code.to_string(),
            Self::ConnectionFailed => "connection failed".into(),
            Self::Timeout => "timeout".into(),
            Self::Disconnected => "disconnected".into(),
            Self::Exit { code } => format!("exit {code}"),
        }
    }
}

/// One request of the workload (or a failed read of the sampler).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Workload operation index (the seed's stream), or a sequence number of its own.
    pub seq: u64,
    pub op: OpKind,
    /// Which netcache process was asked (none for Neutron calls and one-off commands).
    pub process: Option<usize>,
    pub server: Option<String>,
    /// The port the request names (attach by port, detach, event tag, created port).
    pub port: Option<String>,
    /// Ports of the workload's own that this request handed to `server`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_ports: Vec<String>,
    /// Milliseconds since the run started.
    pub start_ms: u64,
    pub end_ms: u64,
    pub outcome: Outcome,
    /// Port ids the answer named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports_seen: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a sample's ports come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SampleSource {
    /// `GET /servers/detail`: `addresses` (MACs, mapped to ports by the checker).
    Addresses,
    /// `GET /servers/{id}/os-interface`: port ids.
    Interfaces,
}

/// What the compute API showed for one server at one time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    pub start_ms: u64,
    pub end_ms: u64,
    pub server: String,
    pub source: SampleSource,
    pub status: Option<String>,
    pub task_state: Option<String>,
    /// Port ids (os-interface).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    /// MAC addresses (addresses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub macs: Vec<String>,
    /// Later samples that showed exactly the same are folded into this one: the
    /// start of the last of them (0: none).
    #[serde(default)]
    pub last_start_ms: u64,
}

impl ServerSample {
    /// Start of the latest read that showed this.
    #[must_use]
    pub fn shown_until_ms(&self) -> u64 {
        self.start_ms.max(self.last_start_ms)
    }

    /// Same server, source and content.
    #[must_use]
    pub fn same_view(&self, other: &ServerSample) -> bool {
        self.server == other.server
            && self.source == other.source
            && self.status == other.status
            && self.task_state == other.task_state
            && self.ports == other.ports
            && self.macs == other.macs
    }
}

/// One port as a Neutron port list showed it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortObs {
    pub id: String,
    pub mac: String,
    pub device_id: String,
    pub device_owner: String,
    pub name: String,
    pub tags: Vec<String>,
    pub binding_host: String,
}

impl PortObs {
    /// Reads a Neutron port body; `None` without an id.
    #[must_use]
    pub fn from_json(port: &Value) -> Option<Self> {
        let text = |key: &str| port[key].as_str().unwrap_or_default().to_owned();
        let id = text("id");
        if id.is_empty() {
            return None;
        }
        Some(Self {
            id,
            mac: text("mac_address").to_ascii_lowercase(),
            device_id: text("device_id"),
            device_owner: text("device_owner"),
            name: text("name"),
            tags: port["tags"]
                .as_array()
                .map(|t| t.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            binding_host: text("binding:host_id"),
        })
    }

    /// Carries netcache's ownership marker (owner tag, or the `netcache:` name).
    #[must_use]
    pub fn is_netcache(&self) -> bool {
        self.tags.iter().any(|t| t.starts_with("netcache:owner=")) || self.name.starts_with("netcache:")
    }

    /// The intent id of netcache's marker, from the tags or else the name.
    pub fn marker_intent(&self) -> Option<String> {
        self.tags
            .iter()
            .find_map(|t| t.strip_prefix("netcache:intent="))
            .map(str::to_owned)
            .or_else(|| {
                let (_, intent) = self.name.strip_prefix("netcache:")?.split_once(':')?;
                Some(intent.to_owned())
            })
    }
}

/// Everything the port lists told about one port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortFacts {
    pub mac: String,
    /// Every non-empty `device_id` it was seen with.
    pub device_ids: BTreeSet<String>,
    pub netcache: bool,
    pub marker_intent: Option<String>,
    /// End of the first list that showed it.
    pub first_seen_ms: u64,
    /// End of the first list that *started* after a list showing it had ended, and
    /// lacked it: Neutron had deleted it by then (ids are never reused).
    pub gone_by_ms: Option<u64>,
    /// As last seen.
    pub last: PortObs,
}

/// What Neutron's port lists showed over the run, condensed per port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeutronTimeline {
    pub lists: u64,
    pub ports: BTreeMap<String, PortFacts>,
}

impl NeutronTimeline {
    /// Folds in one complete port list that ran from `start_ms` to `end_ms`.
    pub fn observe(&mut self, start_ms: u64, end_ms: u64, ports: &[PortObs]) {
        self.lists += 1;
        let present: BTreeSet<&str> = ports.iter().map(|p| p.id.as_str()).collect();
        for (id, facts) in &mut self.ports {
            if facts.gone_by_ms.is_none() && facts.first_seen_ms <= start_ms && !present.contains(id.as_str()) {
                facts.gone_by_ms = Some(end_ms);
            }
        }
        for port in ports {
            let facts = self.ports.entry(port.id.clone()).or_insert_with(|| PortFacts {
                first_seen_ms: end_ms,
                ..PortFacts::default()
            });
            facts.first_seen_ms = facts.first_seen_ms.min(end_ms);
            if !port.device_id.is_empty() {
                facts.device_ids.insert(port.device_id.clone());
            }
            facts.netcache |= port.is_netcache();
            if facts.marker_intent.is_none() {
                facts.marker_intent = port.marker_intent();
            }
            facts.mac.clone_from(&port.mac);
            facts.last = port.clone();
        }
    }

    /// MAC → the ports that ever had it.
    #[must_use]
    pub fn mac_index(&self) -> BTreeMap<String, Vec<&str>> {
        let mut index: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (id, facts) in &self.ports {
            index
                .entry(facts.mac.to_ascii_lowercase())
                .or_default()
                .push(id.as_str());
        }
        index
    }
}

/// Neutron faults were injected from `start_ms` to `end_ms` (the end includes the
/// slack for calls still held by a fault: netcache's timeout and retries).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultWindow {
    pub start_ms: u64,
    pub end_ms: u64,
    pub kinds: Vec<String>,
    /// Neutron became unreachable for netcache (every call refused or reset).
    pub unreachable: bool,
    /// Times the rules fired.
    pub fired: u64,
}

/// A `kill -9` and the restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kill {
    pub process: usize,
    pub at_ms: u64,
    /// When the restarted process answered again (`None`: it did not).
    pub ready_ms: Option<u64>,
}

/// A live server at the end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalServer {
    pub id: String,
    pub status: String,
    pub task_state: Option<String>,
    /// os-interface port ids.
    pub interfaces: Vec<String>,
    /// MACs in `addresses`.
    pub macs: Vec<String>,
}

/// `netcache audit --json` at the end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditOutcome {
    /// Exit code; `None` when it could not be run.
    pub exit_code: Option<i32>,
    pub report: Option<Value>,
}

/// The state after the run settled, heal ran and GC passed its grace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalSnapshot {
    /// Live servers (`GET /servers/detail`), each with its os-interface list.
    pub servers: Vec<FinalServer>,
    /// Neutron's ports.
    pub ports: Vec<PortObs>,
    pub audit: AuditOutcome,
    /// The audit before the GC passes (abandoned intents, ghosts not yet deleted).
    pub audit_before_gc: Option<Value>,
}

/// Everything the checker needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    pub records: Vec<Record>,
    pub samples: Vec<ServerSample>,
    pub neutron: NeutronTimeline,
    pub faults: Vec<FaultWindow>,
    pub kills: Vec<Kill>,
    pub snapshot: FinalSnapshot,
}

impl RunData {
    /// Ports the workload created itself, each with the servers it was handed to.
    #[must_use]
    pub fn user_ports(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut ports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in &self.records {
            if r.op == OpKind::CreateUserPort
                && r.outcome.is_ack()
                && let Some(port) = &r.port
            {
                ports.entry(port.clone()).or_default();
            }
        }
        for r in &self.records {
            if let Some(server) = &r.server {
                for port in &r.user_ports {
                    ports.entry(port.clone()).or_default().insert(server.clone());
                }
            }
        }
        ports
    }

    /// Foreign ghosts the workload planted: port → the server whose device_id it carries.
    #[must_use]
    pub fn planted(&self) -> BTreeMap<String, String> {
        self.records
            .iter()
            .filter(|r| r.op == OpKind::PlantForeign && r.outcome.is_ack())
            .filter_map(|r| Some((r.port.clone()?, r.server.clone()?)))
            .collect()
    }

    /// Every record that names `server`, in start order.
    pub fn records_of<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
        self.records.iter().filter(move |r| r.server.as_deref() == Some(server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(id: &str, device: &str) -> PortObs {
        PortObs {
            id: id.into(),
            mac: format!("fa:16:3e:00:00:{}", &id[id.len() - 2..]),
            device_id: device.into(),
            ..PortObs::default()
        }
    }

    #[test]
    fn a_port_is_gone_only_after_a_list_that_started_after_it_was_seen() {
        let mut t = NeutronTimeline::default();
        t.observe(0, 10, &[port("p01", "s1")]);
        // Overlapping list (started before the first ended): proves nothing.
        t.observe(5, 20, &[]);
        assert_eq!(t.ports["p01"].gone_by_ms, None);
        t.observe(30, 40, &[]);
        assert_eq!(t.ports["p01"].gone_by_ms, Some(40));
        assert!(t.ports["p01"].device_ids.contains("s1"));
    }

    #[test]
    fn markers_are_read_from_tags_or_name() {
        let mut p = port("p01", "s1");
        assert!(!p.is_netcache());
        p.tags = vec!["netcache:owner=dep".into(), "netcache:intent=i-1".into()];
        assert!(p.is_netcache());
        assert_eq!(p.marker_intent().as_deref(), Some("i-1"));
        let mut q = port("p02", "s1");
        q.name = "netcache:dep:i-2".into();
        assert!(q.is_netcache());
        assert_eq!(q.marker_intent().as_deref(), Some("i-2"));
    }
}
