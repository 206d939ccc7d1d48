//! Heal shared among processes: the loop's pass takes the shards no process
//! swept within the interval, each with a lease, so three processes sweep every
//! server once between them, at one process's Neutron calls; the shard of a
//! process that died mid-pass is swept by another's next pass once its lease
//! ran out.

use crate::support;

use std::collections::HashSet;

use netcache_compute::prelude::*;
use netcache_compute::{ComputeConfig, CrashPoint, Error};
use netcache_domain::ServerId;
use netcache_domain::heal_shard::HealShard;
use netcache_domain::quota::Resource;
use support::Harness;

/// The harness's config, without the project's limit of 10 servers.
fn config() -> ComputeConfig {
    let mut config = support::config();
    for resource in [Resource::Instances, Resource::Cores, Resource::Ram] {
        config.quota = config.quota.with(resource, -1);
    }
    config
}

async fn boot(h: &Harness, servers: usize) -> Vec<ServerId> {
    let mut ids = Vec::new();
    for _ in 0..servers {
        ids.push(h.boot().await);
    }
    ids
}

/// Invariant 28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_sweep_every_server_once_at_the_calls_of_one() {
    let h = Harness::start(config()).await;
    let servers = boot(&h, 30).await;
    h.sim().reset_stats();
    let whole = h.compute.heal().await.unwrap();
    let one_process = h.sim().stats().total();
    assert_eq!(whole.servers, servers.len());
    assert_eq!(whole.shards.len(), 16);

    let (b, c) = (h.one_off(config()).await, h.one_off(config()).await);
    h.sim().reset_stats();
    // As the loops run, a pass apart: the first takes every shard.
    let reports = [
        h.compute.heal_due_shards().await.unwrap(),
        b.heal_due_shards().await.unwrap(),
        c.heal_due_shards().await.unwrap(),
    ];
    let three_processes = h.sim().stats().total();
    assert_eq!(reports.iter().map(|r| r.servers).sum::<usize>(), servers.len());
    assert_eq!(reports[0].shards.len(), 16, "all due, all taken");
    assert!(
        reports[1].shards.is_empty() && reports[2].shards.is_empty(),
        "none due again"
    );
    assert!(
        three_processes * 10 <= one_process * 11,
        "one sweep by three processes: {three_processes} calls, by one: {one_process}"
    );

    // Their leases run out; the three passes run at once and divide the shards.
    for shard in HealShard::all() {
        let store = h.compute.store();
        store
            .release_lease(&shard.lease_name(), &h.compute.owner().label())
            .await
            .unwrap();
    }
    h.sim().reset_stats();
    let (a, b, c) = tokio::join!(h.compute.heal_due_shards(), b.heal_due_shards(), c.heal_due_shards());
    let reports = [a.unwrap(), b.unwrap(), c.unwrap()];
    // Each process lists its servers' projects' floating IPs once, and may end
    // on a part batch: at most two lists more per extra process, not a sweep.
    // (Their first passes also learn the network's details, once per process.)
    let stats = h.sim().stats();
    let at_once = stats.calls("ports.list") + stats.calls("floatingips.list");
    println!(
        "one sweep of {} servers: one process {one_process} Neutron calls, three at once {at_once}",
        servers.len()
    );
    assert!(
        at_once <= one_process + 4,
        "{at_once} calls, one process's {one_process}"
    );
    let taken: Vec<HealShard> = reports.iter().flat_map(|r| r.shards.clone()).collect();
    let distinct: HashSet<HealShard> = taken.iter().copied().collect();
    assert_eq!(taken.len(), 16, "each shard swept once: {taken:?}");
    assert_eq!(distinct.len(), 16);
    assert_eq!(reports.iter().map(|r| r.servers).sum::<usize>(), servers.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_processs_shard_is_swept_by_the_next_pass_once_its_lease_ran_out() {
    let h = Harness::start(support::crashing_at(CrashPoint::HealShardTaken, config())).await;
    let mut servers = boot(&h, 16).await;
    let (b, c) = (h.one_off(config()).await, h.one_off(config()).await);
    let dead = h.compute.heal_due_shards().await;
    assert!(
        matches!(dead, Err(Error::Crashed(CrashPoint::HealShardTaken))),
        "{dead:?}"
    );
    let survivor = b.heal_due_shards().await.unwrap();
    assert_eq!(survivor.shards.len(), 15, "every shard but the dead pass's");
    let dead_shard = HealShard::all().find(|s| !survivor.shards.contains(s)).unwrap();
    // The dead shard holds a server (booted through a live process if need be).
    while !servers.iter().any(|id| HealShard::of(*id) == dead_shard) {
        let server = b.create_server(&Harness::ctx(), h.boot_request(1)).await.unwrap();
        b.settle().await;
        servers.push(server.id);
    }
    let in_dead_shard = servers.iter().filter(|id| HealShard::of(**id) == dead_shard).count();

    // While its lease stands, nobody sweeps it ...
    assert!(c.heal_due_shards().await.unwrap().shards.is_empty());
    // ... once it ran out, the next pass does, and only it.
    h.compute
        .store()
        .release_lease(&dead_shard.lease_name(), &h.compute.owner().label())
        .await
        .unwrap();
    let next = c.heal_due_shards().await.unwrap();
    assert_eq!(next.shards, [dead_shard]);
    assert_eq!(next.servers, in_dead_shard);
}
