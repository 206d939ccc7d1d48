//! The invariant checker: a pure function from what a chaos run recorded
//! ([`RunData`]) to the violations it proves. No I/O, no clock.
//!
//! Definitions (times are the harness's milliseconds since the run started):
//!
//! * A port is **the server's by evidence** when the workload handed it to the server
//!   (a user port in a boot or attach request for it), an attach answer for the server
//!   named it, or a Neutron port list showed it with the server's `device_id` and either
//!   netcache's ownership marker or as a user port handed to a server whose id the
//!   workload never learnt (a boot whose answer was lost).
//! * A port is **deleted at time t** when a Neutron port list that started after a list
//!   showing the port had ended lacked it and ended at or before t (port ids are never
//!   reused, so a port once gone stays gone).
//!
//! Invariants, each a [`Violation::invariant`] number:
//!
//! 1. **No ghost ever shown.** For every sample of a server (os-interface port ids, and
//!    `addresses` MACs mapped to ports through Neutron's lists), each port shown is the
//!    server's by evidence; its marker's intent is not one the audit lists as abandoned
//!    for that server (a port of an abandoned intent is a ghost by construction); and it
//!    was not deleted at the start of the (latest identical) read. A shown port Neutron
//!    never listed and no answer named cannot be judged; it is only counted
//!    ([`Report::unverified`]).
//! 2. **No leaks after GC.** In the final snapshot every port with netcache's marker is
//!    in the os-interface list of the live server its `device_id` names; every user port
//!    that is in no live server's list is unbound (empty `device_id`); every port in a
//!    live server's list exists in Neutron with that server's `device_id`.
//! 3. **User ports are never deleted**, nor the foreign ports the workload planted.
//! 4. **Nothing stuck:** no live server in `BUILD` or with a task state.
//! 5. **Acknowledged writes are reflected:** a 2xx delete → the server is gone; a 202
//!    boot → the server is live unless a delete was requested; a 200 attach → the port
//!    is in the server's list unless a later detach or delete may have taken effect;
//!    a 2xx detach → the port is not in the server's list.
//! 6. **No unexplained 5xx:** an answer ≥ 500 is allowed only if its status is in
//!    `allowed_5xx` (by default 502, 503, 504: Neutron unreachable or timing out) and a
//!    Neutron fault window whose rules fired overlapped the request; a one-off heal/GC
//!    that failed is allowed only then too.
//! 7. **Audit clean:** `netcache audit` exits 0, or 2 when its only drift is foreign
//!    ghosts the workload planted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::history::{OpKind, Outcome, Record, RunData, SampleSource, ServerSample};

/// What the checker may excuse.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Statuses ≥ 500 allowed while Neutron faults are injected.
    pub allowed_5xx: BTreeSet<u16>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            allowed_5xx: [502, 503, 504].into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// 1–7, as in the module documentation.
    pub invariant: u8,
    pub server: Option<String>,
    pub port: Option<String>,
    pub at_ms: Option<u64>,
    pub message: String,
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub violations: Vec<Violation>,
    /// Shown ports that no evidence covers either way.
    pub unverified: usize,
    /// Port sightings judged.
    pub sightings: usize,
}

impl Report {
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// Servers named by a violation.
    #[must_use]
    pub fn servers(&self) -> BTreeSet<String> {
        self.violations.iter().filter_map(|v| v.server.clone()).collect()
    }

    fn push(&mut self, invariant: u8, server: Option<&str>, port: Option<&str>, at_ms: Option<u64>, message: String) {
        self.violations.push(Violation {
            invariant,
            server: server.map(str::to_owned),
            port: port.map(str::to_owned),
            at_ms,
            message,
        });
    }
}

#[must_use]
pub fn check(data: &RunData, options: &CheckOptions) -> Report {
    let mut report = Report::default();
    let evidence = Evidence::of(data);
    no_ghost_shown(data, &evidence, &mut report);
    no_leaks(data, &evidence, &mut report);
    user_ports_kept(data, &evidence, &mut report);
    nothing_stuck(data, &mut report);
    acks_reflected(data, &mut report);
    no_unexplained_5xx(data, options, &mut report);
    audit_clean(data, &evidence, &mut report);
    report
}

/// Facts derived once from the records and the audits.
struct Evidence {
    /// Port → servers it was handed to by the workload.
    user_ports: BTreeMap<String, BTreeSet<String>>,
    /// User ports handed to a server whose id the workload never learnt.
    orphans: BTreeSet<String>,
    /// Planted foreign port → server.
    planted: BTreeMap<String, String>,
    /// (server, port) named by an attach answer.
    attached_by_answer: BTreeSet<(String, String)>,
    /// Server → intents the audits list as abandoned.
    abandoned: BTreeMap<String, BTreeSet<String>>,
    /// MAC → ports that ever had it.
    macs: BTreeMap<String, Vec<String>>,
}

