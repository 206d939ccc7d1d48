//! Heal: details refreshed, ghosts never added, lost ports recorded, and the
//! Neutron call budget of a pass.

use crate::support;
use netcache_compute::prelude::*;

use std::collections::HashSet;

use netcache_domain::cache::{self, OnLost};
use netcache_domain::change::Change;
use netcache_domain::gc::ForeignPolicy;
use netcache_domain::intent::IntentState;
use netcache_domain::server::{Server, TaskState, VmState};
use netcache_domain::vif::{VifOrigin, VifRecord, VifState};
use netcache_domain::{HostName, NetworkId, PortId, ProjectId, ServerId};
use neutron_sim::{FaultAction, FaultRule};
use serde_json::json;
use support::{Harness, PROJECT, config, intent};

/// Invariant 12.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_refreshes_changed_details_and_never_adds_a_ghost() {
    let h = Harness::start(config()).await;
    let server = h.boot().await;
    let port = h.ports_of(server)[0]["id"].as_str().unwrap().to_owned();

    // Behind netcache's back: a new fixed IP, a floating IP, and a ghost.
    let (status, body) = h.sim().request(
        "PUT",
        &format!("/v2.0/ports/{port}"),
        Some(json!({"port": {"fixed_ips": [{"subnet_id": h.topology.private_subnet_id, "ip_address": "10.0.0.99"}]}})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = h.sim().request(
        "POST",
        "/v2.0/floatingips",
        Some(json!({"floatingip": {"floating_network_id": h.topology.public_network_id, "port_id": port, "project_id": PROJECT}})),
    );
    assert_eq!(status, 201, "{body}");
    let fip = body["floatingip"]["floating_ip_address"].as_str().unwrap().to_owned();
    let ghost = h.neutron_port(json!({"device_id": server.to_string(), "device_owner": "compute:nova"}));

    let before = h.compute.network_info(server).await.unwrap().to_json();
    assert!(!before.contains("10.0.0.99") && !before.contains(&fip));

    let report = h.compute.heal().await.unwrap();
    assert_eq!(report.cache_writes, 1);
    let after = h.compute.network_info(server).await.unwrap();
    let json = after.to_json();
    assert!(json.contains("10.0.0.99"), "{json}");
    assert!(json.contains(&fip), "{json}");
    assert_eq!(
        h.cached_port_ids(server).await,
        std::slice::from_ref(&port),
        "the ghost is never added"
    );
    assert_eq!(report.ghosts.len(), 1);
    assert_eq!(report.ghosts[0].port_id.as_str(), ghost["id"].as_str().unwrap());
    let sightings = h.compute.store().ghost_sightings().await.unwrap();
    assert_eq!(sightings.len(), 1);
    assert_eq!(sightings[0].times_seen, 1);

    // A second pass with nothing changed writes nothing and counts the ghost again.
    let again = h.compute.heal().await.unwrap();
    assert_eq!(again.cache_writes, 0);
    assert_eq!(h.compute.store().ghost_sightings().await.unwrap()[0].times_seen, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_gone_or_reassigned_is_lost_and_dropped() {
    let h = Harness::start(config()).await;
    let gone = h.boot().await;
    let moved = h.boot().await;
    let gone_port = h.ports_of(gone)[0]["id"].as_str().unwrap().to_owned();
    let moved_port = h.ports_of(moved)[0]["id"].as_str().unwrap().to_owned();
    h.sim().request("DELETE", &format!("/v2.0/ports/{gone_port}"), None);
    h.sim().request(
        "PUT",
        &format!("/v2.0/ports/{moved_port}"),
        Some(json!({"port": {"device_id": "another-device"}})),
    );

    let report = h.compute.heal().await.unwrap();
    assert_eq!(report.lost.len(), 2, "{:?}", report.lost);
    for (server, port) in [(gone, &gone_port), (moved, &moved_port)] {
        assert!(h.cached_port_ids(server).await.is_empty());
        let vifs = h.compute.vifs(server).await.unwrap();
        assert_eq!(vifs[0].port_id.as_str(), port);
        assert_eq!(vifs[0].state, VifState::Lost);
        let actions = h.compute.actions(server).await.unwrap();
        let heal = actions
            .iter()
            .find(|a| a.action == "netcache_heal")
            .expect("lost port in the action log");
        assert!(heal.events[0].details.as_ref().unwrap().contains(port.as_str()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_lost_keep_keeps_the_last_entry() {
    let mut c = config();
    c.cache.on_lost = OnLost::Keep;
    let h = Harness::start(c).await;
    let server = h.boot().await;
    let port = h.ports_of(server)[0]["id"].as_str().unwrap().to_owned();
    h.sim().request("DELETE", &format!("/v2.0/ports/{port}"), None);
    let report = h.compute.heal().await.unwrap();
    assert_eq!(report.lost.len(), 1);
    assert_eq!(h.cached_port_ids(server).await, [port]);
    assert_eq!(h.compute.vifs(server).await.unwrap()[0].state, VifState::Attached);
}

fn staged_server(id: ServerId, now: chrono::DateTime<chrono::Utc>) -> Server {
    Server {
        id,
        name: "staged".into(),
        project_id: ProjectId::from(PROJECT),
        host: Some(HostName::from("host1")),
        vm_state: VmState::Active,
        task_state: None::<TaskState>,
        image_ref: "img".into(),
        tried_hosts: vec![HostName::from("host1")],
        created_at: now,
        updated_at: now,
        launched_at: Some(now),
        generation: 0,
        ..netcache_domain::fixtures::server()
    }
}

/// 1,000 servers with one port each: one port list per 100 servers, one floating
/// IP list for their project, and the network details when the catalog has
/// none: 13 calls on the first pass, at most 12 (11) on the loop's next ones.
/// Nova's heal would make about 7 calls per server (counted from
/// nova/network/neutron.py 34.0.0): ~7,000. The store is read a batch at a time:
/// a fixed number of statements per batch, not per server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heal_pass_over_1000_servers_stays_within_the_call_budget() {
    const SERVERS: usize = 1000;
    let h = Harness::start(config()).await;
    let now = h.compute.clock().now();
    let (_, net) = h.sim().request(
        "POST",
        "/v2.0/networks",
        Some(json!({"network": {"name": "big", "project_id": PROJECT}})),
    );
    let net = net["network"]["id"].as_str().unwrap().to_owned();
    let (status, body) = h.sim().request(
        "POST",
        "/v2.0/subnets",
        Some(json!({"subnet": {"network_id": net, "cidr": "10.128.0.0/16", "ip_version": 4, "project_id": PROJECT}})),
    );
    assert_eq!(status, 201, "{body}");
    let mut changes = Vec::with_capacity(SERVERS * 2);
    let mut ports = Vec::with_capacity(SERVERS);
    let mut servers = Vec::with_capacity(SERVERS);
    for _ in 0..SERVERS {
        let id = ServerId(uuid::Uuid::new_v4());
        servers.push(id);
        let port = h.neutron_port(
            json!({"network_id": net, "device_id": id.to_string(), "device_owner": "compute:nova", "binding:host_id": "host1"}),
        );
        ports.push(port["id"].as_str().unwrap().to_owned());
        changes.push(Change::InsertServer(staged_server(id, now)));
        changes.push(Change::InsertVif(VifRecord {
            port_id: PortId::from(port["id"].as_str().unwrap()),
            server_id: id,
            position: 0,
            origin: VifOrigin::Created,
            state: VifState::Attached,
            intent_id: None,
            network_id: NetworkId::from(net.as_str()),
            requested_fixed_ip: None,
            tag: None,
            details: None,
        }));
    }
    h.compute.store().commit(changes).await.unwrap();
    h.sim().reset_stats();

    // The first pass fills every cache, and learns the network's details.
    let report = h.compute.heal().await.unwrap();
    let stats = h.sim().stats();
    println!("first heal pass over {SERVERS} servers: {stats:?} ({report:?})");
    assert_eq!(report.servers, SERVERS);
    assert_eq!(report.batches, 10);
    assert_eq!(report.cache_writes, SERVERS, "every empty cache was filled");
    assert_eq!(stats.calls("ports.list"), 10, "one port list per 100 servers");
    assert_eq!(stats.calls("floatingips.list"), 1, "one floating IP list per pass");
    assert_eq!(
        stats.calls("networks.list") + stats.calls("subnets.list"),
        2,
        "network details once"
    );
    assert_eq!(stats.total(), 13, "{stats:?}");

    // A pass like the loop's: details from the catalog, nothing to write.
    h.sim().reset_stats();
    let before = h.compute.store().queries_sent();
    let report = h.compute.heal().await.unwrap();
    let calls = h.sim().stats().total();
    let queries = h.compute.store().queries_sent() - before;
    println!("heal pass over {SERVERS} servers: {calls} Neutron calls, {queries} store queries ({report:?})");
    assert_eq!(report.cache_writes, 0);
    assert!(calls <= 12, "{calls} calls: {:?}", h.sim().stats());
    // Per pass: the operations, the sightings, the generations; per page of
    // 1,000 servers, one (and one that finds the end); per batch: the caches,
    // the VIF records, and the commit that records the caches found right
    // (the first pass wrote each cache with its VIF's details, which advanced
    // the generation past the cache it recorded). Not one per server.
    assert_eq!(report.known_right, 0);
    assert!(queries <= 3 + 2 + 3 * 10, "{queries} store queries for 10 batches");
    assert!(report.ghosts.is_empty());

    // The servers whose turn it is to be rebuilt in the next pass.
    let due_next = || {
        let pass = h.compute.heal_passes();
        servers
            .iter()
            .filter(|s| cache::rebuild_due(**s, pass))
            .copied()
            .collect::<HashSet<_>>()
    };
    // The caches that pass found right are not read again while nothing
    // changed; those due a rebuild are compared with the text digests the pass
    // before recorded, not read.
    let due = due_next();
    let before = h.compute.store().queries_sent();
    let report = h.compute.heal().await.unwrap();
    let queries = h.compute.store().queries_sent() - before;
    assert_eq!(report.known_right, SERVERS - due.len());
    assert!(
        queries <= 3 + 2 + 10,
        "{queries} store queries for 10 batches known right"
    );
    // A port changed in some batches: their servers' caches are rebuilt, and
    // compared with the text digests the pass before recorded, not read.
    for port in &ports[..10] {
        let (status, body) = h.sim().request(
            "PUT",
            &format!("/v2.0/ports/{port}"),
            Some(json!({"port": {"name": "renamed"}})),
        );
        assert_eq!(status, 200, "{body}");
    }
    let rebuilt: HashSet<ServerId> = due_next().into_iter().chain(servers[..10].iter().copied()).collect();
    let before = h.compute.store().queries_sent();
    let report = h.compute.heal().await.unwrap();
    let queries = h.compute.store().queries_sent() - before;
    assert_eq!(report.known_right, SERVERS - rebuilt.len());
    assert_eq!(report.cache_writes, 0, "a port's name is not in its cache");
    // And, in each batch with a renamed port, the commit that records its
    // cache found right from its new inputs.
    assert!(queries <= 3 + 2 + 2 * 10, "{queries} store queries for 10 batches");

    // Ten passes rebuild every cache once, a tenth in each, and read none of
    // the texts whose digest is recorded at their generation now.
    let mut rebuilt = 0;
    for _ in 0..cache::REBUILD_EVERY {
        let due = due_next();
        let before = h.compute.store().queries_sent();
        let report = h.compute.heal().await.unwrap();
        let queries = h.compute.store().queries_sent() - before;
        assert_eq!(report.known_right, SERVERS - due.len(), "{report:?}");
        assert_eq!(report.cache_writes, 0, "{report:?}");
        assert!(queries <= 3 + 2 + 10, "{queries} store queries for a pass");
        rebuilt += due.len();
    }
    assert_eq!(rebuilt, SERVERS);

    // What a pass found is recorded beside each cache, so another process
    // (a one-off `netcache heal`, or this one restarted) skips the same
    // rebuilds in its first pass, and reads no cache text.
    let restarted = h.one_off(config()).await;
    let due: HashSet<ServerId> = servers.iter().filter(|s| cache::rebuild_due(**s, 0)).copied().collect();
    let before = h.compute.store().queries_sent();
    let report = restarted.heal().await.unwrap();
    let queries = h.compute.store().queries_sent() - before;
    assert_eq!(report.known_right, SERVERS - due.len(), "{report:?}");
    assert_eq!(report.cache_writes, 0, "{report:?}");
    assert!(
        queries <= 3 + 2 + 10,
        "{queries} store queries for a restarted process's first pass"
    );

    // The audit reads Neutron as heal does: a port list per batch, the
    // floating IPs once; and the store a batch at a time, as heal does.
    h.sim().reset_stats();
    let before = h.compute.store().queries_sent();
    h.compute.audit(&|_, _| {}).await.unwrap();
    let queries = h.compute.store().queries_sent() - before;
    let stats = h.sim().stats();
    assert_eq!(stats.calls("floatingips.list"), 1, "{stats:?}");
    assert_eq!(stats.calls("ports.list"), 10, "{stats:?}");
    println!("audit of {SERVERS} servers: {queries} store queries");
    // Per audit: the watched pages (2), the sightings, the pending and the
    // abandoned intents, the operations and the database's clock (which their
    // leases are judged by), the deleted servers' VIF records; per batch: the
    // caches and the VIF records. Not one per server.
    assert!(
        queries <= 2 + 6 + 2 * 10,
        "{queries} store queries for the audit of 10 batches"
    );
}

/// A deleted server is watched for ghosts (within `heal.deleted_window`) only
/// while a create of it is unsettled, pending or abandoned: only that can still
/// give a port its id and this deployment's marker. 300 deleted servers whose
/// creates all ended cost no port list; the one with an abandoned create is
/// watched, and its ghost found. With GC unbinding foreign ghosts, and in the
/// audit's report, every deleted server in the window is watched, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_servers_are_watched_only_while_a_create_is_unsettled() {
    const SETTLED: usize = 300;
    let deleted_now = |h: &Harness, state: IntentState| {
        let now = h.compute.clock().now();
        let server = Server {
            vm_state: VmState::Deleted,
            deleted_at: Some(now),
            host: None,
            ..staged_server(ServerId(uuid::Uuid::new_v4()), now)
        };
        let intent = intent(server.id, 0, state, now);
        (server, intent)
    };
    for foreign in [ForeignPolicy::Report, ForeignPolicy::Unbind] {
        let mut config = config();
        config.gc.policy.foreign = foreign;
        let h = Harness::start(config).await;
        let mut changes = Vec::new();
        for i in 0..SETTLED {
            let state = if i % 2 == 0 {
                IntentState::Created
            } else {
                IntentState::Failed
            };
            let (server, intent) = deleted_now(&h, state);
            changes.extend([Change::InsertServer(server), Change::InsertIntent(intent)]);
        }
        let (unsettled, intent) = deleted_now(&h, IntentState::Abandoned);
        changes.extend([Change::InsertServer(unsettled.clone()), Change::InsertIntent(intent)]);
        h.compute.store().commit(changes).await.unwrap();
        let ghost = h.neutron_port(json!({"device_id": unsettled.id.to_string()}));

        h.sim().reset_stats();
        let report = h.compute.heal().await.unwrap();
        let lists = h.sim().stats().calls("ports.list");
        let found: Vec<&str> = report.ghosts.iter().map(|g| g.port_id.as_str()).collect();
        assert_eq!(found, [ghost["id"].as_str().unwrap()], "{foreign:?}: {report:?}");
        if foreign == ForeignPolicy::Report {
            assert_eq!(report.servers, 1, "only the unsettled one: {report:?}");
            assert_eq!(lists, 1, "one port list, for the unsettled one's batch");
        } else {
            assert_eq!(report.servers, SETTLED + 1, "every deleted server: {report:?}");
            assert_eq!(lists, 4, "a port list per 100 servers");
        }
        let audit = h.compute.audit(&|_, _| {}).await.unwrap();
        assert_eq!(audit.servers.len(), SETTLED + 1, "the audit names every deleted server");
    }
}

/// A pass sends the port lists of the next three batches while a batch is
/// still being healed: here the first batch waits on a Neutron call of its own
/// (the list by id of its server's deleted port), and the later batches' lists
/// are sent, and held, meanwhile. A pass that read each batch only after
/// healing the one before would send none; one that read fewer batches ahead,
/// not all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_three_batches_lists_are_sent_while_a_batch_is_healed() {
    let mut config = config();
    config.heal.batch_size = 1;
    let h = Harness::start(config).await;
    let mut servers = [h.boot().await, h.boot().await, h.boot().await, h.boot().await];
    // A pass heals them in id order.
    servers.sort();
    let first = servers[0];
    let port = h.ports_of(first)[0]["id"].as_str().unwrap().to_owned();
    h.sim().request("DELETE", &format!("/v2.0/ports/{port}"), None);

    let hold = |key: &str, value: String| FaultRule {
        query_params: vec![(key.to_owned(), value)],
        ..FaultRule::new("ports.list", FaultAction::Hold)
    };
    h.sim().add_fault(hold("id", port));
    for later in &servers[1..] {
        h.sim().add_fault(hold("device_id", later.to_string()));
    }
    let pass = tokio::spawn({
        let compute = h.compute.clone();
        async move { compute.heal().await }
    });
    let released = h.release_once_every_fault_fired().await;
    assert_eq!(
        released,
        Ok(4),
        "the later batches' lists waited for the first batch (fired per rule)"
    );
    let report = pass.await.unwrap().unwrap();
    assert_eq!(report.batches, 4);
    assert_eq!(report.lost.len(), 1, "{report:?}");
    assert_eq!(report.lost[0].0, first);
}

/// A pass that finds the catalog's network details stale (a process's first,
/// or one after their TTL) asks for them, by the networks of the batch's VIF
/// records, while Neutron lists the batch's ports: after the list, they were
/// two more round trips on the pass's path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_details_are_asked_for_while_the_ports_are_listed() {
    let h = Harness::start(config()).await;
    let server = h.boot().await;
    let restarted = h.one_off(config()).await;
    h.sim().reset_stats();
    h.sim().add_fault(FaultRule::new("ports.list", FaultAction::Hold));
    h.sim().add_fault(FaultRule::new("subnets.list", FaultAction::Hold));
    let pass = tokio::spawn(async move { restarted.heal().await });
    let held = h.release_once_every_fault_fired().await;
    assert!(
        held.is_ok(),
        "the subnets were asked for only after the port list: {held:?} fired per rule"
    );
    let report = pass.await.unwrap().unwrap();
    assert_eq!(report.servers, 1);
    assert!(report.lost.is_empty(), "{report:?}");
    let stats = h.sim().stats();
    assert_eq!(
        stats.calls("networks.list") + stats.calls("subnets.list"),
        2,
        "network details once: {stats:?}"
    );
    let cached = h.cached_port_ids(server).await;
    assert_eq!(cached.len(), 1);
}

/// A pass does not rebuild a cache the pass before found right, while its
/// generation and every input of its rebuild are as they were: a change to the
/// port, a floating IP, a subnet, a VIF record or the cache itself makes it
/// rebuild (and write) again, and it is rebuilt once in every ten passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_found_right_is_rebuilt_only_when_an_input_or_the_cache_changed() {
    let mut config = config();
    config.network_details_ttl = std::time::Duration::ZERO;
    let h = Harness::start(config).await;
    let server = h.boot().await;
    let port = h.ports_of(server)[0]["id"].as_str().unwrap().to_owned();
    let store = h.compute.store();
    // (cache writes, caches known right) of one pass.
    let pass = || async {
        let report = h.compute.heal().await.unwrap();
        (report.cache_writes, report.known_right)
    };
    let cache_json = || async { h.compute.network_info(server).await.unwrap().to_json() };
    let due_next = || cache::rebuild_due(server, h.compute.heal_passes());
    // Passes until one found the cache right and the next is not the
    // server's turn to be rebuilt.
    let settle = || async {
        loop {
            let (writes, _) = pass().await;
            if writes == 0 && !due_next() {
                return;
            }
        }
    };
    assert_eq!(pass().await, (0, 0), "the first pass rebuilds every cache");
    settle().await;
    assert_eq!(pass().await, (0, 1), "nothing changed");

    let (status, body) = h.sim().request(
        "PUT",
        &format!("/v2.0/ports/{port}"),
        Some(json!({"port": {"fixed_ips": [{"subnet_id": h.topology.private_subnet_id, "ip_address": "10.0.0.99"}]}})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(pass().await, (1, 0), "the port changed");
    assert_eq!(pass().await, (0, 0), "the cache was written since");
    settle().await;
    assert_eq!(pass().await, (0, 1));

    settle().await;
    let (status, body) = h.sim().request(
        "POST",
        "/v2.0/floatingips",
        Some(json!({"floatingip": {"floating_network_id": h.topology.public_network_id, "port_id": port, "project_id": PROJECT}})),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(pass().await, (1, 0), "a floating IP came");
    let address = body["floatingip"]["floating_ip_address"].as_str().unwrap().to_owned();
    assert!(cache_json().await.contains(&address));

    settle().await;
    let (status, body) = h.sim().request(
        "PUT",
        &format!("/v2.0/subnets/{}", h.topology.private_subnet_id),
        Some(json!({"subnet": {"dns_nameservers": ["192.0.2.53"]}})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(pass().await, (1, 0), "the subnet changed");
    assert!(cache_json().await.contains("192.0.2.53"));

    settle().await;
    let vif = store.vifs(server).await.unwrap().remove(0);
    let tagged = VifRecord {
        tag: Some("nic1".to_owned()),
        ..vif
    };
    store.commit(vec![Change::UpdateVif(tagged)]).await.unwrap();
    assert_eq!(
        pass().await.1,
        0,
        "a VIF record changed (which advances the generation)"
    );

    settle().await;
    h.empty_cache(server).await;
    assert_eq!(pass().await, (1, 0), "the cache was written by another");
    assert_eq!(h.cached_port_ids(server).await, [port]);

    settle().await;
    while !due_next() {
        assert_eq!(pass().await, (0, 1));
    }
    assert_eq!(pass().await, (0, 0), "its turn to be rebuilt");
    assert_eq!(pass().await, (0, 1));
}
