//! VIF records.

use super::*;

pub async fn vifs_round_trip_by_position(db: &Db) {
    let [s, other] = two_servers();
    insert_servers_with(&*db.store, &[&s, &other], vec![]).await;
    let third = vif(s.id, "p3", 2);
    let first = preexisting_vif(s.id, "p1", 0);
    let second = VifRecord {
        requested_fixed_ip: Some("2001:db8::9".parse().unwrap()),
        ..vif(s.id, "p2", 1)
    };
    let elsewhere = vif(other.id, "p9", 0);
    commit(
        &*db.store,
        vec![
            Change::InsertVif(third.clone()),
            Change::InsertVif(first.clone()),
            Change::InsertVif(elsewhere.clone()),
            Change::InsertVif(second.clone()),
        ],
    )
    .await;

    assert_eq!(
        db.store.vifs(s.id).await.unwrap(),
        vec![first.clone(), second.clone(), third.clone()]
    );
    assert_eq!(db.store.vifs(other.id).await.unwrap(), vec![elsewhere]);
    assert_eq!(db.store.vifs(ServerId(uuid::Uuid::new_v4())).await.unwrap(), vec![]);
    assert_eq!(
        db.store.vif_by_port(&PortId::from("p2")).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(db.store.vif_by_port(&PortId::from("nope")).await.unwrap(), None);

    // Update replaces the record; delete removes it.
    let releasing = VifRecord {
        state: VifState::Releasing,
        position: 7,
        tag: None,
        ..second.clone()
    };
    commit(&*db.store, vec![Change::UpdateVif(releasing.clone())]).await;
    assert_eq!(db.store.vif_by_port(&second.port_id).await.unwrap(), Some(releasing));
    commit(&*db.store, vec![delete_vif(s.id, first.port_id.clone())]).await;
    assert_eq!(db.store.vif_by_port(&first.port_id).await.unwrap(), None);
    assert_eq!(db.store.vifs(s.id).await.unwrap().len(), 2);
}

/// [`two_servers`], the first with a VIF record of `port` at position 0, inserted in one batch.
async fn two_servers_one_record(store: &dyn Store, port: &str) -> ([Server; 2], VifRecord) {
    let [s, other] = two_servers();
    let record = vif(s.id, port, 0);
    insert_servers_with(store, &[&s, &other], vec![Change::InsertVif(record.clone())]).await;
    ([s, other], record)
}

pub async fn missing_vifs_are_not_found(db: &Db) {
    let ([s, other], record) = two_servers_one_record(&*db.store, "p1").await;

    assert_not_found(db.store.commit(vec![Change::UpdateVif(vif(s.id, "p2", 1))]).await);
    // The port exists, but in another server's records.
    let wrong_server = VifRecord {
        server_id: other.id,
        ..record.clone()
    };
    assert_not_found(db.store.commit(vec![Change::UpdateVif(wrong_server)]).await);
    assert_not_found(
        db.store
            .commit(vec![delete_vif(other.id, record.port_id.clone())])
            .await,
    );
    // A record of a server that does not exist.
    assert_not_found(
        db.store
            .commit(vec![Change::InsertVif(vif(ServerId(uuid::Uuid::new_v4()), "p5", 0))])
            .await,
    );
    assert_eq!(db.store.vifs(s.id).await.unwrap(), vec![record]);
}

pub async fn a_port_is_in_at_most_one_servers_records(db: &Db) {
    let ([a, b], record) = two_servers_one_record(&*db.store, "shared").await;

    assert_conflict(db.store.commit(vec![Change::InsertVif(vif(b.id, "shared", 0))]).await);
    assert_conflict(db.store.commit(vec![Change::InsertVif(vif(a.id, "shared", 3))]).await);
    // Even when both records arrive in the same batch.
    assert_conflict(
        db.store
            .commit(vec![
                Change::InsertVif(vif(a.id, "fresh", 1)),
                Change::InsertVif(vif(b.id, "fresh", 0)),
            ])
            .await,
    );
    assert_eq!(db.store.vifs(a.id).await.unwrap(), vec![record]);
    assert_eq!(db.store.vifs(b.id).await.unwrap(), vec![]);
    assert_eq!(db.store.vif_by_port(&PortId::from("fresh")).await.unwrap(), None);
}

pub async fn releasing_vifs_span_servers(db: &Db) {
    let [a, b] = two_servers();
    let releasing = |server, port, position| VifRecord {
        state: VifState::Releasing,
        ..vif(server, port, position)
    };
    let a1 = releasing(a.id, "a1", 1);
    let a0 = releasing(a.id, "a0", 0);
    let b0 = releasing(b.id, "b0", 0);
    insert_servers_with(
        &*db.store,
        &[&a, &b],
        vec![
            Change::InsertVif(a1.clone()),
            Change::InsertVif(vif(a.id, "attached", 2)),
            Change::InsertVif(VifRecord {
                state: VifState::Lost,
                ..vif(b.id, "lost", 1)
            }),
            Change::InsertVif(b0.clone()),
            Change::InsertVif(a0.clone()),
        ],
    )
    .await;

    let mut found = db.store.releasing_vifs().await.unwrap();
    // Across servers the order is unspecified; within a server it is by position.
    let a_positions: Vec<i64> = found
        .iter()
        .filter(|v| v.server_id == a.id)
        .map(|v| v.position)
        .collect();
    assert_eq!(a_positions, vec![0, 1]);
    found.sort_by(|x, y| x.port_id.cmp(&y.port_id));
    assert_eq!(found, vec![a0, a1, b0.clone()]);

    // Once released (record deleted), it is no longer listed.
    commit(&*db.store, vec![delete_vif(b.id, b0.port_id)]).await;
    assert_eq!(db.store.releasing_vifs().await.unwrap().len(), 2);
}

/// The set-shaped reads: one statement per 128 servers, whatever the set's size,
/// and the same records as one read per server.
pub async fn vifs_and_caches_of_a_set_of_servers_cost_one_statement_per_128(db: &Db) {
    const SERVERS: usize = 300;
    let servers: Vec<Server> = (0..SERVERS).map(|i| bare_server("p", at(i as i64))).collect();
    let deleted = Server {
        vm_state: VmState::Deleted,
        deleted_at: Some(at(1000)),
        ..bare_server("p", at(999))
    };
    let mut changes: Vec<Change> = servers.iter().map(|s| Change::InsertServer(s.clone())).collect();
    changes.push(Change::InsertServer(deleted.clone()));
    // Two records on every third server, none on the others; given out of order.
    for (i, s) in servers.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        changes.push(Change::InsertVif(vif(s.id, &format!("b{i}"), 1)));
        changes.push(Change::InsertVif(vif(s.id, &format!("a{i}"), 0)));
    }
    changes.push(write_cache(servers[1].id, network_info(), 0));
    commit(&*db.store, changes).await;
    let mut ids: Vec<ServerId> = servers.iter().map(|s| s.id).collect();
    ids.push(deleted.id);
    let unknown = ServerId(uuid::Uuid::new_v4());
    ids.push(unknown);

    let before = db.store.queries_sent();
    let vifs = db.store.vifs_of(&ids).await.unwrap();
    let caches = db.store.caches_of(&ids).await.unwrap();
    assert_eq!(
        db.store.queries_sent() - before,
        2 * ids.len().div_ceil(128) as u64,
        "one statement per 128 servers and read"
    );
    assert_eq!(vifs.len(), SERVERS.div_ceil(3), "servers without records have no entry");
    for s in &servers {
        let one_by_one = db.store.vifs(s.id).await.unwrap();
        assert_eq!(vifs.get(&s.id).cloned().unwrap_or_default(), one_by_one, "{}", s.id);
        assert_eq!(caches[&s.id], db.store.cache(s.id).await.unwrap());
    }
    assert_eq!(caches[&servers[1].id].info, network_info());
    assert!(caches.contains_key(&deleted.id), "a deleted server keeps its cache");
    assert!(!caches.contains_key(&unknown) && !vifs.contains_key(&unknown));
    assert!(db.store.vifs_of(&[]).await.unwrap().is_empty());

    let generations = db.store.live_cache_generations().await.unwrap();
    let generation = |s: &Server| generations[&s.id].generation;
    assert_eq!(generations.len(), SERVERS, "live servers only");
    assert_eq!(generation(&servers[1]), 1);
    assert_eq!(generation(&servers[2]), 0, "untouched");
    assert_eq!(generation(&servers[0]), 2, "each VIF record advances it");
    assert!(generations.values().all(|g| g.found_right.is_none()));
}

