//! Key pairs: per user, by name; only the public half is stored.

use netcache_domain::keypair::{KeyPair, KeyType};
use netcache_store::StoredKeyPair;

use super::*;

fn keypairs_of(stored: &[StoredKeyPair]) -> Vec<&KeyPair> {
    stored.iter().map(|s| &s.keypair).collect()
}

pub async fn keypairs_round_trip_per_user_by_name(db: &Db) {
    let b = keypair("alice", "b-key", at(1));
    let a = KeyPair {
        key_type: KeyType::X509,
        ..keypair("alice", "a key_1-2", at(2))
    };
    let bobs = keypair("bob", "b-key", at(3));
    commit(&*db.store, vec![Change::InsertKeyPair(b.clone())]).await;
    commit(
        &*db.store,
        vec![Change::InsertKeyPair(a.clone()), Change::InsertKeyPair(bobs.clone())],
    )
    .await;

    let alices = db.store.keypairs("alice").await.unwrap();
    assert_eq!(
        keypairs_of(&alices),
        [&a, &b],
        "by name, every field kept (the type too)"
    );
    assert_eq!(keypairs_of(&db.store.keypairs("bob").await.unwrap()), [&bobs]);
    assert_eq!(db.store.keypairs("carol").await.unwrap(), []);

    let shown = db.store.keypair("alice", "b-key").await.unwrap().unwrap();
    assert_eq!(shown.keypair, b);
    assert_eq!(shown, alices[1], "one id per key pair, the same through every read");
    assert_ne!(alices[0].id, alices[1].id);
    assert!(alices.iter().all(|k| k.id > 0), "{alices:?}");
    assert_eq!(db.store.keypair("bob", "a key_1-2").await.unwrap(), None);
    assert_eq!(
        db.store.keypair("alice", "B-KEY").await.unwrap(),
        None,
        "names are exact"
    );

    if let Some(reopened) = db.reopen().await {
        assert_eq!(reopened.keypairs("alice").await.unwrap(), alices);
    }
}

pub async fn a_keypair_name_is_unique_per_user(db: &Db) {
    let first = keypair("alice", "k", at(1));
    commit(&*db.store, vec![Change::InsertKeyPair(first.clone())]).await;
    let again = KeyPair {
        public_key: "ssh-rsa AAAA other".into(),
        ..keypair("alice", "k", at(2))
    };
    let s = bare_server("p", at(0));
    // The whole batch fails: the server before the duplicate is not kept either.
    assert_conflict(
        db.store
            .commit(vec![Change::InsertServer(s.clone()), Change::InsertKeyPair(again)])
            .await,
    );
    assert_eq!(db.store.server(s.id).await.unwrap(), None);
    assert_eq!(keypairs_of(&db.store.keypairs("alice").await.unwrap()), [&first]);
}

pub async fn deleting_a_keypair_is_per_user_and_missing_ones_are_not_found(db: &Db) {
    let alices = keypair("alice", "k", at(1));
    let bobs = keypair("bob", "k", at(2));
    commit(
        &*db.store,
        vec![
            Change::InsertKeyPair(alices.clone()),
            Change::InsertKeyPair(bobs.clone()),
        ],
    )
    .await;
    let delete = |user: &str, name: &str| {
        vec![Change::DeleteKeyPair {
            user_id: user.into(),
            name: name.into(),
        }]
    };
    assert_not_found(db.store.commit(delete("carol", "k")).await);
    assert_not_found(db.store.commit(delete("alice", "other")).await);

    commit(&*db.store, delete("alice", "k")).await;
    assert_eq!(db.store.keypairs("alice").await.unwrap(), []);
    assert_eq!(keypairs_of(&db.store.keypairs("bob").await.unwrap()), [&bobs]);
    assert_not_found(db.store.commit(delete("alice", "k")).await);

    // The name is free again, under a new id.
    let old_id = db.store.keypair("bob", "k").await.unwrap().unwrap().id;
    commit(&*db.store, vec![Change::InsertKeyPair(alices.clone())]).await;
    let again = db.store.keypair("alice", "k").await.unwrap().unwrap();
    assert_eq!(again.keypair, alices);
    assert_ne!(again.id, old_id);
}
