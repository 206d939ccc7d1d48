//! Quotas: the limits an admin sets (a project's and its users', a quota
//! class's), the counts usage is made of, and claims checked inside the batch
//! they fence.

use netcache_domain::keypair::KeyPair;
use netcache_domain::quota::{
    Cost, DEFAULT_CLASS, KeyPairClaim, QuotaLimit, QuotaSet, Refusal, Resource, ServerClaim, ServerCount,
};

use super::*;

fn limit(project: &str, user: Option<&str>, resource: Resource, hard_limit: i64) -> QuotaLimit {
    QuotaLimit {
        project_id: ProjectId::from(project),
        user_id: user.map(str::to_owned),
        resource,
        hard_limit,
    }
}

fn set(project: &str, user: Option<&str>, limits: &[(Resource, i64)]) -> Change {
    Change::SetQuotaLimits {
        project_id: ProjectId::from(project),
        user_id: user.map(str::to_owned),
        limits: limits.to_vec(),
    }
}

/// A live m1.small server (1 core, 2048 MB) of `user` in `project`.
fn small_server(project: &str, user: &str, created: i64) -> Server {
    Server {
        user_id: user.into(),
        flavor_ref: "2".into(),
        ..bare_server(project, at(created))
    }
}

fn server_claim(project: &str, user: &str, count: u32) -> Change {
    Change::RequireServerQuota(ServerClaim {
        project_id: ProjectId::from(project),
        user_id: user.into(),
        defaults: QuotaSet::default(),
        count,
        cost: Cost { vcpus: 1, ram_mb: 2048 },
    })
}

fn keypair_claim(project: &str, user: &str) -> Change {
    Change::RequireKeyPairQuota(KeyPairClaim {
        project_id: ProjectId::from(project),
        user_id: user.into(),
        defaults: QuotaSet::default(),
    })
}

pub async fn quota_limits_round_trip_per_project_and_user(db: &Db) {
    let p = ProjectId::from("p");
    assert_eq!(db.store.quota_limits(&p).await.unwrap().limits, []);
    commit(
        &*db.store,
        vec![
            set("p", None, &[(Resource::Ram, 5120), (Resource::Instances, 20)]),
            set("p", Some("alice"), &[(Resource::Ram, 2048)]),
            set("other", None, &[(Resource::Ram, 1)]),
        ],
    )
    .await;
    // A new value replaces the stored one; -1 (unlimited) is a value like any.
    commit(&*db.store, vec![set("p", None, &[(Resource::Instances, -1)])]).await;
    let want = [
        limit("p", None, Resource::Instances, -1),
        limit("p", None, Resource::Ram, 5120),
        limit("p", Some("alice"), Resource::Ram, 2048),
    ];
    assert_eq!(
        db.store.quota_limits(&p).await.unwrap().limits,
        want,
        "the project's, then by user"
    );
    if let Some(reopened) = db.reopen().await {
        assert_eq!(reopened.quota_limits(&p).await.unwrap().limits, want);
    }

    let delete = |user: Option<&str>| Change::DeleteQuotaLimits {
        project_id: p.clone(),
        user_id: user.map(str::to_owned),
    };
    commit(&*db.store, vec![delete(Some("alice"))]).await;
    assert_eq!(db.store.quota_limits(&p).await.unwrap().limits, want[..2]);
    commit(&*db.store, vec![set("p", Some("bob"), &[(Resource::Cores, 3)])]).await;
    commit(&*db.store, vec![delete(None)]).await;
    assert_eq!(
        db.store.quota_limits(&p).await.unwrap().limits,
        [],
        "a project's limits go with its users'"
    );
    commit(&*db.store, vec![delete(None)]).await;
    assert_eq!(
        db.store.quota_limits(&ProjectId::from("other")).await.unwrap().limits,
        [limit("other", None, Resource::Ram, 1)]
    );
}

fn set_class(class_name: &str, limits: &[(Resource, i64)]) -> Change {
    Change::SetQuotaClass {
        class_name: class_name.into(),
        limits: limits.to_vec(),
    }
}