/// What heal found of a cache is recorded at the generation it found it at,
/// read with the generations, and stands only while the generation does: a
/// record at a generation the cache has passed does nothing (and is no
/// conflict), and the next write of the cache or its VIF records ends it.
pub async fn what_heal_found_of_a_cache_stands_at_its_generation_only(db: &Db) {
    let [a, b] = [bare_server("p", at(1)), bare_server("p", at(2))];
    insert_servers_with(&*db.store, &[&a, &b], vec![Change::InsertVif(vif(b.id, "p1", 0))]).await;
    // Both halves' top bits set: the columns are signed.
    let found = FoundRight::from_columns(-2, i64::MIN);
    let record = |server: &Server, generation| Change::RecordFoundRight {
        server_id: server.id,
        generation,
        found,
    };
    commit(&*db.store, vec![record(&a, 0), record(&b, 0)]).await;
    let found_right = |generations: &HashMap<ServerId, CacheGeneration>, s: &Server| generations[&s.id].found_right;
    let generations = db.store.live_cache_generations().await.unwrap();
    assert_eq!(found_right(&generations, &a), Some(found));
    assert_eq!(found_right(&generations, &b), None, "b's cache is at generation 1");

    commit(&*db.store, vec![Change::InsertVif(vif(a.id, "p2", 0))]).await;
    let generations = db.store.live_cache_generations().await.unwrap();
    assert_eq!(
        generations[&a.id],
        CacheGeneration {
            generation: 1,
            found_right: None
        },
        "a VIF record of a changed since"
    );
    commit(&*db.store, vec![record(&a, 1)]).await;
    commit(&*db.store, vec![write_cache(a.id, network_info(), 1)]).await;
    let generations = db.store.live_cache_generations().await.unwrap();
    assert_eq!(found_right(&generations, &a), None, "a's cache was written since");
}
