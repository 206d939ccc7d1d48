//! The checker's own tests: clean inputs pass; deliberately broken histories and
//! snapshots (a ghost shown, a skipped release, a stuck server, a 500, a deleted user
//! port, …) are each caught by the invariant they break.

use serde_json::json;

use super::*;
use crate::history::{AuditOutcome, FaultWindow, FinalServer, FinalSnapshot, NeutronTimeline, PortObs, Record};

const S1: &str = "server-1";
const S2: &str = "server-2";

fn ours(id: &str, server: &str, intent: &str) -> PortObs {
    PortObs {
        id: id.into(),
        mac: format!("fa:16:3e:00:00:{}", &id[id.len() - 2..]),
        device_id: server.into(),
        device_owner: "compute:nova".into(),
        tags: vec!["netcache:owner=dep".into(), format!("netcache:intent={intent}")],
        binding_host: "p0-h1".into(),
        ..PortObs::default()
    }
}

fn user(id: &str, server: &str) -> PortObs {
    PortObs {
        id: id.into(),
        mac: format!("fa:16:3e:00:01:{}", &id[id.len() - 2..]),
        device_id: server.into(),
        name: "chaos-user".into(),
        ..PortObs::default()
    }
}

fn record(op: OpKind, server: Option<&str>, port: Option<&str>, t: u64, outcome: Outcome) -> Record {
    Record {
        seq: t,
        op,
        process: Some(0),
        server: server.map(str::to_owned),
        port: port.map(str::to_owned),
        user_ports: vec![],
        start_ms: t,
        end_ms: t + 5,
        outcome,
        ports_seen: vec![],
        note: None,
    }
}

fn ok(code: u16) -> Outcome {
    Outcome::Status { code }
}

fn interfaces(t: u64, server: &str, ports: &[&str]) -> ServerSample {
    ServerSample {
        start_ms: t,
        end_ms: t + 2,
        server: server.into(),
        source: SampleSource::Interfaces,
        status: Some("ACTIVE".into()),
        task_state: None,
        ports: ports.iter().map(|p| (*p).to_owned()).collect(),
        macs: vec![],
        last_start_ms: 0,
    }
}

fn clean_audit() -> AuditOutcome {
    AuditOutcome {
        exit_code: Some(0),
        report: Some(json!({"audit": {"clean": true, "servers": [
            {"id": S1, "drift": false, "abandoned_intents": ["i-lost"]}
        ]}})),
    }
}

/// A clean run: S1 booted with netcache port pa01 and user port pu01, then port
/// pa02 attached; S2 booted and deleted (its port pa03 deleted); a foreign ghost
/// pf01 planted on S1; a 503 while Neutron was unreachable.
fn clean() -> RunData {
    let mut neutron = NeutronTimeline::default();
    let pa01 = ours("pa01", S1, "i-1");
    let pa02 = ours("pa02", S1, "i-2");
    let pa03 = ours("pa03", S2, "i-3");
    let pu01 = user("pu01", S1);
    let pf01 = PortObs {
        device_owner: "compute:foreign".into(),
        ..user("pf01", S1)
    };
    neutron.observe(0, 10, &[pa01.clone(), pu01.clone(), pa03.clone()]);
    neutron.observe(
        20,
        30,
        &[pa01.clone(), pa02.clone(), pu01.clone(), pa03.clone(), pf01.clone()],
    );
    neutron.observe(40, 50, &[pa01.clone(), pa02.clone(), pu01.clone(), pf01.clone()]);
    let mut records = vec![
        record(OpKind::CreateUserPort, None, Some("pu01"), 0, ok(201)),
        Record {
            user_ports: vec!["pu01".into()],
            ..record(OpKind::BootUserPort, Some(S1), None, 1, ok(202))
        },
        record(OpKind::BootNetwork, Some(S2), None, 2, ok(202)),
        Record {
            ports_seen: vec!["pa02".into()],
            ..record(OpKind::AttachNetwork, Some(S1), None, 15, ok(200))
        },
        record(OpKind::PlantForeign, Some(S1), Some("pf01"), 16, ok(201)),
        record(OpKind::Delete, Some(S2), None, 35, ok(204)),
        record(OpKind::AttachNetwork, Some(S1), None, 36, ok(503)),
    ];
    records.sort_by_key(|r| r.start_ms);
    RunData {
        records,
        samples: vec![
            interfaces(12, S1, &["pa01", "pu01"]),
            ServerSample {
                source: SampleSource::Addresses,
                ports: vec![],
                macs: vec![pa01.mac.clone(), pa02.mac.clone(), pu01.mac.clone()],
                ..interfaces(32, S1, &[])
            },
            interfaces(32, S2, &["pa03"]),
        ],
        neutron,
        faults: vec![FaultWindow {
            start_ms: 30,
            end_ms: 45,
            kinds: vec!["unreachable".into()],
            unreachable: true,
            fired: 3,
        }],
        kills: vec![],
        snapshot: FinalSnapshot {
            servers: vec![FinalServer {
                id: S1.into(),
                status: "ACTIVE".into(),
                task_state: None,
                interfaces: vec!["pa01".into(), "pu01".into(), "pa02".into()],
                macs: vec![],
            }],
            ports: vec![pa01, pa02, pu01, pf01],
            audit: clean_audit(),
            audit_before_gc: None,
        },
    }
}

