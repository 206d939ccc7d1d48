//! `network-vif-plugged` events are kept only for builds that wait for them:
//! one that arrives before its build waits wakes it, and none is kept for a
//! server no build of this process waits for (finding 11b).

use std::time::Duration;

use netcache_compute::ExternalEvent;
use netcache_compute::prelude::*;
use netcache_domain::server::VmState;
use neutron_sim::{FaultAction, FaultRule};

use crate::support::{Harness, config};
use netcache_testenv::poll::until;

fn plugged(server: &str, port: &str) -> ExternalEvent {
    ExternalEvent {
        name: "network-vif-plugged".to_owned(),
        server_uuid: server.to_owned(),
        tag: Some(port.to_owned()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plug_events_are_kept_only_while_a_build_waits_for_them() {
    let mut waits = config();
    waits.vif_plugging_timeout = Duration::from_secs(30);
    waits.vif_plugging_is_fatal = true;
    let h = Harness::start(waits).await;

    // The port is made, its answer lost; its event comes while the build
    // still looks its marker up, before the port is in any record or cache.
    h.sim()
        .add_fault(FaultRule::new("ports.create", FaultAction::CommitThenDrop).nth(1));
    h.sim()
        .add_fault(FaultRule::new("ports.list", FaultAction::Hold).nth(1));
    let server = h
        .compute
        .create_server(&Harness::ctx(), h.boot_request(1))
        .await
        .unwrap()
        .id;
    until("the held list", async || h.sim().faults()[1].fired > 0).await;
    let ports = h.ports_of(server);
    assert_eq!(ports.len(), 1);
    let port = ports[0]["id"].as_str().unwrap().to_owned();
    h.compute
        .external_event(&plugged(&server.to_string(), &port))
        .await
        .unwrap();
    assert_eq!(h.compute.plug_events_kept(), 1, "the waiting build's event is kept");
    assert!(h.release_once_every_fault_fired().await.is_ok());
    h.compute.settle().await;
    let stored = h.compute.store().server(server).await.unwrap().unwrap();
    assert_eq!(stored.vm_state, VmState::Active, "{:?}", stored.fault);
    assert_eq!(h.compute.plug_events_kept(), 0, "forgotten once the build spawned");

    // Nobody waits for this server any more.
    for i in 0..100 {
        h.compute
            .external_event(&plugged(&server.to_string(), &format!("port-{i}")))
            .await
            .unwrap();
    }
    assert_eq!(h.compute.plug_events_kept(), 0, "no event kept that no build waits for");
}
