use std::collections::BTreeSet;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};

use super::*;
use crate::neutron::{Port, PortFixedIp};
use crate::{InstanceUuid, NetworkId, PortId, ProjectId, SubnetId};

const SERVER: &str = "6f1c1f0e-0000-4000-8000-000000000001";

fn t(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap() + TimeDelta::seconds(seconds)
}

fn port(id: &str, owner: &str, host: Option<&str>) -> Port {
    Port {
        id: PortId::from(id),
        name: String::new(),
        network_id: NetworkId::from("net1"),
        project_id: ProjectId::from("p"),
        mac_address: "fa:16:3e:00:00:01".to_owned(),
        fixed_ips: vec![PortFixedIp {
            subnet_id: SubnetId::from("sub1"),
            ip_address: "10.10.0.5".parse().unwrap(),
        }],
        status: "ACTIVE".to_owned(),
        admin_state_up: true,
        device_id: SERVER.to_owned(),
        device_owner: owner.to_owned(),
        binding_host_id: host.map(str::to_owned),
        vif_type: None,
        vnic_type: None,
        vif_details: serde_json::json!({}),
        profile: serde_json::json!({}),
        tags: BTreeSet::new(),
        revision_number: 4,
        security_groups: Vec::new(),
        port_security_enabled: true,
        created_at: Some(t(3)),
    }
}

fn bound(id: &str) -> Port {
    port(id, "compute:nova", Some("compute2"))
}

fn vif(id: &str, at: i64) -> NovaVif {
    NovaVif {
        port_id: PortId::from(id),
        created_at: t(at),
        deleted: false,
    }
}

fn cached(id: &str) -> CachedVif {
    CachedVif {
        port_id: PortId::from(id),
        network_id: Some(NetworkId::from("net1")),
        addresses: vec!["10.10.0.5".parse().unwrap()],
        preserve_on_delete: false,
    }
}

fn action(name: &str, start: i64, finish: Option<i64>) -> NovaAction {
    NovaAction {
        action: name.to_owned(),
        request_id: format!("req-{name}"),
        start_time: t(start),
        finish_time: finish.map(t),
    }
}

/// A server built between 0 s and 20 s with port `p1`, as Nova records it.
fn built(ports: &[&str]) -> InstanceRecords {
    InstanceRecords {
        instance: NovaInstance {
            uuid: InstanceUuid::from(SERVER),
            project_id: "p".to_owned(),
            host: Some("compute2".to_owned()),
            vm_state: Some("active".to_owned()),
            task_state: None,
            deleted: false,
            deleted_at: None,
            created_at: t(0),
            cell: "cell1".to_owned(),
        },
        vifs: ports.iter().map(|p| vif(p, 12)).collect(),
        cache: ports.iter().map(|p| cached(p)).collect(),
        actions: vec![action("create", 0, Some(20))],
    }
}

fn kinds(audit: &InstanceAudit) -> Vec<(FindingKind, String)> {
    audit
        .findings
        .iter()
        .map(|f| (f.kind, f.port.as_ref().map(ToString::to_string).unwrap_or_default()))
        .collect()
}

#[test]
fn a_server_as_nova_built_it_has_no_finding() {
    let records = built(&["p1", "p2"]);
    let audit = audit_instance(&records, &[bound("p1"), bound("p2")], t(100));
    assert_eq!(kinds(&audit), vec![]);
}

#[test]
fn a_port_heal_adopted_is_a_ghost_shown() {
    // Cases A and C: the cache shows the adopted port, no VIF row names it.
    let mut records = built(&["p1"]);
    records.cache.push(cached("ghost"));
    let audit = audit_instance(&records, &[bound("p1"), bound("ghost")], t(100));
    assert_eq!(kinds(&audit), vec![(FindingKind::GhostShown, "ghost".to_owned())]);
    assert_eq!(audit.findings[0].plan, GcPlan::DeletePortAndTellNova);
    assert_eq!(audit.findings[0].revision(), Some(4));
}