fn invariants(data: &RunData) -> Vec<u8> {
    let report = check(data, &CheckOptions::default());
    let mut found: Vec<u8> = report.violations.iter().map(|v| v.invariant).collect();
    found.dedup();
    found
}

#[test]
fn a_clean_run_passes() {
    let report = check(&clean(), &CheckOptions::default());
    assert!(report.is_clean(), "{:#?}", report.violations);
    assert!(report.sightings >= 6, "{report:?}");
}

#[test]
fn a_shown_foreign_ghost_is_caught() {
    let mut data = clean();
    data.samples.push(interfaces(33, S1, &["pa01", "pf01"]));
    assert_eq!(invariants(&data), [1]);
}

#[test]
fn a_shown_port_of_an_abandoned_intent_is_caught() {
    let mut data = clean();
    let mut ports = data.snapshot.ports.clone();
    ports.push(ours("pg01", S1, "i-lost"));
    data.neutron.observe(60, 70, &ports);
    data.samples.push(interfaces(75, S1, &["pa01", "pg01"]));
    let report = check(&data, &CheckOptions::default());
    assert_eq!(report.violations.len(), 1, "{:#?}", report.violations);
    assert!(report.violations[0].message.contains("abandoned intent"));
}

#[test]
fn a_shown_port_neutron_had_deleted_is_caught() {
    let mut data = clean();
    // pa03 was gone by 50 ms; S2 still shows it at 55 ms.
    data.samples.push(interfaces(55, S2, &["pa03"]));
    let report = check(&data, &CheckOptions::default());
    assert_eq!(invariants(&data), [1]);
    assert!(report.violations[0].message.contains("deleted"), "{report:?}");
}

#[test]
fn a_repeated_read_that_still_shows_a_deleted_port_is_caught() {
    let mut data = clean();
    // First shown at 32 ms (pa03 still existed), the same view read again at 60 ms.
    data.samples[2].last_start_ms = 60;
    assert_eq!(invariants(&data), [1]);
}

#[test]
fn a_user_port_of_a_boot_whose_answer_was_lost_is_the_servers() {
    let mut data = clean();
    let lost = ServerSample {
        server: "server-3".into(),
        ..interfaces(62, "server-3", &["pu02"])
    };
    let mut ports = data.snapshot.ports.clone();
    ports.push(user("pu02", "server-3"));
    data.neutron.observe(55, 58, &ports);
    data.samples.push(lost);
    data.records
        .push(record(OpKind::CreateUserPort, None, Some("pu02"), 50, ok(201)));
    data.records.push(Record {
        user_ports: vec!["pu02".into()],
        ..record(OpKind::BootUserPort, None, None, 51, Outcome::ConnectionFailed)
    });
    data.snapshot.servers.push(FinalServer {
        id: "server-3".into(),
        status: "ACTIVE".into(),
        interfaces: vec!["pu02".into()],
        ..FinalServer::default()
    });
    data.snapshot.ports = ports;
    let report = check(&data, &CheckOptions::default());
    assert!(report.is_clean(), "{:#?}", report.violations);
}

