//! Server groups honoured by the scheduler: affinity together, anti-affinity
//! apart (the boot past the hosts fails as Nova's `NoValidHost`), soft
//! policies never fail, a deleted member frees its place, and two boots whose
//! placements were decided from one read of the group never share a host.

use netcache_compute::prelude::*;
use netcache_compute::{Error, HoldPoint, NewServerGroup};
use netcache_domain::quota::{Refusal, Resource};
use netcache_domain::server::{Server, VmState};
use netcache_domain::server_group::GroupPolicy;
use netcache_domain::{HostName, ProjectId, ServerId};

use crate::support::{Harness, config};

const NO_VALID_HOST: &str = "No valid host was found. There are not enough hosts available.";

async fn start(hosts: &[&str]) -> Harness {
    let mut config = config();
    config.hosts = hosts.iter().map(|h| HostName::from(*h)).collect();
    Harness::start(config).await
}

async fn group(h: &Harness, policy: GroupPolicy) -> uuid::Uuid {
    let new = NewServerGroup {
        name: "g".into(),
        policy,
        max_server_per_host: None,
    };
    h.compute.create_server_group(&Harness::ctx(), new).await.unwrap().id
}

/// Boots `members` members of `group` one after another, each of which must
/// come up active, and returns their hosts.
async fn hosts_of_active_members(h: &Harness, group: uuid::Uuid, members: usize) -> Vec<HostName> {
    let mut hosts = Vec::new();
    for _ in 0..members {
        let server = boot_in(h, group).await;
        assert_eq!(server.vm_state, VmState::Active);
        hosts.push(server.host.unwrap());
    }
    hosts
}

/// Boots a member of `group` and waits for its build.
async fn boot_in(h: &Harness, group: uuid::Uuid) -> Server {
    let id = start_boot(h, group).await.unwrap();
    h.compute.settle().await;
    h.compute.server(id).await.unwrap()
}

async fn start_boot(h: &Harness, group: uuid::Uuid) -> Result<ServerId, Error> {
    let request = netcache_compute::CreateServer {
        group: Some(group),
        ..h.boot_request(1)
    };
    Ok(h.compute.create_server(&Harness::ctx(), request).await?.id)
}

#[tokio::test]
async fn affinity_puts_every_member_on_the_first_members_host() {
    let h = start(&["h1", "h2", "h3"]).await;
    let g = group(&h, GroupPolicy::Affinity).await;
    let hosts = hosts_of_active_members(&h, g, 3).await;
    assert!(hosts.iter().all(|host| *host == hosts[0]), "{hosts:?}");
    assert_eq!(h.compute.server_group(g).await.unwrap().members.len(), 3);
}

#[tokio::test]
async fn anti_affinity_spreads_members_and_fails_the_boot_past_the_hosts() {
    let h = start(&["h1", "h2"]).await;
    let g = group(&h, GroupPolicy::AntiAffinity).await;
    let (a, b) = (boot_in(&h, g).await, boot_in(&h, g).await);
    assert_eq!((a.vm_state, b.vm_state), (VmState::Active, VmState::Active));
    assert_ne!(a.host, b.host);
    let third = boot_in(&h, g).await;
    assert_eq!(third.vm_state, VmState::Error);
    assert_eq!(third.host, None);
    assert_eq!(third.fault.unwrap().message, NO_VALID_HOST);

    // A deleted member leaves the group, and its host is free again.
    h.compute.delete_server(&Harness::ctx(), a.id).await.unwrap();
    h.compute.settle().await;
    let members = h.compute.server_group(g).await.unwrap().members;
    assert!(!members.contains(&a.id), "{members:?}");
    let fourth = boot_in(&h, g).await;
    assert_eq!(fourth.vm_state, VmState::Active);
    assert_eq!(fourth.host, a.host);
}

#[tokio::test]
async fn soft_policies_prefer_and_never_fail() {
    let h = start(&["h1", "h2"]).await;
    let apart = group(&h, GroupPolicy::SoftAntiAffinity).await;
    let hosts = hosts_of_active_members(&h, apart, 3).await;
    assert_ne!(hosts[0], hosts[1], "apart while a host has none");
    let together = group(&h, GroupPolicy::SoftAffinity).await;
    let first = boot_in(&h, together).await;
    let second = boot_in(&h, together).await;
    assert_eq!(second.vm_state, VmState::Active);
    assert_eq!(first.host, second.host);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_anti_affinity_boots_decided_from_one_read_never_share_a_host() {
    let h = start(&["h1"]).await;
    let g = group(&h, GroupPolicy::AntiAffinity).await;
    let held = h.compute.hold_at(HoldPoint::GroupMembersRead);
    let first = {
        let h_compute = h.compute.clone();
        let request = netcache_compute::CreateServer {
            group: Some(g),
            ..h.boot_request(1)
        };
        tokio::spawn(async move { h_compute.create_server(&Harness::ctx(), request).await })
    };
    // The first boot read the group empty and chose h1; the second does the
    // same and is recorded first.
    held.reached().await;
    let second = start_boot(&h, g).await.unwrap();
    held.release();
    let first = first.await.unwrap().unwrap().id;
    h.compute.settle().await;
    let (first, second) = (
        h.compute.server(first).await.unwrap(),
        h.compute.server(second).await.unwrap(),
    );
    assert_eq!(second.vm_state, VmState::Active);
    assert_eq!(second.host, Some(HostName::from("h1")));
    assert_eq!(
        first.vm_state,
        VmState::Error,
        "the loser decided again, and no host is left"
    );
    assert_eq!(first.fault.unwrap().message, NO_VALID_HOST);
}

#[tokio::test]
async fn a_boot_names_an_existing_group_and_fits_its_member_quota() {
    let h = start(&["h1", "h2"]).await;
    let unknown = uuid::Uuid::new_v4();
    match start_boot(&h, unknown).await {
        Err(e @ Error::BootGroupNotFound(_)) => {
            assert_eq!(e.to_string(), format!("Instance group {unknown} could not be found."));
        }
        other => panic!("expected the group's absence, got {other:?}"),
    }
    let g = group(&h, GroupPolicy::SoftAffinity).await;
    h.compute
        .set_quotas(
            &ProjectId::from(Harness::ctx().project_id.as_str()),
            None,
            vec![(Resource::ServerGroupMembers, 1)],
            false,
        )
        .await
        .unwrap();
    start_boot(&h, g).await.unwrap();
    match start_boot(&h, g).await {
        Err(Error::OverQuota(Refusal::ServerGroupMembers)) => {}
        other => panic!("expected the member quota's refusal, got {other:?}"),
    }
}