#[test]
fn a_late_port_not_yet_adopted_is_a_ghost_hidden() {
    let records = built(&["p1"]);
    let audit = audit_instance(&records, &[bound("p1"), port("late", "", None)], t(100));
    assert_eq!(kinds(&audit), vec![(FindingKind::GhostHidden, "late".to_owned())]);
    assert_eq!(audit.findings[0].plan, GcPlan::DeletePort);
}

#[test]
fn a_users_port_and_an_attached_port_are_allocated() {
    let mut records = built(&["p1", "users"]);
    records.cache[1].preserve_on_delete = true;
    records.actions.push(action("attach_interface", 500, Some(505)));
    records.vifs.push(vif("attached", 503));
    records.cache.push(cached("attached"));
    let ports = [bound("p1"), bound("users"), bound("attached")];
    assert_eq!(kinds(&audit_instance(&records, &ports, t(900))), vec![]);
}

/// Invariant 26.
#[test]
fn vif_rows_rebuilt_from_the_cache_prove_nothing() {
    // online_data_migrations' fill_virtual_interface_list rewrote the rows a day
    // later, from a cache heal had written: the adopted port got a row too.
    let mut records = built(&["p1", "ghost"]);
    for vif in &mut records.vifs {
        vif.created_at = t(86_400);
    }
    let audit = audit_instance(&records, &[bound("p1"), bound("ghost")], t(90_000));
    assert_eq!(kinds(&audit), vec![]);
    records.vifs.retain(|v| v.port_id.as_str() == "p1");
    let audit = audit_instance(&records, &[bound("p1"), bound("ghost")], t(90_000));
    assert_eq!(kinds(&audit), vec![(FindingKind::Undecided, "ghost".to_owned())]);
    assert_eq!(audit.findings[0].plan, GcPlan::Nothing);
}

#[test]
fn a_rescheduled_build_whose_event_nova_left_unfinished_is_judged() {
    // Nova 34 finishes the first host's event twice and never the second's.
    let mut records = built(&["p1"]);
    records.actions[0].finish_time = None;
    records.cache.push(cached("ghost"));
    let audit = audit_instance(&records, &[bound("p1"), bound("ghost")], t(100));
    assert!(!audit.busy);
    assert_eq!(kinds(&audit), vec![(FindingKind::GhostShown, "ghost".to_owned())]);
    // Its window ends an hour after its start: rows rebuilt a day later prove nothing.
    for vif in &mut records.vifs {
        vif.created_at = t(86_400);
    }
    let audit = audit_instance(&records, &[bound("p1"), bound("ghost")], t(90_000));
    assert_eq!(kinds(&audit), vec![(FindingKind::Undecided, "ghost".to_owned())]);
}

#[test]
fn an_instance_older_than_vif_records_is_undecided() {
    let mut records = built(&["p1"]);
    records.vifs.clear();
    let audit = audit_instance(&records, &[bound("p1")], t(100));
    assert_eq!(kinds(&audit), vec![(FindingKind::Undecided, "p1".to_owned())]);
}

#[test]
fn a_port_the_cache_marks_as_a_users_is_never_a_ghost() {
    let mut records = built(&["p1"]);
    let mut given = cached("given");
    given.preserve_on_delete = true;
    records.cache.push(given);
    let audit = audit_instance(&records, &[bound("p1"), bound("given")], t(100));
    assert_eq!(kinds(&audit), vec![(FindingKind::Undecided, "given".to_owned())]);
}

#[test]
fn another_services_port_is_not_judged() {
    let records = built(&["p1"]);
    let ports = [bound("p1"), port("lb", "Octavia", None)];
    assert_eq!(kinds(&audit_instance(&records, &ports, t(100))), vec![]);
}

#[test]
fn a_busy_instance_is_not_judged() {
    let mut records = built(&["p1"]);
    records.instance.task_state = Some("spawning".to_owned());
    let audit = audit_instance(&records, &[bound("p1"), port("new", "", None)], t(100));
    assert!(audit.busy);
    assert!(audit.findings.is_empty());
}