impl Evidence {
    fn of(data: &RunData) -> Self {
        let attached_by_answer = data
            .records
            .iter()
            .filter(|r| matches!(r.op, OpKind::AttachNetwork | OpKind::AttachPort) && r.outcome.is_ack())
            .filter_map(|r| Some(r.server.clone()?).map(|s| (s, r)))
            .flat_map(|(s, r)| r.ports_seen.iter().map(move |p| (s.clone(), p.clone())))
            .collect();
        let mut abandoned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for audit in [
            data.snapshot.audit_before_gc.as_ref(),
            data.snapshot.audit.report.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            for server in audit_servers(audit) {
                let id = server["id"].as_str().unwrap_or_default().to_owned();
                let intents = strings(&server["abandoned_intents"]);
                abandoned.entry(id).or_default().extend(intents);
            }
        }
        let orphans = data
            .records
            .iter()
            .filter(|r| r.server.is_none())
            .flat_map(|r| r.user_ports.iter().cloned())
            .collect();
        let macs = data
            .neutron
            .mac_index()
            .into_iter()
            .map(|(mac, ids)| (mac, ids.into_iter().map(str::to_owned).collect()))
            .collect();
        Self {
            user_ports: data.user_ports(),
            orphans,
            planted: data.planted(),
            attached_by_answer,
            abandoned,
            macs,
        }
    }

    fn is_servers(&self, data: &RunData, server: &str, port: &str) -> Option<bool> {
        if self.user_ports.get(port).is_some_and(|s| s.contains(server))
            || self.attached_by_answer.contains(&(server.to_owned(), port.to_owned()))
        {
            return Some(true);
        }
        let facts = data.neutron.ports.get(port)?;
        Some((facts.netcache || self.orphans.contains(port)) && facts.device_ids.contains(server))
    }
}

fn audit_servers(audit: &Value) -> impl Iterator<Item = &Value> {
    audit["audit"]["servers"].as_array().into_iter().flatten()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The ports a sample shows: os-interface ids, or addresses' MACs mapped through
/// Neutron's lists (a MAC seen on several ports is resolved by the server's own
/// evidence, else skipped).
fn shown_ports(data: &RunData, evidence: &Evidence, sample: &ServerSample) -> (Vec<String>, usize) {
    match sample.source {
        SampleSource::Interfaces => (sample.ports.clone(), 0),
        SampleSource::Addresses => {
            let mut ports = Vec::new();
            let mut unknown = 0;
            for mac in &sample.macs {
                let candidates = evidence
                    .macs
                    .get(&mac.to_ascii_lowercase())
                    .map_or(&[][..], Vec::as_slice);
                let chosen = match candidates {
                    [] => None,
                    [one] => Some(one.as_str()),
                    many => {
                        let own: Vec<&str> = many
                            .iter()
                            .map(String::as_str)
                            .filter(|p| evidence.is_servers(data, &sample.server, p) == Some(true))
                            .collect();
                        (own.len() == 1).then(|| own[0])
                    }
                };
                match chosen {
                    Some(p) => ports.push(p.to_owned()),
                    None => unknown += 1,
                }
            }
            (ports, unknown)
        }
    }
}

fn no_ghost_shown(data: &RunData, evidence: &Evidence, report: &mut Report) {
    let mut reported: BTreeSet<(String, String, &str)> = BTreeSet::new();
    for sample in &data.samples {
        let (ports, unknown) = shown_ports(data, evidence, sample);
        report.unverified += unknown;
        for port in ports {
            report.sightings += 1;
            let server = sample.server.as_str();
            let mut flag = |what: &'static str, message: String, report: &mut Report| {
                if reported.insert((server.to_owned(), port.clone(), what)) {
                    report.push(1, Some(server), Some(&port), Some(sample.start_ms), message);
                }
            };
            match evidence.is_servers(data, server, &port) {
                None => report.unverified += 1,
                Some(false) => {
                    let why = match (evidence.planted.get(&port), data.neutron.ports.get(&port)) {
                        (Some(_), _) => "a foreign port the workload planted".to_owned(),
                        (_, Some(f)) if f.netcache => {
                            format!("a netcache port of device(s) {:?}", f.device_ids)
                        }
                        (_, Some(f)) => format!("a port without netcache's marker (devices {:?})", f.device_ids),
                        (None, None) => "an unknown port".to_owned(),
                    };
                    flag(
                        "foreign",
                        format!(
                            "{:?} showed port {port}, which is not the server's: {why}",
                            sample.source
                        ),
                        report,
                    );
                }
                Some(true) => {}
            }
            if let Some(facts) = data.neutron.ports.get(&port) {
                if let Some(intent) = &facts.marker_intent
                    && evidence.abandoned.get(server).is_some_and(|a| a.contains(intent))
                {
                    flag(
                        "abandoned",
                        format!(
                            "{:?} showed port {port} of abandoned intent {intent} (a ghost from an ambiguous create)",
                            sample.source
                        ),
                        report,
                    );
                }
                if let Some(gone) = facts.gone_by_ms
                    && gone <= sample.shown_until_ms()
                {
                    flag(
                        "deleted",
                        format!(
                            "{:?} at {} ms showed port {port}, which Neutron had deleted by {gone} ms",
                            sample.source,
                            sample.shown_until_ms()
                        ),
                        report,
                    );
                }
            }
        }
    }
}

