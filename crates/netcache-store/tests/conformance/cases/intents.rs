//! Port intents.

use super::*;

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
    assert_eq!(db.store.intent(IntentId(uuid::Uuid::new_v4())).await.unwrap(), None);
    let oldest_first: Vec<_> = all.iter().rev().cloned().collect();
    assert_eq!(db.store.intents(s.id).await.unwrap(), oldest_first);
    assert_eq!(db.store.intents(ServerId(uuid::Uuid::new_v4())).await.unwrap(), vec![]);

    // The same id twice is a conflict.
    assert_conflict(db.store.commit(vec![Change::InsertIntent(all[4].clone())]).await);
}

pub async fn update_intent_requires_the_expected_state(db: &Db) {
    let s = bare_server("p", at(0));
    let pending = intent(s.id, 0, at(1));
    insert_servers_with(&*db.store, &[&s], vec![Change::InsertIntent(pending.clone())]).await;

    let created = resolved(&pending, IntentState::Created, Some("port-1"), true);
    commit(&*db.store, vec![resolve_pending(created.clone())]).await;
    assert_eq!(db.store.intent(pending.id).await.unwrap(), Some(created.clone()));

    // A second resolver that also saw it pending must not overwrite the outcome.
    let abandoned = resolved(&pending, IntentState::Abandoned, None, false);
    assert_conflict(db.store.commit(vec![resolve_pending(abandoned)]).await);
    assert_eq!(db.store.intent(pending.id).await.unwrap(), Some(created));

    // An intent that does not exist is in no state.
    assert_conflict(db.store.commit(vec![resolve_pending(intent(s.id, 1, at(2)))]).await);
}

pub async fn pending_intents_span_servers_oldest_first(db: &Db) {
    let [a, b] = two_servers();
    let a_late = intent(a.id, 1, at(30));
    let b_early = intent(b.id, 0, at(10));
    let a_early = intent(a.id, 0, at(20));
    let done = resolved(&intent(b.id, 1, at(5)), IntentState::Created, Some("x"), false);
    insert_servers_with(
        &*db.store,
        &[&a, &b],
        vec![
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

    let failed = resolved(&a_early, IntentState::Failed, None, false);
    commit(&*db.store, vec![resolve_pending(failed)]).await;
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