#[test]
fn an_interface_attach_under_way_is_not_judged_for_an_hour() {
    // Its port carries the device_id before its VIF row is written.
    let mut records = built(&["p1"]);
    records.actions.push(action("attach_interface", 500, None));
    let ports = [bound("p1"), port("attaching", "", None)];
    assert!(audit_instance(&records, &ports, t(510)).busy);
    let later = audit_instance(&records, &ports, t(500 + 3601));
    assert!(
        !later.busy,
        "an attach that never finished (its compute died) holds nothing up"
    );
    assert_eq!(kinds(&later), vec![(FindingKind::GhostHidden, "attaching".to_owned())]);
}

#[test]
fn gone_ports_are_stale_and_unshown_ports_missing() {
    let mut records = built(&["p1", "gone"]);
    records.vifs.push(vif("unshown", 12));
    let audit = audit_instance(&records, &[bound("p1"), bound("unshown")], t(100));
    assert_eq!(
        kinds(&audit),
        vec![
            (FindingKind::Stale, "gone".to_owned()),
            (FindingKind::Missing, "unshown".to_owned())
        ]
    );
    assert!(audit.findings.iter().all(|f| f.plan == GcPlan::Nothing));
}

fn deleted(mut records: InstanceRecords) -> InstanceRecords {
    records.instance.deleted = true;
    records.instance.deleted_at = Some(t(60));
    records.cache.clear();
    for vif in &mut records.vifs {
        vif.deleted = true;
    }
    records
}

#[test]
fn a_port_committed_after_the_delete_is_leaked() {
    // Case E2: the create reached Neutron after the server was deleted.
    let records = deleted(built(&["p1"]));
    let audit = audit_instance(&records, &[port("late", "", None)], t(200));
    assert_eq!(kinds(&audit), vec![(FindingKind::Leaked, "late".to_owned())]);
    assert_eq!(audit.findings[0].plan, GcPlan::DeletePort);
}

#[test]
fn a_port_nova_recorded_on_a_deleted_instance_is_undecided() {
    // A user's port whose unbind failed looks like this: never deleted.
    let records = deleted(built(&["users"]));
    let audit = audit_instance(&records, &[bound("users")], t(200));
    assert_eq!(kinds(&audit), vec![(FindingKind::Undecided, "users".to_owned())]);
}

fn ghost_finding(revision: u64) -> Finding {
    let mut records = built(&["p1"]);
    records.cache.push(cached("ghost"));
    let mut ghost = bound("ghost");
    ghost.revision_number = revision;
    audit_instance(&records, &[bound("p1"), ghost], t(100))
        .findings
        .remove(0)
}

#[test]
fn gc_acts_after_two_sightings_grace_apart_at_one_revision() {
    let grace = TimeDelta::seconds(60);
    let mut sightings = Sightings::default();
    let ghost = ghost_finding(4);
    sightings.record(std::slice::from_ref(&ghost), t(0));
    assert!(!sightings.ready(&ghost, t(0), grace), "one sighting");
    sightings.record(std::slice::from_ref(&ghost), t(30));
    assert!(!sightings.ready(&ghost, t(30), grace), "within grace");
    sightings.record(std::slice::from_ref(&ghost), t(61));
    assert!(sightings.ready(&ghost, t(61), grace));
}

#[test]
fn a_changed_revision_or_a_missed_audit_starts_over() {
    let grace = TimeDelta::seconds(60);
    let mut sightings = Sightings::default();
    sightings.record(&[ghost_finding(4)], t(0));
    let changed = ghost_finding(5);
    sightings.record(std::slice::from_ref(&changed), t(100));
    assert!(!sightings.ready(&changed, t(100), grace), "the revision changed");
    sightings.record(&[], t(200));
    assert!(sightings.is_empty(), "not seen in the last audit");
    sightings.record(std::slice::from_ref(&changed), t(300));
    sightings.record(std::slice::from_ref(&changed), t(400));
    assert!(sightings.ready(&changed, t(400), grace));
    assert!(
        !sightings.ready(&ghost_finding(4), t(400), grace),
        "judged at another revision"
    );
}