fn members(data: &RunData) -> BTreeMap<&str, BTreeSet<&str>> {
    data.snapshot
        .servers
        .iter()
        .map(|s| (s.id.as_str(), s.interfaces.iter().map(String::as_str).collect()))
        .collect()
}

fn no_leaks(data: &RunData, evidence: &Evidence, report: &mut Report) {
    let members = members(data);
    let final_ports: BTreeMap<&str, _> = data.snapshot.ports.iter().map(|p| (p.id.as_str(), p)).collect();
    for port in &data.snapshot.ports {
        let attached_to = members.iter().find(|(_, ports)| ports.contains(port.id.as_str()));
        let device = (!port.device_id.is_empty()).then_some(port.device_id.as_str());
        if port.is_netcache() {
            let ok = attached_to.is_some_and(|(s, _)| Some(*s) == device);
            if !ok {
                let state = match device {
                    Some(d) if members.contains_key(d) => "a live server's, not in its interface list".to_owned(),
                    Some(_) => "a deleted or unknown server's".to_owned(),
                    None => "unbound".to_owned(),
                };
                report.push(
                    2,
                    device,
                    Some(&port.id),
                    None,
                    format!("netcache-owned port {} left after GC: {state}", port.id),
                );
            }
        } else if evidence.user_ports.contains_key(&port.id) {
            match (attached_to, device) {
                (Some((s, _)), d) if d != Some(*s) => report.push(
                    2,
                    Some(s),
                    Some(&port.id),
                    None,
                    format!("user port {} is attached but Neutron binds it to {d:?}", port.id),
                ),
                (None, Some(d)) => report.push(
                    2,
                    Some(d),
                    Some(&port.id),
                    None,
                    format!(
                        "user port {} is attached to no live server but still bound to {d}",
                        port.id
                    ),
                ),
                _ => {}
            }
        }
    }
    for (server, ports) in &members {
        for port in ports {
            match final_ports.get(port) {
                None => report.push(
                    2,
                    Some(server),
                    Some(port),
                    None,
                    format!("interface {port} is listed but Neutron has no such port"),
                ),
                Some(p) if p.device_id != *server => report.push(
                    2,
                    Some(server),
                    Some(port),
                    None,
                    format!("interface {port} is listed but Neutron binds it to {:?}", p.device_id),
                ),
                Some(_) => {}
            }
        }
    }
}

fn user_ports_kept(data: &RunData, evidence: &Evidence, report: &mut Report) {
    let final_ports: BTreeSet<&str> = data.snapshot.ports.iter().map(|p| p.id.as_str()).collect();
    let kept = evidence
        .user_ports
        .iter()
        .map(|(p, servers)| (p, servers.iter().next().cloned(), "user port"))
        .chain(
            evidence
                .planted
                .iter()
                .map(|(p, s)| (p, Some(s.clone()), "planted foreign port")),
        );
    for (port, server, what) in kept {
        let gone_at = data.neutron.ports.get(port).and_then(|f| f.gone_by_ms);
        if !final_ports.contains(port.as_str()) || gone_at.is_some() {
            report.push(
                3,
                server.as_deref(),
                Some(port),
                gone_at,
                format!("{what} {port} was deleted"),
            );
        }
    }
}

fn nothing_stuck(data: &RunData, report: &mut Report) {
    for s in &data.snapshot.servers {
        if s.status == "BUILD" || s.task_state.is_some() {
            report.push(
                4,
                Some(&s.id),
                None,
                None,
                format!("server stuck: status {} task_state {:?}", s.status, s.task_state),
            );
        }
    }
}

