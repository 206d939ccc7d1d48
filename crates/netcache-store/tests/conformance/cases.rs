//! The cases: each takes a fresh database and runs against every backend.

use chrono::Duration;
use netcache_domain::change::Change;
use netcache_domain::ghost::GhostOwner;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::operation::{Operation, OperationParams, Owner, QueuedDelete};
use netcache_domain::server::{NetworkRequests, Server, VmState};
use netcache_domain::vif::{VifRecord, VifState};
use netcache_domain::{IntentId, PortId, ProjectId, ServerId};
use netcache_store::{Error, ServerFilter, Store, StoredCache};

use crate::fixtures::*;
use crate::harness::Db;

async fn commit(store: &dyn Store, changes: Vec<Change>) {
    store.commit(changes).await.expect("commit");
}

async fn insert_server(store: &dyn Store, server: &Server) {
    commit(store, vec![Change::InsertServer(server.clone())]).await;
}

#[track_caller]
fn assert_conflict(result: Result<(), Error>) {
    match result {
        Err(Error::Conflict(_)) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[track_caller]
fn assert_not_found(result: Result<(), Error>) {
    match result {
        Err(Error::NotFound(_)) => {}
        other => panic!("expected not found, got {other:?}"),
    }
}

fn all_servers() -> ServerFilter {
    ServerFilter {
        project_id: None,
        include_deleted: true,
    }
}

pub async fn deployment_id_is_generated_once_and_stable(db: &Db) {
    let id = db.store.deployment_id().await.unwrap().0;
    let hex = id
        .strip_prefix("nc-")
        .unwrap_or_else(|| panic!("{id:?} lacks the nc- prefix"));
    assert_eq!(hex.len(), 12, "{id:?}");
    assert!(hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')), "{id:?}");
    assert_eq!(db.store.deployment_id().await.unwrap().0, id);

    // A second process on the same database, and a restart, see the same id.
    if let Some(other) = db.reopen().await {
        assert_eq!(other.deployment_id().await.unwrap().0, id);
    }
    if let Some(again) = db.reopen().await {
        assert_eq!(again.deployment_id().await.unwrap().0, id);
    }
}

pub async fn deployment_ids_differ_between_databases(db: &Db) {
    let other = Db::create(&crate::harness::Target::SqliteMemory).await;
    assert_ne!(
        db.store.deployment_id().await.unwrap(),
        other.store.deployment_id().await.unwrap()
    );
}

pub async fn servers_round_trip_every_field(db: &Db) {
    let full = server("proj-a", at(0));
    let bare = bare_server("proj-a", at(1));
    let no_networks = Server {
        requested_networks: NetworkRequests::None,
        vm_state: VmState::Deleted,
        deleted_at: Some(at(50)),
        ..bare_server("proj-b", at(2))
    };
    commit(
        &*db.store,
        vec![
            Change::InsertServer(full.clone()),
            Change::InsertServer(bare.clone()),
            Change::InsertServer(no_networks.clone()),
        ],
    )
    .await;

    assert_eq!(db.store.server(full.id).await.unwrap(), Some(full.clone()));
    assert_eq!(db.store.server(bare.id).await.unwrap(), Some(bare.clone()));
    assert_eq!(
        db.store.server(no_networks.id).await.unwrap(),
        Some(no_networks.clone())
    );
    assert_eq!(db.store.server(ServerId::new_v4()).await.unwrap(), None);
    assert_eq!(
        db.store.servers(&all_servers()).await.unwrap(),
        vec![full.clone(), bare, no_networks]
    );

    // Every server starts with an empty cache at generation 0.
    assert_eq!(
        db.store.cache(full.id).await.unwrap(),
        StoredCache {
            info: NetworkInfo::default(),
            generation: 0
        }
    );

    // The same id twice is a conflict.
    assert_conflict(db.store.commit(vec![Change::InsertServer(full)]).await);
}

pub async fn timestamps_keep_microseconds_and_sort_in_time_order(db: &Db) {
    // Sub-microsecond digits are dropped on both backends (PostgreSQL keeps no more).
    let precise = bare_server("p", at(0) + Duration::nanoseconds(789));
    insert_server(&*db.store, &precise).await;
    let stored = db.store.server(precise.id).await.unwrap().unwrap();
    assert_eq!(stored.created_at, at(0));
    assert_eq!(stored.created_at.timestamp_subsec_nanos(), 123_456_000);

    // Whole seconds, fractions of different lengths, and a later second sort in
    // time order (a text column with variable-width fractions would not).
    let whole = at(1) - Duration::microseconds(123_456);
    let half = whole + Duration::milliseconds(500);
    let tiny = whole + Duration::microseconds(1);
    let servers: Vec<Server> = [half, at(2), whole, tiny]
        .into_iter()
        .map(|t| bare_server("p", t))
        .collect();
    commit(&*db.store, servers.iter().cloned().map(Change::InsertServer).collect()).await;
    let created: Vec<_> = db
        .store
        .servers(&all_servers())
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.created_at)
        .collect();
    assert_eq!(created, vec![at(0), whole, tiny, half, at(2)]);
}

pub async fn servers_are_oldest_first_and_filtered(db: &Db) {
    let mut servers = vec![
        bare_server("proj-a", at(5)),
        bare_server("proj-b", at(1)),
        bare_server("proj-a", at(3)),
        Server {
            vm_state: VmState::Deleted,
            deleted_at: Some(at(9)),
            ..bare_server("proj-a", at(2))
        },
    ];
    // Two servers created at the same instant are ordered by id.
    let twin_a = bare_server("proj-a", at(4));
    let twin_b = bare_server("proj-a", at(4));
    servers.push(twin_a.clone());
    servers.push(twin_b.clone());
    commit(&*db.store, servers.iter().cloned().map(Change::InsertServer).collect()).await;

    let ids = |list: Vec<Server>| list.into_iter().map(|s| s.id).collect::<Vec<_>>();
    let (first_twin, second_twin) = if twin_a.id < twin_b.id {
        (twin_a.id, twin_b.id)
    } else {
        (twin_b.id, twin_a.id)
    };

    let everything = ids(db.store.servers(&all_servers()).await.unwrap());
    assert_eq!(
        everything,
        vec![
            servers[1].id,
            servers[3].id,
            servers[2].id,
            first_twin,
            second_twin,
            servers[0].id
        ]
    );

    let live = ids(db.store.servers(&ServerFilter::default()).await.unwrap());
    assert_eq!(
        live,
        vec![servers[1].id, servers[2].id, first_twin, second_twin, servers[0].id]
    );

    let project_a = ServerFilter {
        project_id: Some(ProjectId::from("proj-a")),
        include_deleted: false,
    };
    assert_eq!(
        ids(db.store.servers(&project_a).await.unwrap()),
        vec![servers[2].id, first_twin, second_twin, servers[0].id]
    );
    let project_a_all = ServerFilter {
        include_deleted: true,
        ..project_a
    };
    assert_eq!(
        ids(db.store.servers(&project_a_all).await.unwrap()),
        vec![servers[3].id, servers[2].id, first_twin, second_twin, servers[0].id]
    );
    let nobody = ServerFilter {
        project_id: Some(ProjectId::from("proj-z")),
        include_deleted: true,
    };
    assert_eq!(db.store.servers(&nobody).await.unwrap(), vec![]);
}

pub async fn update_server_compares_and_swaps_the_generation(db: &Db) {
    let original = bare_server("p", at(0));
    insert_server(&*db.store, &original).await;

    let mut active = server("p", at(0));
    active.id = original.id;
    active.vm_state = VmState::Active;
    active.generation = 0;
    commit(&*db.store, vec![Change::UpdateServer(active.clone())]).await;
    let stored = db.store.server(original.id).await.unwrap().unwrap();
    assert_eq!(
        stored,
        Server {
            generation: 1,
            ..active.clone()
        }
    );

    // A writer that read generation 0 lost the race.
    let stale = Server {
        name: "stale".into(),
        ..active.clone()
    };
    assert_conflict(db.store.commit(vec![Change::UpdateServer(stale)]).await);
    assert_eq!(db.store.server(original.id).await.unwrap().unwrap(), stored);

    // Writing from the current generation works again.
    commit(&*db.store, vec![Change::UpdateServer(stored.clone())]).await;
    assert_eq!(db.store.server(original.id).await.unwrap().unwrap().generation, 2);

    // A server that does not exist cannot be updated.
    assert_conflict(
        db.store
            .commit(vec![Change::UpdateServer(bare_server("p", at(0)))])
            .await,
    );
}

pub async fn vifs_round_trip_by_position(db: &Db) {
    let s = bare_server("p", at(0));
    let other = bare_server("p", at(1));
    commit(
        &*db.store,
        vec![Change::InsertServer(s.clone()), Change::InsertServer(other.clone())],
    )
    .await;
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
    assert_eq!(db.store.vifs(ServerId::new_v4()).await.unwrap(), vec![]);
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
    commit(
        &*db.store,
        vec![Change::DeleteVif {
            server_id: s.id,
            port_id: first.port_id.clone(),
        }],
    )
    .await;
    assert_eq!(db.store.vif_by_port(&first.port_id).await.unwrap(), None);
    assert_eq!(db.store.vifs(s.id).await.unwrap().len(), 2);
}

pub async fn missing_vifs_are_not_found(db: &Db) {
    let s = bare_server("p", at(0));
    let other = bare_server("p", at(1));
    let record = vif(s.id, "p1", 0);
    commit(
        &*db.store,
        vec![
            Change::InsertServer(s.clone()),
            Change::InsertServer(other.clone()),
            Change::InsertVif(record.clone()),
        ],
    )
    .await;

    assert_not_found(db.store.commit(vec![Change::UpdateVif(vif(s.id, "p2", 1))]).await);
    // The port exists, but in another server's records.
    let wrong_server = VifRecord {
        server_id: other.id,
        ..record.clone()
    };
    assert_not_found(db.store.commit(vec![Change::UpdateVif(wrong_server)]).await);
    assert_not_found(
        db.store
            .commit(vec![Change::DeleteVif {
                server_id: other.id,
                port_id: record.port_id.clone(),
            }])
            .await,
    );
    // A record of a server that does not exist.
    assert_not_found(
        db.store
            .commit(vec![Change::InsertVif(vif(ServerId::new_v4(), "p5", 0))])
            .await,
    );
    assert_eq!(db.store.vifs(s.id).await.unwrap(), vec![record]);
}

pub async fn a_port_is_in_at_most_one_servers_records(db: &Db) {
    let a = bare_server("p", at(0));
    let b = bare_server("p", at(1));
    let record = vif(a.id, "shared", 0);
    commit(
        &*db.store,
        vec![
            Change::InsertServer(a.clone()),
            Change::InsertServer(b.clone()),
            Change::InsertVif(record.clone()),
        ],
    )
    .await;

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
    let a = bare_server("p", at(0));
    let b = bare_server("p", at(1));
    let releasing = |server, port, position| VifRecord {
        state: VifState::Releasing,
        ..vif(server, port, position)
    };
    let a1 = releasing(a.id, "a1", 1);
    let a0 = releasing(a.id, "a0", 0);
    let b0 = releasing(b.id, "b0", 0);
    commit(
        &*db.store,
        vec![
            Change::InsertServer(a.clone()),
            Change::InsertServer(b.clone()),
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
    commit(
        &*db.store,
        vec![Change::DeleteVif {
            server_id: b.id,
            port_id: b0.port_id,
        }],
    )
    .await;
    assert_eq!(db.store.releasing_vifs().await.unwrap().len(), 2);
}

pub async fn intents_round_trip_in_every_state(db: &Db) {
    let s = bare_server("p", at(0));
    insert_server(&*db.store, &s).await;
    let pending = intent(s.id, 0, at(1));
    let created = resolved(&intent(s.id, 1, at(2)), IntentState::Created, Some("port-1"), false);
    let adopted = resolved(&intent(s.id, 2, at(3)), IntentState::Created, Some("port-2"), true);
    let failed = resolved(&intent(s.id, 3, at(4)), IntentState::Failed, None, false);
    let abandoned = PortIntent {
        attempt: 0,
        fixed_ip: None,
        tag: None,
        ..resolved(&intent(s.id, 4, at(5)), IntentState::Abandoned, None, false)
    };
    let all = [abandoned, failed, adopted, created, pending];
    commit(&*db.store, all.iter().cloned().map(Change::InsertIntent).collect()).await;

    for expected in &all {
        assert_eq!(db.store.intent(expected.id).await.unwrap().as_ref(), Some(expected));
    }
    assert_eq!(db.store.intent(IntentId::new_v4()).await.unwrap(), None);
    let oldest_first: Vec<_> = all.iter().rev().cloned().collect();
    assert_eq!(db.store.intents(s.id).await.unwrap(), oldest_first);
    assert_eq!(db.store.intents(ServerId::new_v4()).await.unwrap(), vec![]);

    // The same id twice is a conflict.
    assert_conflict(db.store.commit(vec![Change::InsertIntent(all[4].clone())]).await);
}

pub async fn update_intent_requires_the_expected_state(db: &Db) {
    let s = bare_server("p", at(0));
    let pending = intent(s.id, 0, at(1));
    commit(
        &*db.store,
        vec![Change::InsertServer(s.clone()), Change::InsertIntent(pending.clone())],
    )
    .await;

    let created = resolved(&pending, IntentState::Created, Some("port-1"), true);
    commit(
        &*db.store,
        vec![Change::UpdateIntent {
            intent: created.clone(),
            expected: IntentState::Pending,
        }],
    )
    .await;
    assert_eq!(db.store.intent(pending.id).await.unwrap(), Some(created.clone()));

    // A second resolver that also saw it pending must not overwrite the outcome.
    let abandoned = resolved(&pending, IntentState::Abandoned, None, false);
    assert_conflict(
        db.store
            .commit(vec![Change::UpdateIntent {
                intent: abandoned,
                expected: IntentState::Pending,
            }])
            .await,
    );
    assert_eq!(db.store.intent(pending.id).await.unwrap(), Some(created));

    // An intent that does not exist is in no state.
    assert_conflict(
        db.store
            .commit(vec![Change::UpdateIntent {
                intent: intent(s.id, 1, at(2)),
                expected: IntentState::Pending,
            }])
            .await,
    );
}

pub async fn pending_intents_span_servers_oldest_first(db: &Db) {
    let a = bare_server("p", at(0));
    let b = bare_server("p", at(1));
    let a_late = intent(a.id, 1, at(30));
    let b_early = intent(b.id, 0, at(10));
    let a_early = intent(a.id, 0, at(20));
    let done = resolved(&intent(b.id, 1, at(5)), IntentState::Created, Some("x"), false);
    commit(
        &*db.store,
        vec![
            Change::InsertServer(a.clone()),
            Change::InsertServer(b.clone()),
            Change::InsertIntent(a_late.clone()),
            Change::InsertIntent(done),
            Change::InsertIntent(b_early.clone()),
            Change::InsertIntent(a_early.clone()),
        ],
    )
    .await;
    assert_eq!(
        db.store.pending_intents().await.unwrap(),
        vec![b_early.clone(), a_early.clone(), a_late.clone()]
    );

    commit(
        &*db.store,
        vec![Change::UpdateIntent {
            intent: resolved(&a_early, IntentState::Failed, None, false),
            expected: IntentState::Pending,
        }],
    )
    .await;
    assert_eq!(db.store.pending_intents().await.unwrap(), vec![b_early, a_late]);
    assert_eq!(
        db.store.intent_counts().await.unwrap(),
        vec![
            (IntentState::Created, 1),
            (IntentState::Failed, 1),
            (IntentState::Pending, 2)
        ]
    );
    assert_eq!(db.store.intents_in_state(IntentState::Created).await.unwrap().len(), 1);
}

pub async fn cache_writes_compare_and_swap_on_generation(db: &Db) {
    let s = bare_server("p", at(0));
    insert_server(&*db.store, &s).await;
    let info = network_info();

    commit(
        &*db.store,
        vec![Change::WriteCache {
            server_id: s.id,
            info: info.clone(),
            expected_generation: 0,
        }],
    )
    .await;
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
            .commit(vec![Change::WriteCache {
                server_id: s.id,
                info: NetworkInfo::default(),
                expected_generation: 0,
            }])
            .await,
    );
    assert_eq!(db.store.cache(s.id).await.unwrap(), stored);

    commit(
        &*db.store,
        vec![Change::WriteCache {
            server_id: s.id,
            info: NetworkInfo::default(),
            expected_generation: 1,
        }],
    )
    .await;
    assert_eq!(
        db.store.cache(s.id).await.unwrap(),
        StoredCache {
            info: NetworkInfo::default(),
            generation: 2
        }
    );

    assert!(matches!(
        db.store.cache(ServerId::new_v4()).await,
        Err(Error::NotFound(_))
    ));
    assert_conflict(
        db.store
            .commit(vec![Change::WriteCache {
                server_id: ServerId::new_v4(),
                info,
                expected_generation: 0,
            }])
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
    commit(
        &*db.store,
        vec![
            Change::InsertServer(s.clone()),
            Change::InsertServer(other.clone()),
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
            Change::AddActionEvent {
                server_id: s.id,
                request_id: "req-attach".into(),
                event: third.clone(),
            },
            Change::AddActionEvent {
                server_id: s.id,
                request_id: "req-create".into(),
                event: fourth.clone(),
            },
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
    assert_eq!(db.store.actions(ServerId::new_v4()).await.unwrap(), vec![]);

    // Events of an action that does not exist (here: of another server) are refused.
    assert_not_found(
        db.store
            .commit(vec![Change::AddActionEvent {
                server_id: other.id,
                request_id: "req-attach".into(),
                event: event("x", at(20)),
            }])
            .await,
    );
    // The same request twice is a conflict.
    assert_conflict(db.store.commit(vec![Change::StartAction(create)]).await);
}

pub async fn ghost_sightings_upsert_by_port(db: &Db) {
    let intent = IntentId::new_v4();
    let ours = ghost("g-ours", GhostOwner::Ours { intent: Some(intent) }, at(5));
    let unnamed = ghost("g-unnamed", GhostOwner::Ours { intent: None }, at(1));
    let foreign = ghost("g-foreign", GhostOwner::Foreign, at(3));
    commit(
        &*db.store,
        vec![
            Change::UpsertGhostSighting(ours.clone()),
            Change::UpsertGhostSighting(unnamed.clone()),
            Change::UpsertGhostSighting(foreign.clone()),
        ],
    )
    .await;
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

/// A store with one of everything, and the batch prefix that touches all of it.
struct Populated {
    server: Server,
    intent: PortIntent,
    vif: VifRecord,
}

async fn populate(store: &dyn Store) -> Populated {
    let server = server("proj-a", at(0));
    let intent = intent(server.id, 0, at(1));
    let vif = VifRecord {
        state: VifState::Releasing,
        ..vif(server.id, "p1", 0)
    };
    commit(
        store,
        vec![
            Change::InsertServer(server.clone()),
            Change::InsertIntent(intent.clone()),
            Change::InsertVif(vif.clone()),
            Change::StartAction(action(server.id, "req-1", at(2), vec![event("e1", at(2))])),
            Change::UpsertGhostSighting(ghost("g1", GhostOwner::Foreign, at(3))),
        ],
    )
    .await;
    Populated { server, intent, vif }
}

/// Valid changes to every table: all must vanish when the batch fails.
/// `generation` is `p.server`'s cache generation (advanced by its VIF changes).
fn valid_changes(p: &Populated, newcomer: &Server, generation: i64) -> Vec<Change> {
    vec![
        Change::InsertServer(newcomer.clone()),
        Change::WriteCache {
            server_id: newcomer.id,
            info: network_info(),
            expected_generation: 0,
        },
        Change::InsertVif(vif(newcomer.id, "p-new", 0)),
        Change::InsertIntent(intent(newcomer.id, 0, at(4))),
        Change::StartAction(action(newcomer.id, "req-new", at(4), vec![event("e", at(4))])),
        Change::UpdateServer(Server {
            name: "renamed".into(),
            ..p.server.clone()
        }),
        Change::WriteCache {
            server_id: p.server.id,
            info: network_info(),
            expected_generation: generation,
        },
        Change::UpdateVif(VifRecord {
            state: VifState::Attached,
            ..p.vif.clone()
        }),
        Change::UpdateIntent {
            intent: resolved(&p.intent, IntentState::Created, Some("p1"), false),
            expected: IntentState::Pending,
        },
        Change::AddActionEvent {
            server_id: p.server.id,
            request_id: "req-1".into(),
            event: event("e2", at(5)),
        },
        Change::UpsertGhostSighting(ghost("g2", GhostOwner::Foreign, at(5))),
        Change::DeleteGhostSighting {
            port_id: PortId::from("g1"),
        },
        Change::DeleteVif {
            server_id: p.server.id,
            port_id: p.vif.port_id.clone(),
        },
    ]
}

/// What goes wrong, the change that fails, and the error it must give.
type Failure = (&'static str, Change, fn(&Error) -> bool);

pub async fn a_failed_batch_applies_nothing(db: &Db) {
    let p = populate(&*db.store).await;
    let newcomer = bare_server("proj-a", at(9));
    let ids = [p.server.id, newcomer.id];
    let before = snapshot(&*db.store, &ids).await;

    let stale_server = Change::UpdateServer(Server {
        generation: 7,
        ..p.server.clone()
    });
    let wrong_intent_state = Change::UpdateIntent {
        intent: p.intent.clone(),
        expected: IntentState::Failed,
    };
    let stale_cache = Change::WriteCache {
        server_id: p.server.id,
        info: NetworkInfo::default(),
        expected_generation: 5,
    };
    let port_taken = Change::InsertVif(vif(newcomer.id, "p1", 3));
    let missing_vif = Change::UpdateVif(vif(p.server.id, "ghost-port", 9));
    let missing_action = Change::AddActionEvent {
        server_id: p.server.id,
        request_id: "req-none".into(),
        event: event("e", at(9)),
    };
    // The batch deletes p1's record before the failing change: take the port the
    // batch itself gave to the newcomer instead.
    let port_taken_in_batch = Change::InsertVif(vif(p.server.id, "p-new", 5));
    let not_found = |e: &Error| matches!(e, Error::NotFound(_));
    let failures: Vec<Failure> = vec![
        ("stale server generation", stale_server, Error::is_conflict),
        ("intent not in expected state", wrong_intent_state, Error::is_conflict),
        ("stale cache generation", stale_cache, Error::is_conflict),
        ("port in two servers' records", port_taken_in_batch, Error::is_conflict),
        ("missing VIF record", missing_vif, not_found),
        ("event of a missing action", missing_action, not_found),
    ];
    // Each failing change comes last, after valid changes to every table.
    let generation = db.store.cache(p.server.id).await.unwrap().generation;
    for (what, failing, expected) in failures {
        let mut batch = valid_changes(&p, &newcomer, generation);
        batch.push(failing);
        let error = db.store.commit(batch).await.expect_err(what);
        assert!(expected(&error), "{what}: unexpected error {error:?}");
        assert_eq!(
            snapshot(&*db.store, &ids).await,
            before,
            "{what}: part of the batch applied"
        );
    }

    // A failing change first (p1 is still in the server's records), then valid
    // ones: still nothing applied.
    let mut batch = vec![port_taken];
    batch.extend(valid_changes(&p, &newcomer, generation));
    assert_conflict(db.store.commit(batch).await);
    assert_eq!(snapshot(&*db.store, &ids).await, before);

    // And the same valid changes alone do apply.
    commit(&*db.store, valid_changes(&p, &newcomer, generation)).await;
    let after = snapshot(&*db.store, &ids).await;
    assert_ne!(after, before);
    assert_eq!(after.servers.len(), 2);
    assert_eq!(db.store.server(p.server.id).await.unwrap().unwrap().name, "renamed");
}

pub async fn data_survives_reopen(db: &Db) {
    let Some(url) = db.url() else {
        // `sqlite::memory:` has nothing to reopen; the other targets cover this.
        return;
    };
    let p = populate(&*db.store).await;
    let generation = db.store.cache(p.server.id).await.unwrap().generation;
    commit(
        &*db.store,
        vec![Change::WriteCache {
            server_id: p.server.id,
            info: network_info(),
            expected_generation: generation,
        }],
    )
    .await;
    let before = snapshot(&*db.store, &[p.server.id]).await;
    assert_eq!(before.servers.len(), 1, "populated");

    let reopened = netcache_store::open(url).await.unwrap();
    assert_eq!(snapshot(&*reopened, &[p.server.id]).await, before);
    // And the reopened store takes writes that continue from the stored state.
    commit(
        &*reopened,
        vec![Change::WriteCache {
            server_id: p.server.id,
            info: NetworkInfo::default(),
            expected_generation: generation + 1,
        }],
    )
    .await;
    assert_eq!(db.store.cache(p.server.id).await.unwrap().generation, generation + 2);
}

pub async fn concurrent_writers_on_one_row_one_wins(db: &Db) {
    let original = bare_server("p", at(0));
    insert_server(&*db.store, &original).await;
    // Two processes on the same database when the backend allows it.
    let other = db.reopen().await.unwrap_or_else(|| db.store.clone());
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = if i % 2 == 0 { db.store.clone() } else { other.clone() };
        let update = Server {
            name: format!("writer-{i}"),
            ..original.clone()
        };
        tasks.push(tokio::spawn(async move {
            store.commit(vec![Change::UpdateServer(update)]).await
        }));
    }
    let mut wins = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => wins += 1,
            Err(Error::Conflict(_)) => {}
            Err(other) => panic!("a writer failed other than by conflict: {other}"),
        }
    }
    assert_eq!(wins, 1);
    let stored = db.store.server(original.id).await.unwrap().unwrap();
    assert_eq!(stored.generation, 1);
    assert!(stored.name.starts_with("writer-"));
}

fn owner(node: &str, incarnation: &str) -> Owner {
    Owner {
        node: node.into(),
        incarnation: incarnation.into(),
    }
}

fn operation(
    server: ServerId,
    params: OperationParams,
    owner: &Owner,
    lease_until: chrono::DateTime<chrono::Utc>,
) -> Operation {
    Operation {
        server_id: server,
        id: uuid::Uuid::new_v4(),
        params,
        request_id: "req-op".into(),
        project_id: "p1".into(),
        user_id: "u1".into(),
        owner: owner.clone(),
        lease_until,
        step: "queued".into(),
        then_delete: None,
        created_at: at(1),
        updated_at: at(1),
    }
}

pub async fn one_operation_per_server_with_a_fenced_owner(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    let a = owner("node-a", "1");
    let b = owner("node-b", "1");
    let attach = OperationParams::Attach {
        position: 1,
        network_id: Some("net-a".into()),
        fixed_ip: Some("10.0.0.9".parse().unwrap()),
        port_id: None,
        tag: Some("nic".into()),
    };
    let op = operation(s.id, attach, &a, at(30));
    let idle = Change::RequireIdle { server_id: s.id };
    commit(&*db.store, vec![idle.clone()]).await;
    commit(&*db.store, vec![Change::InsertOperation(op.clone())]).await;
    assert_eq!(db.store.operation(s.id).await.unwrap(), Some(op.clone()));
    // A writer outside operations (heal) is fenced off a busy server.
    assert_conflict(
        db.store
            .commit(vec![
                idle.clone(),
                Change::StartAction(action(s.id, "req-h", at(2), vec![])),
            ])
            .await,
    );
    // A second operation on the server is refused by the key.
    let second = operation(s.id, OperationParams::Delete, &b, at(30));
    assert_conflict(db.store.commit(vec![Change::InsertOperation(second)]).await);
    // Only the owner's batches apply; a fenced batch applies nothing.
    let hold = |who: &Owner| Change::HoldOperation {
        server_id: s.id,
        id: op.id,
        owner: who.clone(),
        step: "step".into(),
    };
    assert_conflict(
        db.store
            .commit(vec![
                hold(&b),
                Change::StartAction(action(s.id, "req-x", at(2), vec![])),
            ])
            .await,
    );
    assert!(db.store.actions(s.id).await.unwrap().is_empty());
    commit(&*db.store, vec![hold(&a)]).await;
    // A queued delete blocks the finish; the owner replaces it by the delete.
    let queued = QueuedDelete {
        request_id: "req-del".into(),
        project_id: "p1".into(),
        user_id: "u1".into(),
    };
    let queue = Change::QueueDelete {
        server_id: s.id,
        id: op.id,
        delete: queued.clone(),
    };
    commit(&*db.store, vec![queue.clone()]).await;
    assert_conflict(db.store.commit(vec![queue]).await);
    let finish = |id, who: &Owner| Change::FinishOperation {
        server_id: s.id,
        id,
        owner: who.clone(),
    };
    assert_conflict(db.store.commit(vec![finish(op.id, &a)]).await);
    let stored = db.store.operation(s.id).await.unwrap().unwrap();
    assert_eq!(stored.then_delete, Some(queued.clone()));
    let next = stored.successor(&queued, at(3));
    commit(
        &*db.store,
        vec![Change::ReplaceOperation {
            previous: op.id,
            owner: a.clone(),
            next: next.clone(),
        }],
    )
    .await;
    assert_eq!(
        db.store.operation(s.id).await.unwrap().map(|o| o.params),
        Some(OperationParams::Delete)
    );
    assert_conflict(db.store.commit(vec![finish(next.id, &b)]).await);
    commit(&*db.store, vec![finish(next.id, &a)]).await;
    assert_eq!(db.store.operation(s.id).await.unwrap(), None);
    commit(&*db.store, vec![idle]).await;
}

pub async fn expired_leases_are_claimed_once_and_live_ones_never(db: &Db) {
    let (s1, s2) = (server("p1", at(0)), server("p1", at(1)));
    insert_server(&*db.store, &s1).await;
    insert_server(&*db.store, &s2).await;
    let (a1, a2, b) = (owner("node-a", "1"), owner("node-a", "2"), owner("node-b", "1"));
    let live = operation(s1.id, OperationParams::Build, &a1, at(100));
    let expired = Operation {
        created_at: at(2),
        ..operation(s2.id, OperationParams::Delete, &b, at(10))
    };
    commit(
        &*db.store,
        vec![
            Change::InsertOperation(live.clone()),
            Change::InsertOperation(expired.clone()),
        ],
    )
    .await;
    let ids = |ops: Vec<Operation>| ops.into_iter().map(|o| o.server_id).collect::<Vec<_>>();
    // node-b's second incarnation at t=20: only the expired one (its own node's).
    assert_eq!(
        ids(db
            .store
            .claimable_operations(&owner("node-b", "2"), at(20), 10)
            .await
            .unwrap()),
        [s2.id]
    );
    // node-a's restart takes its earlier incarnation's at once, and the expired one.
    assert_eq!(
        ids(db.store.claimable_operations(&a2, at(20), 10).await.unwrap()),
        [s1.id, s2.id]
    );
    // A live owner never sees its own.
    assert_eq!(
        ids(db.store.claimable_operations(&a1, at(5), 10).await.unwrap()),
        Vec::<ServerId>::new()
    );
    let claim = |by: &Owner| Change::ClaimOperation {
        server_id: s2.id,
        id: expired.id,
        previous_owner: b.clone(),
        owner: by.clone(),
        lease_until: at(50),
    };
    commit(&*db.store, vec![claim(&a2)]).await;
    // The second claimant lost the compare-and-swap.
    assert_conflict(db.store.commit(vec![claim(&owner("node-c", "1"))]).await);
    assert_eq!(db.store.renew_leases(&a2, at(80)).await.unwrap(), 1);
    assert_eq!(db.store.operation(s2.id).await.unwrap().unwrap().lease_until, at(80));
    assert_eq!(db.store.operations().await.unwrap().len(), 2);
}

pub async fn singleton_leases_have_one_holder(db: &Db) {
    assert!(db.store.try_lease("gc", "a", at(10), at(0)).await.unwrap());
    assert!(!db.store.try_lease("gc", "b", at(20), at(5)).await.unwrap());
    assert!(db.store.try_lease("gc", "a", at(20), at(5)).await.unwrap());
    // Expired: another may take it.
    assert!(db.store.try_lease("gc", "b", at(40), at(25)).await.unwrap());
    db.store.release_lease("gc", "a").await.unwrap();
    assert!(!db.store.try_lease("gc", "a", at(50), at(30)).await.unwrap());
    db.store.release_lease("gc", "b").await.unwrap();
    assert!(db.store.try_lease("gc", "a", at(50), at(30)).await.unwrap());
}

pub async fn vif_changes_advance_the_cache_generation(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    let read = db.store.cache(s.id).await.unwrap().generation;
    commit(&*db.store, vec![Change::InsertVif(vif(s.id, "p1", 0))]).await;
    // A cache computed before the VIF change may not be written after it.
    assert_conflict(
        db.store
            .commit(vec![Change::WriteCache {
                server_id: s.id,
                info: network_info(),
                expected_generation: read,
            }])
            .await,
    );
    assert_eq!(db.store.cache(s.id).await.unwrap().generation, read + 1);
}

pub async fn ghost_sightings_skip_recorded_ports_and_busy_servers(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    commit(&*db.store, vec![Change::InsertVif(vif(s.id, "recorded", 0))]).await;
    let sighting = |port: &str| {
        let mut g = ghost(port, GhostOwner::Foreign, at(1));
        g.device_id = s.id.to_string();
        Change::UpsertGhostSighting(g)
    };
    commit(&*db.store, vec![sighting("recorded")]).await;
    assert!(
        db.store
            .ghost_sighting(&PortId::from("recorded"))
            .await
            .unwrap()
            .is_none()
    );
    let op = operation(s.id, OperationParams::Build, &owner("n", "1"), at(10));
    commit(&*db.store, vec![Change::InsertOperation(op.clone())]).await;
    commit(&*db.store, vec![sighting("mid-create")]).await;
    assert!(
        db.store
            .ghost_sighting(&PortId::from("mid-create"))
            .await
            .unwrap()
            .is_none()
    );
    commit(
        &*db.store,
        vec![Change::FinishOperation {
            server_id: s.id,
            id: op.id,
            owner: op.owner.clone(),
        }],
    )
    .await;
    commit(&*db.store, vec![sighting("mid-create")]).await;
    assert!(
        db.store
            .ghost_sighting(&PortId::from("mid-create"))
            .await
            .unwrap()
            .is_some()
    );
}
