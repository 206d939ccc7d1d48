//! Batches: all or nothing, durability, concurrent writers.

use super::*;

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
        write_cache(newcomer.id, network_info(), 0),
        Change::InsertVif(vif(newcomer.id, "p-new", 0)),
        Change::InsertIntent(intent(newcomer.id, 0, at(4))),
        Change::StartAction(action(newcomer.id, "req-new", at(4), vec![event("e", at(4))])),
        Change::UpdateServer(Server {
            name: "renamed".into(),
            ..p.server.clone()
        }),
        write_cache(p.server.id, network_info(), generation),
        Change::UpdateVif(VifRecord {
            state: VifState::Attached,
            ..p.vif.clone()
        }),
        resolve_pending(resolved(&p.intent, IntentState::Created, Some("p1"), false)),
        add_event(p.server.id, "req-1", event("e2", at(5))),
        Change::UpsertGhostSighting(ghost("g2", GhostOwner::Foreign, at(5))),
        Change::DeleteGhostSighting {
            port_id: PortId::from("g1"),
        },
        delete_vif(p.server.id, p.vif.port_id.clone()),
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
    let stale_cache = write_cache(p.server.id, NetworkInfo::default(), 5);
    let port_taken = Change::InsertVif(vif(newcomer.id, "p1", 3));
    let missing_vif = Change::UpdateVif(vif(p.server.id, "ghost-port", 9));
    let missing_action = add_event(p.server.id, "req-none", event("e", at(9)));
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
    commit(&*db.store, vec![write_cache(p.server.id, network_info(), generation)]).await;
    let before = snapshot(&*db.store, &[p.server.id]).await;
    assert_eq!(before.servers.len(), 1, "populated");

    let reopened = netcache_store::open(url).await.unwrap();
    assert_eq!(snapshot(&*reopened, &[p.server.id]).await, before);
    // And the reopened store takes writes that continue from the stored state.
    commit(
        &*reopened,
        vec![write_cache(p.server.id, NetworkInfo::default(), generation + 1)],
    )
    .await;
    assert_eq!(db.store.cache(p.server.id).await.unwrap().generation, generation + 2);
}

/// Invariant 7.
pub async fn concurrent_writers_on_one_row_one_wins(db: &Db) {
    let original = bare_server("p", at(0));
    insert_server(&*db.store, &original).await;
    let updates = (0..8).map(|i| {
        vec![Change::UpdateServer(Server {
            name: format!("writer-{i}"),
            ..original.clone()
        })]
    });
    let wins = race(db, updates, Error::is_conflict).await;
    assert_eq!(wins, 1);
    let stored = db.store.server(original.id).await.unwrap().unwrap();
    assert_eq!(stored.generation, 1);
    assert!(stored.name.starts_with("writer-"));
}