#[test]
fn a_skipped_release_leaks_a_port() {
    let mut data = clean();
    // S2's port was never released: Neutron still has it after GC.
    data.snapshot.ports.push(ours("pa03", S2, "i-3"));
    data.neutron.ports.get_mut("pa03").unwrap().gone_by_ms = None;
    assert_eq!(invariants(&data), [2]);
}

#[test]
fn a_user_port_left_bound_to_a_deleted_server_is_caught() {
    let mut data = clean();
    data.snapshot.servers[0].interfaces.retain(|p| p != "pu01");
    // Detached (acknowledged) but never unbound.
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("pu01"), 60, ok(202)));
    assert_eq!(invariants(&data), [2]);
}

#[test]
fn a_deleted_user_port_is_caught() {
    let mut data = clean();
    data.snapshot.ports.retain(|p| p.id != "pu01");
    data.snapshot.servers[0].interfaces.retain(|p| p != "pu01");
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("pu01"), 60, ok(202)));
    assert_eq!(invariants(&data), [3]);
}

#[test]
fn a_stuck_server_is_caught() {
    let mut data = clean();
    data.snapshot.servers[0].task_state = Some("deleting".into());
    assert_eq!(invariants(&data), [4]);
    let mut data = clean();
    data.snapshot.servers[0].status = "BUILD".into();
    assert_eq!(invariants(&data), [4]);
}

#[test]
fn an_acknowledged_delete_that_did_not_happen_is_caught() {
    let mut data = clean();
    data.records.push(record(OpKind::Delete, Some(S1), None, 60, ok(204)));
    assert_eq!(invariants(&data), [5]);
}

#[test]
fn an_acknowledged_attach_that_vanished_is_caught() {
    let mut data = clean();
    data.snapshot.servers[0].interfaces.retain(|p| p != "pa02");
    data.snapshot.ports.retain(|p| p.id != "pa02");
    assert_eq!(invariants(&data), [5]);
    // A detach over before the attach started explains nothing ...
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("pa02"), 5, ok(202)));
    assert_eq!(invariants(&data), [5]);
    // ... one running while it ran (queued on it), or later, does.
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("pa02"), 11, ok(202)));
    assert!(invariants(&data).is_empty());
}

#[test]
fn a_500_is_caught_even_during_faults() {
    let mut data = clean();
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("pa02"), 40, ok(500)));
    assert_eq!(invariants(&data), [6]);
    // A 503 with no fault injected is not explained either.
    let mut data = clean();
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("zz"), 100, ok(503)));
    assert_eq!(invariants(&data), [6]);
    // 500 may be allowed by option.
    let mut data = clean();
    data.records
        .push(record(OpKind::Detach, Some(S1), Some("zz"), 40, ok(500)));
    let options = CheckOptions {
        allowed_5xx: [500, 503].into(),
    };
    assert!(check(&data, &options).is_clean());
}

#[test]
fn audit_drift_other_than_planted_ghosts_is_caught() {
    let mut data = clean();
    data.snapshot.audit = AuditOutcome {
        exit_code: Some(2),
        report: Some(json!({"audit": {"servers": [
            {"id": S1, "drift": true, "ghosts": [{"port_id": "pf01", "owner": "foreign"}]}
        ]}})),
    };
    assert!(
        invariants(&data).is_empty(),
        "planted foreign ghosts are expected drift"
    );
    data.snapshot.audit.report = Some(json!({"audit": {"servers": [
        {"id": S1, "drift": true, "ghosts": [{"port_id": "pz99", "owner": "ours"}], "releasing": ["pa09"]}
    ]}}));
    assert_eq!(invariants(&data), [7]);
    data.snapshot.audit = AuditOutcome {
        exit_code: Some(1),
        report: None,
    };
    assert_eq!(invariants(&data), [7]);
}
