//! Retention: deleted servers purged with their rows.

use netcache_domain::retention::Purged;

use super::*;

/// A server deleted at `gone`, with two intents and an action of two events.
fn deleted_with_history(gone: i64) -> (Server, Vec<Change>) {
    let s = Server {
        vm_state: VmState::Deleted,
        deleted_at: Some(at(gone)),
        ..bare_server("p", at(gone - 5))
    };
    let changes = vec![
        Change::InsertServer(s.clone()),
        Change::InsertIntent(intent(s.id, 0, at(gone - 4))),
        Change::InsertIntent(intent(s.id, 1, at(gone - 3))),
        Change::StartAction(action(
            s.id,
            "req-create",
            at(gone - 5),
            vec![event("build", at(gone - 5)), event("spawn", at(gone - 4))],
        )),
    ];
    (s, changes)
}

/// Invariant 24.
pub async fn purge_removes_old_deleted_servers_with_their_rows_and_nothing_else(db: &Db) {
    let live = bare_server("p", at(0));
    let (old, mut changes) = deleted_with_history(10);
    let (older, more) = deleted_with_history(8);
    changes.extend(more);
    let (recent, more) = deleted_with_history(100);
    changes.extend(more);
    // Deleted long ago, but a VIF record (a leak the audit reports) or an
    // operation still names it: kept.
    let (leaking, more) = deleted_with_history(9);
    changes.extend(more);
    changes.push(Change::InsertVif(vif(leaking.id, "leaked", 0)));
    let (busy, more) = deleted_with_history(7);
    changes.extend(more);
    changes.push(Change::InsertServer(live.clone()));
    changes.push(Change::InsertIntent(intent(live.id, 0, at(1))));
    changes.push(Change::StartAction(action(
        live.id,
        "req-live",
        at(1),
        vec![event("build", at(1))],
    )));
    commit(&*db.store, changes).await;
    let op = operation(busy.id, OperationParams::Delete, &owner("node-a", "1"), at(30));
    commit(&*db.store, vec![insert_op(&op, 30)]).await;

    let each = Purged {
        servers: 1,
        intents: 2,
        actions: 1,
        events: 2,
    };
    let two = each.plus(each);
    assert_eq!(
        db.store.count_purgeable(at(50)).await.unwrap(),
        two,
        "the dry run's count"
    );
    assert_eq!(
        db.store.purgeable_servers(at(50), 10).await.unwrap(),
        [older.id, old.id]
    );
    assert_eq!(db.store.purgeable_servers(at(50), 1).await.unwrap(), [older.id]);
    assert_eq!(
        db.store.purge_servers(&[older.id, old.id, live.id]).await.unwrap(),
        two,
        "a live server named by mistake is not purged"
    );

    for gone in [old.id, older.id] {
        assert_eq!(db.store.server(gone).await.unwrap(), None);
        assert!(db.store.intents(gone).await.unwrap().is_empty());
        assert!(db.store.actions(gone).await.unwrap().is_empty());
    }
    for kept in [live.id, recent.id, leaking.id, busy.id] {
        assert!(db.store.server(kept).await.unwrap().is_some());
        assert!(!db.store.actions(kept).await.unwrap().is_empty());
        assert!(!db.store.intents(kept).await.unwrap().is_empty());
    }
    assert_eq!(db.store.count_purgeable(at(50)).await.unwrap(), Purged::default());
    assert!(db.store.purgeable_servers(at(50), 10).await.unwrap().is_empty());
    assert_eq!(db.store.purge_servers(&[]).await.unwrap(), Purged::default());
}
