//! Operations: one per server, fenced owners, leases.

use super::*;

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
    commit(&*db.store, vec![insert_op(&op, 30)]).await;
    let stored = db.store.operation(s.id).await.unwrap().unwrap();
    assert_eq!(stored, as_stored(&op, &stored));
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
    assert_conflict(db.store.commit(vec![insert_op(&second, 30)]).await);
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
    let next = stored.successor(&queued, uuid::Uuid::from_u128(3), at(3));
    commit(
        &*db.store,
        vec![Change::ReplaceOperation {
            previous: op.id,
            owner: a.clone(),
            next: next.clone(),
            lease: chrono::TimeDelta::seconds(30),
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

/// Leases are judged on the database's clock: the operation rows carry no
/// time a process chose.
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
    let before = db.store.database_now().await.unwrap();
    commit(&*db.store, vec![insert_op(&live, 3600), insert_op(&expired, -10)]).await;
    let stored = db.store.operation(s1.id).await.unwrap().unwrap();
    assert!(
        stored.lease_until >= before + chrono::TimeDelta::seconds(3600),
        "the lease runs from the database's now"
    );
    let ids = |ops: Vec<Operation>| ops.into_iter().map(|o| o.server_id).collect::<Vec<_>>();
    // node-b's second incarnation: only the expired one (its own node's).
    assert_eq!(
        ids(db.store.claimable_operations(&owner("node-b", "2"), 10).await.unwrap()),
        [s2.id]
    );
    // node-a's restart takes its earlier incarnation's at once, and the expired one.
    assert_eq!(
        ids(db.store.claimable_operations(&a2, 10).await.unwrap()),
        [s1.id, s2.id]
    );
    // A live owner never sees its own.
    assert_eq!(ids(db.store.claimable_operations(&a1, 10).await.unwrap()), [s2.id]);
    let claim = |by: &Owner| Change::ClaimOperation {
        server_id: s2.id,
        id: expired.id,
        previous_owner: b.clone(),
        owner: by.clone(),
        lease: chrono::TimeDelta::seconds(60),
    };
    commit(&*db.store, vec![claim(&a2)]).await;
    // The second claimant lost the compare-and-swap.
    assert_conflict(db.store.commit(vec![claim(&owner("node-c", "1"))]).await);
    // Only the servers a live task works on are renewed.
    let s1_lease = db.store.operation(s1.id).await.unwrap().unwrap().lease_until;
    commit(
        &*db.store,
        vec![Change::ClaimOperation {
            server_id: s1.id,
            id: live.id,
            previous_owner: a1.clone(),
            owner: a2.clone(),
            lease: chrono::TimeDelta::seconds(3600),
        }],
    )
    .await;
    let s1_lease = db
        .store
        .operation(s1.id)
        .await
        .unwrap()
        .unwrap()
        .lease_until
        .max(s1_lease);
    assert_eq!(
        db.store
            .renew_leases(&a2, &[s2.id], chrono::TimeDelta::seconds(7200))
            .await
            .unwrap(),
        1
    );
    assert!(db.store.operation(s2.id).await.unwrap().unwrap().lease_until > s1_lease);
    assert!(db.store.operation(s1.id).await.unwrap().unwrap().lease_until <= s1_lease);
    assert_eq!(db.store.operations().await.unwrap().len(), 2);
}

/// A claim re-checks the lease in its own statement: an owner that renewed
/// between the claimant's read and its claim keeps its operation.
/// Invariant 9.
pub async fn a_renewed_lease_is_never_claimed(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    let (a, b) = (owner("node-a", "1"), owner("node-b", "1"));
    let op = operation(s.id, OperationParams::Build, &a, at(0));
    commit(&*db.store, vec![insert_op(&op, -1)]).await;
    assert_eq!(
        db.store.claimable_operations(&b, 10).await.unwrap().len(),
        1,
        "expired when read"
    );
    let renewed = db
        .store
        .renew_leases(&a, &[s.id], chrono::TimeDelta::seconds(30))
        .await
        .unwrap();
    assert_eq!(renewed, 1);
    let claim = Change::ClaimOperation {
        server_id: s.id,
        id: op.id,
        previous_owner: a.clone(),
        owner: b.clone(),
        lease: chrono::TimeDelta::seconds(30),
    };
    assert_conflict(db.store.commit(vec![claim]).await);
    assert_eq!(db.store.operation(s.id).await.unwrap().unwrap().owner, a);
}

/// A failed attempt is recorded on the row by its owner only.
pub async fn failed_attempts_are_recorded_by_the_owner(db: &Db) {
    let s = server("p1", at(0));
    insert_server(&*db.store, &s).await;
    let (a, b) = (owner("node-a", "1"), owner("node-b", "1"));
    let op = operation(s.id, OperationParams::Build, &a, at(0));
    commit(&*db.store, vec![insert_op(&op, 30)]).await;
    let failure = |who: &Owner, error: &str| Change::RecordOperationFailure {
        server_id: s.id,
        id: op.id,
        owner: who.clone(),
        error: error.into(),
    };
    commit(&*db.store, vec![failure(&a, "Neutron is unreachable")]).await;
    commit(&*db.store, vec![failure(&a, "the database is down")]).await;
    assert_conflict(db.store.commit(vec![failure(&b, "not mine")]).await);
    let stored = db.store.operation(s.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.attempts, stored.last_error.as_deref()),
        (2, Some("the database is down"))
    );
}

const LONG: std::time::Duration = std::time::Duration::from_secs(600);

pub async fn singleton_leases_have_one_holder(db: &Db) {
    assert!(db.store.try_lease("gc", "a", LONG).await.unwrap());
    assert!(!db.store.try_lease("gc", "b", LONG).await.unwrap());
    // Ours already: extended.
    assert!(db.store.try_lease("gc", "a", LONG).await.unwrap());
    // Only the holder releases it.
    db.store.release_lease("gc", "b").await.unwrap();
    assert!(!db.store.try_lease("gc", "b", LONG).await.unwrap());
    db.store.release_lease("gc", "a").await.unwrap();
    assert!(db.store.try_lease("gc", "b", LONG).await.unwrap());
    assert!(!db.store.try_lease("gc", "a", LONG).await.unwrap());
}

/// No process's clock is asked: a lease of no length has run out on the
/// database's clock by the next statement, a long one has not.
pub async fn singleton_leases_expire_on_the_databases_clock(db: &Db) {
    assert!(db.store.try_lease("gc", "a", std::time::Duration::ZERO).await.unwrap());
    // Expired but taken by nobody: still a's to renew.
    assert!(
        db.store
            .renew_lease("gc", "a", std::time::Duration::ZERO)
            .await
            .unwrap()
    );
    assert!(db.store.try_lease("gc", "b", LONG).await.unwrap());
    assert!(
        !db.store.renew_lease("gc", "a", LONG).await.unwrap(),
        "taken: a's renewal fails"
    );
    assert!(db.store.renew_lease("gc", "b", LONG).await.unwrap());
    assert!(
        !db.store.try_lease("gc", "a", LONG).await.unwrap(),
        "renewed: not expired"
    );
    // A released lease is no one's to renew.
    db.store.release_lease("gc", "b").await.unwrap();
    assert!(!db.store.renew_lease("gc", "b", LONG).await.unwrap());
}

pub async fn a_nodes_next_incarnation_releases_the_leases_of_its_earlier_ones(db: &Db) {
    let (earlier, next) = (owner("node-a", "1"), owner("node-a", "2"));
    assert!(db.store.try_lease("gc", &earlier.label(), LONG).await.unwrap());
    // Another node whose name starts with this one's, and the live incarnation.
    assert!(
        db.store
            .try_lease("other", &owner("node-ab", "1").label(), LONG)
            .await
            .unwrap()
    );
    assert!(db.store.try_lease("mine", &next.label(), LONG).await.unwrap());
    assert_eq!(db.store.release_node_leases(&next).await.unwrap(), 1);
    assert!(
        db.store
            .try_lease("gc", &owner("node-c", "1").label(), LONG)
            .await
            .unwrap()
    );
    assert!(!db.store.try_lease("other", "someone", LONG).await.unwrap());
    assert!(!db.store.try_lease("mine", "someone", LONG).await.unwrap());
}