pub async fn quota_classes_round_trip_and_the_default_one_comes_with_a_projects_limits(db: &Db) {
    let p = ProjectId::from("p");
    assert_eq!(db.store.quota_class(DEFAULT_CLASS).await.unwrap(), []);
    assert_eq!(db.store.quota_limits(&p).await.unwrap().default_class, []);
    commit(
        &*db.store,
        vec![
            set_class(DEFAULT_CLASS, &[(Resource::Instances, 5), (Resource::FloatingIps, 99)]),
            set_class("gold", &[(Resource::Cores, 64)]),
            set("p", None, &[(Resource::Ram, 5120)]),
            set("p", Some("alice"), &[(Resource::Ram, 2048)]),
        ],
    )
    .await;
    // A new value replaces the stored one; the others stay.
    commit(&*db.store, vec![set_class(DEFAULT_CLASS, &[(Resource::Instances, -1)])]).await;
    let class = [(Resource::FloatingIps, 99), (Resource::Instances, -1)];
    assert_eq!(db.store.quota_class(DEFAULT_CLASS).await.unwrap(), class);
    assert_eq!(db.store.quota_class("gold").await.unwrap(), [(Resource::Cores, 64)]);
    assert_eq!(db.store.quota_class("Gold").await.unwrap(), [], "a name is exact");
    let limits = [
        limit("p", None, Resource::Ram, 5120),
        limit("p", Some("alice"), Resource::Ram, 2048),
    ];
    let stored = db.store.quota_limits(&p).await.unwrap();
    assert_eq!(
        (stored.default_class.as_slice(), stored.limits.as_slice()),
        (&class[..], &limits[..])
    );
    let other = db.store.quota_limits(&ProjectId::from("other")).await.unwrap();
    assert_eq!(
        (other.default_class.as_slice(), other.limits.as_slice()),
        (&class[..], &[][..]),
        "every project's defaults"
    );
    if let Some(reopened) = db.reopen().await {
        assert_eq!(reopened.quota_class(DEFAULT_CLASS).await.unwrap(), class);
        assert_eq!(reopened.quota_limits(&p).await.unwrap(), stored);
    }
    // A project's limits go; the class's stay.
    commit(
        &*db.store,
        vec![Change::DeleteQuotaLimits {
            project_id: p.clone(),
            user_id: None,
        }],
    )
    .await;
    assert_eq!(db.store.quota_limits(&p).await.unwrap().default_class, class);
}

pub async fn a_claim_is_held_to_the_default_class_read_in_its_batch(db: &Db) {
    commit(
        &*db.store,
        vec![
            set_class(DEFAULT_CLASS, &[(Resource::Instances, 1), (Resource::KeyPairs, 0)]),
            Change::InsertServer(small_server("p", "alice", 0)),
        ],
    )
    .await;
    // The claim carries the deployment's defaults (10 instances); the class's 1 holds.
    let late = small_server("p", "alice", 1);
    match db
        .store
        .commit(vec![server_claim("p", "alice", 1), Change::InsertServer(late.clone())])
        .await
    {
        Err(Error::OverQuota(Refusal::TooManyInstances { allowed, .. })) => assert_eq!(allowed, "1"),
        other => panic!("expected the default class to refuse, got {other:?}"),
    }
    match db
        .store
        .commit(vec![
            keypair_claim("p", "alice"),
            Change::InsertKeyPair(keypair("alice", "k", at(0))),
        ])
        .await
    {
        Err(Error::OverQuota(Refusal::KeyPairs)) => {}
        other => panic!("expected the default class to refuse, got {other:?}"),
    }
    // The project's own limit is over the class's.
    commit(&*db.store, vec![set("p", None, &[(Resource::Instances, 2)])]).await;
    commit(
        &*db.store,
        vec![server_claim("p", "alice", 1), Change::InsertServer(late)],
    )
    .await;
    // Unlimited by the class, a claim is neither counted nor refused.
    let unlimited = [Resource::Instances, Resource::Cores, Resource::Ram].map(|r| (r, -1));
    commit(&*db.store, vec![set_class(DEFAULT_CLASS, &unlimited)]).await;
    commit(
        &*db.store,
        vec![
            server_claim("q", "bob", 50),
            Change::InsertServer(small_server("q", "bob", 2)),
        ],
    )
    .await;
}

