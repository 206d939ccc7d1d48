//! Info caches, instance actions and ghost sightings.

use super::*;

/// Invariant 13.
pub async fn cache_writes_compare_and_swap_on_generation(db: &Db) {
    let s = bare_server("p", at(0));
    insert_server(&*db.store, &s).await;
    let info = network_info();

    commit(&*db.store, vec![write_cache(s.id, info.clone(), 0)]).await;
    let stored = db.store.cache(s.id).await.unwrap();
    assert_eq!(
        stored,
        StoredCache {
            info: info.clone(),
            generation: 1
        }
    );
    // The stored text is Nova's, key order included.
    assert_eq!(stored.info.to_json(), info.to_json());

    // A writer that read generation 0 lost the race.
    assert_conflict(
        db.store
            .commit(vec![write_cache(s.id, NetworkInfo::default(), 0)])
            .await,
    );
    assert_eq!(db.store.cache(s.id).await.unwrap(), stored);

    commit(&*db.store, vec![write_cache(s.id, NetworkInfo::default(), 1)]).await;
    assert_eq!(
        db.store.cache(s.id).await.unwrap(),
        StoredCache {
            info: NetworkInfo::default(),
            generation: 2
        }
    );

    assert!(matches!(
        db.store.cache(ServerId(uuid::Uuid::new_v4())).await,
        Err(Error::NotFound(_))
    ));
    assert_conflict(
        db.store
            .commit(vec![write_cache(ServerId(uuid::Uuid::new_v4()), info, 0)])
            .await,
    );
}

pub async fn actions_are_newest_first_with_events_in_order(db: &Db) {
    let s = bare_server("p", at(0));
    let other = bare_server("p", at(0));
    let full_event = |name: &str, t| {
        netcache_domain::action::ActionEvent::finished(
            name,
            t,
            false,
            Some("Traceback: boom".into()),
            Some("host2".into()),
        )
    };
    let create = netcache_domain::action::Action {
        message: Some("Error".into()),
        ..action(
            s.id,
            "req-create",
            at(1),
            vec![event("compute__do_build", at(1)), full_event("allocate_network", at(2))],
        )
    };
    let attach = action(s.id, "req-attach", at(10), vec![]);
    // Same start time as `attach`: the later insert is the newer.
    let heal = action(s.id, "req-heal", at(10), vec![]);
    insert_servers_with(
        &*db.store,
        &[&s, &other],
        vec![
            Change::StartAction(create.clone()),
            Change::StartAction(attach.clone()),
            Change::StartAction(heal.clone()),
            Change::StartAction(action(other.id, "req-create", at(1), vec![event("x", at(1))])),
        ],
    )
    .await;

    let third = full_event("compute_attach", at(11));
    let fourth = event("spawn", at(3));
    commit(
        &*db.store,
        vec![
            add_event(s.id, "req-attach", third.clone()),
            add_event(s.id, "req-create", fourth.clone()),
        ],
    )
    .await;

    let mut create = create;
    create.events.push(fourth);
    let mut attach = attach;
    attach.events.push(third);
    assert_eq!(
        db.store.actions(s.id).await.unwrap(),
        vec![heal, attach, create.clone()]
    );
    assert_eq!(db.store.actions(other.id).await.unwrap().len(), 1);
    assert_eq!(db.store.actions(ServerId(uuid::Uuid::new_v4())).await.unwrap(), vec![]);

    // Events of an action that does not exist (here: of another server) are refused.
    let elsewhere = add_event(other.id, "req-attach", event("x", at(20)));
    assert_not_found(db.store.commit(vec![elsewhere]).await);
    // The same request twice is a conflict.
    assert_conflict(db.store.commit(vec![Change::StartAction(create)]).await);
}

pub async fn ghost_sightings_upsert_by_port(db: &Db) {
    let intent = IntentId(uuid::Uuid::new_v4());
    let ours = ghost("g-ours", GhostOwner::Ours { intent: Some(intent) }, at(5));
    let unnamed = ghost("g-unnamed", GhostOwner::Ours { intent: None }, at(1));
    let foreign = ghost("g-foreign", GhostOwner::Foreign, at(3));
    let sightings = [&ours, &unnamed, &foreign].map(|g| Change::UpsertGhostSighting(g.clone()));
    commit(&*db.store, sightings.into()).await;
    assert_eq!(
        db.store.ghost_sightings().await.unwrap(),
        vec![unnamed.clone(), foreign.clone(), ours.clone()]
    );

    // Seen again: the row is replaced, not duplicated.
    let again = netcache_domain::ghost::GhostSighting {
        last_seen: at(100),
        times_seen: 3,
        revision_number: u64::from(u32::MAX) + 5,
        owner: GhostOwner::Foreign,
        ..ours.clone()
    };
    commit(&*db.store, vec![Change::UpsertGhostSighting(again.clone())]).await;
    assert_eq!(
        db.store.ghost_sightings().await.unwrap(),
        vec![unnamed.clone(), foreign.clone(), again.clone()]
    );
    assert_eq!(db.store.ghost_sighting(&again.port_id).await.unwrap(), Some(again));
    assert_eq!(
        db.store.ghost_sighting(&PortId::from("never-seen")).await.unwrap(),
        None
    );

    commit(
        &*db.store,
        vec![
            Change::DeleteGhostSighting {
                port_id: foreign.port_id.clone(),
            },
            // Deleting what is already gone is not an error.
            Change::DeleteGhostSighting {
                port_id: PortId::from("never-seen"),
            },
        ],
    )
    .await;
    assert_eq!(db.store.ghost_sightings().await.unwrap().len(), 2);
}

pub async fn vif_changes_advance_the_cache_generation(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    let read = db.store.cache(s.id).await.unwrap().generation;
    commit(&*db.store, vec![Change::InsertVif(vif(s.id, "p1", 0))]).await;
    // A cache computed before the VIF change may not be written after it.
    assert_conflict(db.store.commit(vec![write_cache(s.id, network_info(), read)]).await);
    assert_eq!(db.store.cache(s.id).await.unwrap().generation, read + 1);
}

/// Reports a foreign port on `server` and says whether the sighting was recorded.
async fn sighting_is_recorded(store: &dyn Store, server: ServerId, port: &str) -> bool {
    let mut g = ghost(port, GhostOwner::Foreign, at(1));
    g.device_id = server.to_string();
    commit(store, vec![Change::UpsertGhostSighting(g)]).await;
    store.ghost_sighting(&PortId::from(port)).await.unwrap().is_some()
}

/// Invariant 16.
pub async fn ghost_sightings_skip_recorded_ports_and_busy_servers(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    commit(&*db.store, vec![Change::InsertVif(vif(s.id, "recorded", 0))]).await;
    assert!(!sighting_is_recorded(&*db.store, s.id, "recorded").await);
    let op = operation(s.id, OperationParams::Build, &owner("n", "1"), at(10));
    commit(&*db.store, vec![insert_op(&op, 30)]).await;
    assert!(!sighting_is_recorded(&*db.store, s.id, "mid-create").await);
    commit(
        &*db.store,
        vec![Change::FinishOperation {
            server_id: s.id,
            id: op.id,
            owner: op.owner.clone(),
        }],
    )
    .await;
    assert!(sighting_is_recorded(&*db.store, s.id, "mid-create").await);
}
