//! An attach whose create had an unknown outcome: once the marker lookup
//! proves no port came of it, the attach creates again under a new intent
//! while its deadline allows, and only past it gives up; a port the lost
//! create still makes is a ghost of ours, which GC collects.

use std::collections::HashSet;

use chrono::TimeDelta;
use netcache_compute::prelude::*;
use netcache_compute::{AttachRequest, Error};
use netcache_domain::ghost::GhostOwner;
use netcache_domain::intent::IntentState;
use netcache_domain::{NetworkId, PortId};
use neutron_sim::{FaultAction, FaultRule};

use crate::support::{Harness, config};
use netcache_testenv::poll::until;

/// A create that Neutron commits an hour later and answers 503 at once: its
/// outcome is unknown, and the marker lookup right after finds no port.
fn lost_create() -> FaultRule {
    FaultRule::new("ports.create", FaultAction::commit_on_release(Some(503))).nth(1)
}

fn on_private(h: &Harness) -> AttachRequest {
    AttachRequest::Network {
        network_id: Some(NetworkId::from(h.topology.private_network_id.as_str())),
        fixed_ip: None,
        tag: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attach_whose_create_was_lost_creates_again_within_its_deadline() {
    let h = Harness::start(config()).await;
    let server = h.boot_with_ports(0).await;
    let private = NetworkId::from(h.topology.private_network_id.as_str());

    h.sim().add_fault(lost_create());
    let attached = h
        .compute
        .attach_interface(&Harness::ctx(), server, on_private(&h))
        .await
        .expect("the attach survives one lost create");
    assert_eq!(attached.vif.network_id, private);
    assert_eq!(h.sim().stats().calls("ports.create"), 2, "one POST per intent");
    let intents = h.compute.store().intents(server).await.unwrap();
    let states: Vec<IntentState> = intents.iter().map(|i| i.state).collect();
    assert_eq!(intents.len(), 2, "a new intent for the second create: {intents:?}");
    assert!(
        states.contains(&IntentState::Abandoned) && states.contains(&IntentState::Created),
        "{states:?}"
    );
    let listed = h.compute.interfaces(server).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(h.cached_port_ids(server).await, [attached.vif.port_id.to_string()]);

    // Past the attach's deadline, a lost create is the attach's end: 504.
    h.sim().clear_faults();
    h.sim().add_fault(lost_create());
    h.sim()
        .add_fault(FaultRule::new("ports.list", FaultAction::Hold).nth(1));
    let compute = h.compute.clone();
    let request = on_private(&h);
    let late = tokio::spawn(async move { compute.attach_interface(&Harness::ctx(), server, request).await });
    until("the lost create", async || h.sim().faults()[0].fired > 0).await;
    // The create was sent, its lookup waits: the deadline passes meanwhile.
    h.compute.clock().advance(TimeDelta::seconds(61));
    assert_eq!(h.release_once_every_fault_fired().await, Ok(1));
    let refused = late.await.unwrap().expect_err("out of time");
    assert!(matches!(refused, Error::CreateAbandoned { .. }), "{refused:?}");
    assert_eq!(h.sim().stats().calls("ports.create"), 3, "no create after the deadline");
    assert_eq!(h.compute.interfaces(server).await.unwrap().len(), 1);

    // The lost creates commit late: ghosts of ours, which GC collects.
    assert_eq!(h.sim().release_delayed_commits(), 2);
    let late_ports: HashSet<String> = h
        .ports_of(server)
        .into_iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .filter(|p| *p != attached.vif.port_id.as_str())
        .collect();
    assert_eq!(late_ports.len(), 2);
    h.compute.heal().await.unwrap();
    let sightings = h.compute.store().ghost_sightings().await.unwrap();
    assert_eq!(sightings.len(), 2, "{sightings:?}");
    assert!(
        sightings
            .iter()
            .all(|s| matches!(s.owner, GhostOwner::Ours { intent: Some(_) })),
        "{sightings:?}"
    );
    h.compute.clock().advance(TimeDelta::minutes(11));
    h.compute.heal().await.unwrap();
    let report = h.compute.gc().await.unwrap();
    let deleted: HashSet<String> = report.deleted.iter().map(PortId::to_string).collect();
    assert_eq!(deleted, late_ports, "{report:?}");
    assert_eq!(h.ports_of(server).len(), 1);
    assert_eq!(h.cached_port_ids(server).await, [attached.vif.port_id.to_string()]);
}