pub async fn quota_usage_counts_live_servers_and_key_pairs(db: &Db) {
    let deleted = Server {
        vm_state: VmState::Deleted,
        ..small_server("p", "alice", 4)
    };
    commit(
        &*db.store,
        vec![
            Change::InsertServer(small_server("p", "alice", 1)),
            Change::InsertServer(small_server("p", "alice", 2)),
            Change::InsertServer(Server {
                flavor_ref: "3".into(),
                ..small_server("p", "bob", 3)
            }),
            Change::InsertServer(deleted),
            Change::InsertServer(small_server("other", "alice", 5)),
            Change::InsertKeyPair(keypair("alice", "a", at(0))),
            Change::InsertKeyPair(keypair("alice", "b", at(0))),
            Change::InsertKeyPair(keypair("bob", "a", at(0))),
        ],
    )
    .await;
    let count = |user: &str, flavor: &str, servers| ServerCount {
        user_id: user.into(),
        flavor_ref: flavor.into(),
        cost: None,
        servers,
    };
    assert_eq!(
        db.store.server_counts(&ProjectId::from("p")).await.unwrap(),
        [count("alice", "2", 2), count("bob", "3", 1)],
        "deleted servers and other projects' are not counted"
    );
    assert_eq!(db.store.server_counts(&ProjectId::from("none")).await.unwrap(), []);
    assert_eq!(db.store.keypair_count("alice").await.unwrap(), 2);
    assert_eq!(db.store.keypair_count("carol").await.unwrap(), 0);
}

pub async fn a_quota_claim_applies_its_batch_only_if_it_fits(db: &Db) {
    commit(
        &*db.store,
        vec![
            set("p", None, &[(Resource::Instances, 3)]),
            Change::InsertServer(small_server("p", "alice", 0)),
        ],
    )
    .await;
    let two = [small_server("p", "alice", 1), small_server("p", "alice", 2)];
    // Wherever the claim stands in its batch, it is judged after the batch's
    // servers are recorded, and those are the claim, not usage: this fills the 3.
    commit(
        &*db.store,
        vec![
            Change::InsertServer(two[0].clone()),
            server_claim("p", "alice", 2),
            Change::InsertServer(two[1].clone()),
        ],
    )
    .await;
    let late = small_server("p", "bob", 3);
    let refused = db
        .store
        .commit(vec![server_claim("p", "bob", 1), Change::InsertServer(late.clone())])
        .await;
    match refused {
        Err(Error::OverQuota(Refusal::TooManyInstances { overs, .. })) => assert_eq!(overs, "instances"),
        other => panic!("expected the quota to refuse, got {other:?}"),
    }
    assert_eq!(
        db.store.server(late.id).await.unwrap(),
        None,
        "the batch is rolled back"
    );
    // Another project's quota is its own.
    commit(&*db.store, vec![server_claim("q", "bob", 1)]).await;

    commit(&*db.store, vec![set("p", Some("alice"), &[(Resource::KeyPairs, 1)])]).await;
    let first = keypair("alice", "first", at(0));
    commit(
        &*db.store,
        vec![keypair_claim("p", "alice"), Change::InsertKeyPair(first.clone())],
    )
    .await;
    let second = KeyPair {
        name: "second".into(),
        ..first
    };
    match db
        .store
        .commit(vec![keypair_claim("p", "alice"), Change::InsertKeyPair(second)])
        .await
    {
        Err(Error::OverQuota(Refusal::KeyPairs)) => {}
        other => panic!("expected the key pair quota to refuse, got {other:?}"),
    }
    assert_eq!(db.store.keypair_count("alice").await.unwrap(), 1);
}

/// Invariant 23.
pub async fn racing_quota_claims_never_pass_the_limit(db: &Db) {
    commit(&*db.store, vec![set("p", None, &[(Resource::Instances, 3)])]).await;
    let claims = (0..8).map(|i| {
        vec![
            server_claim("p", "alice", 1),
            Change::InsertServer(small_server("p", "alice", i)),
        ]
    });
    let over_quota = |e: &Error| matches!(e, Error::OverQuota(_));
    let passed = race(db, claims, over_quota).await;
    assert_eq!(passed, 3);
    let live = db.store.server_counts(&ProjectId::from("p")).await.unwrap();
    assert_eq!(live.iter().map(|c| c.servers).sum::<i64>(), 3);
}
