//! Heal shared by three processes on one PostgreSQL database (issue 34): the
//! loop's passes sweep every server once between them at one process's Neutron
//! calls, where each used to sweep them all; the shard of a process killed
//! mid-pass is swept by another's next pass once its lease ran out. Takes the
//! admin URL of a PostgreSQL server (`NETCACHE_TEST_PG_URL`, CI tier 2); listed
//! in `main.rs`.

use crate::common;

use common::{Options, TestApp};
use netcache_app::app::App;
use netcache_app::scratch_pg::ScratchDatabase;
use netcache_compute::{CrashPoint, Error};
use netcache_domain::heal_shard::HealShard;

const SERVERS: usize = 250;

/// Invariant 28.
pub async fn three_processes_share_a_heal_sweep_and_a_dead_ones_shard(admin: String) {
    let database = ScratchDatabase::create(&admin, &format!("test_{}", uuid::Uuid::new_v4().as_u64_pair().0))
        .await
        .unwrap();
    let mut a = TestApp::with(Options {
        database: Some(database.url.clone()),
        ..Options::default()
    })
    .await;
    a.settings.compute.hosts = vec!["host-a".into()];
    a.restart(|_| {}).await;
    let on_host = |host: &str, crash_at: Option<&str>| {
        let mut settings = a.settings.clone();
        settings.compute.hosts = vec![host.into()];
        settings.compute.crash_at = crash_at.map(str::to_owned);
        settings
    };
    let b = App::start(&on_host("host-b", None)).await.unwrap();
    let c = App::start(&on_host("host-c", None)).await.unwrap();
    let mut servers = Vec::new();
    for _ in 0..SERVERS {
        servers.push(a.boot_on_private().await);
    }
    let neutron = a.neutron();

    neutron.reset_stats();
    let whole = a.app().compute.heal().await.unwrap();
    let one_process = neutron.stats().total();
    assert_eq!(whole.servers, SERVERS);

    // The three loops' passes, a pass apart as their jittered waits put them.
    neutron.reset_stats();
    let mut healed = 0;
    for compute in [&a.app().compute, &b.compute, &c.compute] {
        healed += compute.heal_due_shards().await.unwrap().servers;
    }
    let three_processes = neutron.stats().total();
    assert_eq!(healed, SERVERS, "every server swept once");
    assert!(
        three_processes * 10 <= one_process * 11,
        "a sweep by three processes: {three_processes} Neutron calls, by one: {one_process}"
    );
    println!("heal sweep of {SERVERS} servers: one process {one_process} Neutron calls, three {three_processes}");

    // Every shard comes due (its lease ran out); a fourth process is killed
    // once it took its first shard.
    let store = a.app().compute.store().clone();
    let a_label = a.app().compute.owner().label();
    for shard in HealShard::all() {
        store.release_lease(&shard.lease_name(), &a_label).await.unwrap();
    }
    let doomed = App::start(&on_host("host-d", Some("heal-shard-taken"))).await.unwrap();
    let dead = doomed.compute.heal_due_shards().await;
    assert!(
        matches!(dead, Err(Error::Crashed(CrashPoint::HealShardTaken))),
        "{dead:?}"
    );
    let survivor = b.compute.heal_due_shards().await.unwrap();
    assert_eq!(survivor.shards.len(), 15, "all but the dead pass's");
    let dead_shard = HealShard::all().find(|s| !survivor.shards.contains(s)).unwrap();
    assert!(
        c.compute.heal_due_shards().await.unwrap().shards.is_empty(),
        "its lease stands"
    );
    store
        .release_lease(&dead_shard.lease_name(), &doomed.compute.owner().label())
        .await
        .unwrap();
    let next = c.compute.heal_due_shards().await.unwrap();
    assert_eq!(next.shards, [dead_shard], "the next pass sweeps it, and only it");
    let in_dead_shard = servers
        .iter()
        .filter(|id| HealShard::of(id.parse().unwrap()) == dead_shard)
        .count();
    assert_eq!(next.servers, in_dead_shard);

    doomed.shutdown().await;
    c.shutdown().await;
    b.shutdown().await;
    a.app.take().unwrap().shutdown().await;
    database.drop_database().await.unwrap();
}
