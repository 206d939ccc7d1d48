//! A build resumed by another incarnation after its process died: what the
//! dead run left half done is finished from the records, and the interfaces
//! it lists come from them alone, without a heal pass.

use std::sync::Arc;

use netcache_compute::lifecycle::virt::FakeVirt;
use netcache_compute::prelude::*;
use netcache_compute::{Compute, CrashPoint};
use netcache_domain::server::{NetworkRequest, NetworkRequests, VmState};
use netcache_domain::{NetworkId, PortId};
use serde_json::json;

use crate::support::{Harness, config};

/// A boot with a new port and a user's port, whose process dies once Neutron
/// bound the user's port and before the record has its details (finding 9):
/// the build resumed by the node's next incarnation binds it again from the
/// records and records its details, so os-interface lists it, with its MAC
/// and addresses, as `addresses` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_port_a_resumed_build_attached_is_listed_with_its_details() {
    let mut doomed = config();
    doomed.crash_at = Some(CrashPoint::AfterUserPortBound);
    let h = Harness::start(doomed).await;
    let user_port = h.neutron_port(json!({"name": "users"}));
    let port_id = PortId::from(user_port["id"].as_str().unwrap());
    let mut request = h.boot_request(0);
    request.networks = NetworkRequests::Explicit(vec![
        NetworkRequest::Network {
            network_id: Some(NetworkId::from(h.topology.private_network_id.as_str())),
            fixed_ip: None,
            tag: None,
        },
        NetworkRequest::Port {
            port_id: port_id.clone(),
            tag: None,
        },
    ]);
    let server = h.compute.create_server(&Harness::ctx(), request).await.unwrap().id;
    h.compute.settle().await;
    assert!(h.compute.has_crashed(), "the first process died at the crash point");
    let store = h.compute.store().clone();
    let left = store.vifs(server).await.unwrap();
    assert!(
        left.iter().any(|v| v.port_id == port_id && v.is_mid_attach()),
        "the dead run left the user's port recorded without details: {left:?}"
    );
    assert_eq!(h.port(port_id.as_str()).1["port"]["device_id"], server.to_string());

    let resumed = Compute::start(
        config(),
        store.clone(),
        h.neutron.clone(),
        Arc::new(FakeVirt::new(&config().virt)),
    )
    .await
    .unwrap();
    resumed.settle().await;

    assert_eq!(store.server(server).await.unwrap().unwrap().vm_state, VmState::Active);
    let interfaces = resumed.interfaces(server).await.unwrap();
    assert_eq!(interfaces.len(), 2, "{interfaces:?}");
    let listed = interfaces
        .iter()
        .find(|i| i.vif.port_id == port_id)
        .expect("os-interface lists the user's port");
    let details = listed.vif.details.as_ref().expect("with its details");
    assert_eq!(details.mac_address, user_port["mac_address"].as_str().unwrap());
    let ip = user_port["fixed_ips"][0]["ip_address"].as_str().unwrap();
    assert!(
        details.fixed_ips.iter().any(|f| f.ip_address.to_string() == ip),
        "{details:?}"
    );
    let addresses = format!("{:?}", resumed.addresses(server).await.unwrap());
    assert!(addresses.contains(ip), "addresses show it too: {addresses}");
    assert_eq!(resumed.heal_passes() + h.compute.heal_passes(), 0, "no heal pass ran");
    assert_eq!(
        h.ports_of(server).len(),
        2,
        "no port created twice: {:?}",
        h.ports_of(server)
    );
}
