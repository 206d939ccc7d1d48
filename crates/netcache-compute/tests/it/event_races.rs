//! An event that finds a port lost races a release of the same port: the
//! lost mark is part of the event's compare-and-swap on the cache, so a
//! release recorded meanwhile wins and the record stays `releasing`
//! (finding 11a).

use netcache_compute::prelude::*;
use netcache_compute::{ExternalEvent, HoldPoint};
use netcache_domain::PortId;
use netcache_domain::vif::VifState;
use neutron_sim::{FaultAction, FaultRule};

use crate::support::{Harness, config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_finding_a_port_lost_never_overwrites_its_release() {
    let h = Harness::start(config()).await;
    let server = h.boot().await;
    let port = h.cached_port_ids(server).await.remove(0);
    let port_id = PortId::from(port.as_str());
    // Gone behind netcache's back: the event's look finds it lost.
    assert_eq!(h.sim().request("DELETE", &format!("/v2.0/ports/{port}"), None).0, 204);

    let held = h.compute.hold_at(HoldPoint::EventLostMark);
    let compute = h.compute.clone();
    let event = ExternalEvent {
        name: "network-changed".to_owned(),
        server_uuid: server.to_string(),
        tag: Some(port.clone()),
    };
    let event = tokio::spawn(async move { compute.external_event(&event).await });
    held.reached().await;

    // Meanwhile the port is detached; Neutron fails the delete, so the record
    // stays `releasing` for GC to retry.
    h.sim()
        .add_fault(FaultRule::new("ports.delete", FaultAction::Error { status: 503 }));
    h.compute
        .detach_interface(&Harness::ctx(), server, &port_id)
        .await
        .unwrap();
    h.compute.settle().await;
    let state =
        |vifs: Vec<netcache_domain::vif::VifRecord>| vifs.into_iter().find(|v| v.port_id == port_id).map(|v| v.state);
    let vifs = h.compute.store().vifs(server).await.unwrap();
    assert_eq!(
        state(vifs),
        Some(VifState::Releasing),
        "the detach recorded its release"
    );

    held.release();
    event.await.unwrap().unwrap();
    let vifs = h.compute.store().vifs(server).await.unwrap();
    assert_eq!(
        state(vifs),
        Some(VifState::Releasing),
        "the event's lost mark must not overwrite the release"
    );
    assert!(
        h.cached_port_ids(server).await.is_empty(),
        "a port being released is never shown"
    );
}
