//! A user's port whose bind is still in flight when its server is deleted: the
//! late bind must never land on the deleted server (the port would stay bound
//! to nothing, and the user could not use it again).

use netcache_compute::prelude::*;
use netcache_domain::PortId;
use netcache_domain::server::{NetworkRequest, NetworkRequests, VmState};
use neutron_sim::{FaultAction, FaultRule};
use serde_json::json;

use crate::support::{Harness, config};

/// The bind's PUTs (the first and the client's retry) get no answer, and
/// Neutron commits them only when the test says. The delete is asked while the
/// first one waits, so the boot gives up its attach and the delete releases a
/// port that is not bound yet; the held binds, committed after, are refused
/// by their revision guard because the release moved the port's revision on.
/// Invariant 19.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_that_commits_after_the_delete_does_not_bind_the_users_port() {
    let h = Harness::start(config()).await;
    let user_port = h.neutron_port(json!({"name": "users"}));
    let port_id = PortId::from(user_port["id"].as_str().unwrap());
    h.sim()
        .add_fault(FaultRule::new("ports.update", FaultAction::commit_on_release(None)).times(2));
    let mut request = h.boot_request(0);
    request.networks = NetworkRequests::Explicit(vec![NetworkRequest::Port {
        port_id: port_id.clone(),
        tag: None,
    }]);
    let server = h.compute.create_server(&Harness::ctx(), request).await.unwrap().id;
    h.until_every_fault_fired().await;
    h.compute.delete_server(&Harness::ctx(), server).await.unwrap();
    h.compute.settle().await;

    let stored = h.compute.store().server(server).await.unwrap().unwrap();
    assert_eq!(stored.vm_state, VmState::Deleted);
    assert_eq!(h.sim().faults()[0].fired, 2, "both bind PUTs were held");
    assert_eq!(h.sim().release_delayed_commits(), 2);
    let (_, port) = h.port(port_id.as_str());
    assert_eq!(port["port"]["device_id"], "", "the late binds were refused: {port}");
    assert_eq!(port["port"]["binding:host_id"], "", "{port}");
    assert!(
        h.compute.store().vif_by_port(&port_id).await.unwrap().is_none(),
        "no record holds the port: it can be used again"
    );
}