fn acks_reflected(data: &RunData, report: &mut Report) {
    let members = members(data);
    // `op` of r's server, not over before r started.
    let later = |r: &Record, op: OpKind, port: Option<&str>| {
        data.records.iter().any(|x| {
            x.op == op
                && x.server == r.server
                && (port.is_none() || x.port.as_deref() == port)
                // Concurrent counts: a delete queued on the attach runs after it.
                && x.end_ms >= r.start_ms
                && x.outcome.may_have_applied()
        })
    };
    for r in &data.records {
        let Some(server) = r.server.as_deref() else { continue };
        let live = members.get(server);
        match r.op {
            OpKind::Delete if r.outcome.is_ack() && live.is_some() => report.push(
                5,
                Some(server),
                None,
                Some(r.end_ms),
                format!("delete answered {} but the server is still live", r.outcome.label()),
            ),
            op if op.is_boot() && r.outcome.is_ack() && live.is_none() => {
                let deleted = data
                    .records
                    .iter()
                    .any(|x| x.op == OpKind::Delete && x.server == r.server && x.outcome.may_have_applied());
                if !deleted {
                    report.push(
                        5,
                        Some(server),
                        None,
                        Some(r.end_ms),
                        "boot answered 202 but the server is gone, and no delete was requested".into(),
                    );
                }
            }
            OpKind::AttachNetwork | OpKind::AttachPort if r.outcome.is_ack() => {
                for port in &r.ports_seen {
                    let detached = later(r, OpKind::Detach, Some(port)) || later(r, OpKind::Delete, None);
                    if !detached && !live.is_some_and(|m| m.contains(port.as_str())) {
                        report.push(
                            5,
                            Some(server),
                            Some(port),
                            Some(r.end_ms),
                            format!(
                                "attach answered 200 with port {port}, never detached, but it is not attached{}",
                                if live.is_none() { " (server gone)" } else { "" }
                            ),
                        );
                    }
                }
            }
            OpKind::Detach if r.outcome.is_ack() => {
                if let Some(port) = &r.port
                    && live.is_some_and(|m| m.contains(port.as_str()))
                {
                    report.push(
                        5,
                        Some(server),
                        Some(port),
                        Some(r.end_ms),
                        format!(
                            "detach of {port} answered {} but it is still attached",
                            r.outcome.label()
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

fn no_unexplained_5xx(data: &RunData, options: &CheckOptions, report: &mut Report) {
    let faulted = |r: &Record| {
        data.faults
            .iter()
            .any(|w| w.fired > 0 && w.start_ms <= r.end_ms && r.start_ms <= w.end_ms)
    };
    for r in &data.records {
        let unexplained = match &r.outcome {
            Outcome::Status { code } if *code >= 500 => !(options.allowed_5xx.contains(code) && faulted(r)),
            Outcome::Exit { code } if *code != 0 && matches!(r.op, OpKind::Heal | OpKind::Gc) => !faulted(r),
            _ => false,
        };
        if unexplained {
            report.push(
                6,
                r.server.as_deref(),
                r.port.as_deref(),
                Some(r.start_ms),
                format!(
                    "{} answered {}{}{}",
                    r.op.label(),
                    r.outcome.label(),
                    if faulted(r) {
                        " during injected faults"
                    } else {
                        " with no fault injected"
                    },
                    r.note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
                ),
            );
        }
    }
}

/// What in an audit's drift is not explained by the foreign ghosts the workload
/// planted (`planted` port ids); one line per drifting server.
pub fn unexplained_drift(audit: &Value, planted: &BTreeSet<String>) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for server in audit_servers(audit).filter(|s| s["drift"].as_bool() != Some(false)) {
        let mut problems = Vec::new();
        for ghost in server["ghosts"].as_array().into_iter().flatten() {
            let port = ghost["port_id"].as_str().unwrap_or_default();
            let foreign = ghost["owner"].as_str().is_some_and(|o| o.contains("foreign"));
            if !(foreign && planted.contains(port)) {
                problems.push(format!("ghost {port} ({})", ghost["owner"]));
            }
        }
        for key in ["lost", "releasing", "pending_intents"] {
            if server[key].as_array().is_some_and(|a| !a.is_empty()) {
                problems.push(format!("{key} {}", server[key]));
            }
        }
        if server["stale_cache"].as_bool() == Some(true) {
            problems.push("stale cache".into());
        }
        if !problems.is_empty() {
            out.push((server["id"].as_str().map(str::to_owned), problems.join("; ")));
        }
    }
    out
}

fn audit_clean(data: &RunData, evidence: &Evidence, report: &mut Report) {
    let audit = &data.snapshot.audit;
    match (audit.exit_code, &audit.report) {
        (Some(0), _) => {}
        (Some(2), Some(json)) => {
            let planted = evidence.planted.keys().cloned().collect();
            for (server, problem) in unexplained_drift(json, &planted) {
                report.push(7, server.as_deref(), None, None, format!("audit drift: {problem}"));
            }
        }
        (Some(2), None) => report.push(7, None, None, None, "audit exited 2 without a report".into()),
        (Some(code), _) => report.push(7, None, None, None, format!("audit exited {code}")),
        (None, _) => report.push(7, None, None, None, "audit could not be run".into()),
    }
}

#[cfg(test)]
#[path = "checker_tests.rs"]
mod tests;
