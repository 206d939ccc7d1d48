//! Compute services: registered when a process starts, kept up by its lease
//! tick, and consulted by the scheduler, which places no server on a host an
//! admin disabled or forced down.

use netcache_compute::prelude::*;
use netcache_compute::{Error, ServiceKey};
use netcache_domain::HostName;
use netcache_domain::server::VmState;
use netcache_domain::service::{ServiceUpdate, Status};

use crate::support::{Harness, config};

fn host(name: &str) -> ServiceKey {
    ServiceKey::HostBinary {
        host: name.into(),
        binary: "nova-compute".into(),
    }
}

fn disable() -> ServiceUpdate {
    ServiceUpdate {
        status: Some(Status::Disabled),
        disabled_reason: Some("maintenance".into()),
        forced_down: None,
    }
}

#[tokio::test]
async fn a_disabled_or_forced_down_host_gets_no_new_server() {
    let h = Harness::start(config()).await;
    h.compute.update_service(&host("host1"), &disable()).await.unwrap();
    let forced = ServiceUpdate {
        forced_down: Some(true),
        ..ServiceUpdate::default()
    };
    h.compute.update_service(&host("host2"), &forced).await.unwrap();
    for _ in 0..3 {
        let server = h.compute.server(h.boot().await).await.unwrap();
        assert_eq!(server.vm_state, VmState::Active);
        assert_eq!(server.host, Some(HostName::from("host3")));
    }
}

#[tokio::test]
async fn with_every_host_disabled_a_boot_ends_in_error_with_novas_fault() {
    let h = Harness::start(config()).await;
    for name in ["host1", "host2", "host3"] {
        h.compute.update_service(&host(name), &disable()).await.unwrap();
    }
    let server = h.compute.server(h.boot().await).await.unwrap();
    assert_eq!(server.vm_state, VmState::Error);
    assert_eq!(server.host, None);
    let fault = server.fault.expect("fault");
    assert_eq!(
        fault.message,
        "No valid host was found. There are not enough hosts available."
    );
    assert!(h.ports_of(server.id).is_empty(), "no port was made for it");

    // Enabled again: the next boot is placed.
    let enable = ServiceUpdate {
        status: Some(Status::Enabled),
        ..ServiceUpdate::default()
    };
    h.compute.update_service(&host("host2"), &enable).await.unwrap();
    let server = h.compute.server(h.boot().await).await.unwrap();
    assert_eq!(server.host, Some(HostName::from("host2")));
}

/// The heartbeat is the lease tick's: a service whose heartbeat ran out (its
/// process stopped ticking) is down until a tick renews it.
#[tokio::test]
async fn a_service_is_up_while_its_process_ticks() {
    let h = Harness::start(config()).await;
    let services = h.compute.services().await.unwrap();
    assert_eq!(services.len(), 3);
    assert!(services.iter().all(|s| s.heartbeat_live), "{services:?}");
    let hosts = h.compute.config().hosts.clone();
    // As if the ticks had stopped: the heartbeat runs out on the database's clock.
    h.compute
        .store()
        .renew_service_heartbeats(&hosts, chrono::TimeDelta::zero())
        .await
        .unwrap();
    assert!(h.compute.services().await.unwrap().iter().all(|s| !s.heartbeat_live));
    h.compute.lease_tick().await;
    assert!(h.compute.services().await.unwrap().iter().all(|s| s.heartbeat_live));
}

#[tokio::test]
async fn a_compute_service_hosting_servers_is_not_deleted() {
    let h = Harness::start(config()).await;
    let server = h.compute.server(h.boot().await).await.unwrap();
    let busy = server.host.unwrap();
    match h.compute.delete_service(&host(busy.as_str())).await {
        Err(Error::ServiceHostsInstances) => {}
        other => panic!("{other:?}"),
    }
    let idle = h.compute.config().hosts.iter().find(|h| **h != busy).unwrap().clone();
    h.compute.delete_service(&host(idle.as_str())).await.unwrap();
    let left = h.compute.services().await.unwrap();
    assert_eq!(left.len(), 2);
    match h.compute.delete_service(&host(idle.as_str())).await {
        Err(Error::HostNotMapped(name)) => assert_eq!(name, idle.as_str()),
        other => panic!("{other:?}"),
    }
}
