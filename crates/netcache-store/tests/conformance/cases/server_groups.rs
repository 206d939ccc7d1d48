//! Server groups: their rows, their live members in join order, the
//! compare-and-swap on a group's generation that every placement carries, and
//! the quota claim of a new group.

use netcache_domain::HostName;
use netcache_domain::quota::{QuotaSet, Resource, ServerGroupClaim};
use netcache_domain::server_group::{GroupMember, GroupPolicy, ServerGroup};
use uuid::Uuid;

use super::*;

fn group(project: &str, user: &str, created: i64, policy: GroupPolicy) -> ServerGroup {
    ServerGroup {
        id: Uuid::new_v4(),
        name: format!("g{created}"),
        project_id: ProjectId::from(project),
        user_id: user.into(),
        policy,
        max_server_per_host: None,
        created_at: at(created),
        generation: 0,
    }
}

/// The batch that puts `server` (already placed on its host) in `group`.
fn join(group: &ServerGroup, generation: i64, server: &Server) -> Vec<Change> {
    vec![
        Change::AdvanceServerGroup {
            id: group.id,
            expected_generation: generation,
        },
        Change::InsertServer(server.clone()),
        Change::InsertGroupMember {
            group_id: group.id,
            server_id: server.id,
        },
    ]
}

fn on(host: &str, project: &str, created: i64) -> Server {
    Server {
        host: Some(HostName::from(host)),
        ..bare_server(project, at(created))
    }
}

pub async fn server_groups_round_trip_per_project_and_are_deleted_with_their_members(db: &Db) {
    let mut first = group("p", "alice", 1, GroupPolicy::AntiAffinity);
    first.max_server_per_host = Some(3);
    let second = group("p", "bob", 2, GroupPolicy::SoftAffinity);
    let elsewhere = group("q", "carol", 0, GroupPolicy::Affinity);
    for g in [&second, &first, &elsewhere] {
        commit(&*db.store, vec![Change::InsertServerGroup(g.clone())]).await;
    }
    assert_eq!(db.store.server_group(first.id).await.unwrap(), Some(first.clone()));
    let p = ProjectId::from("p");
    assert_eq!(
        db.store.server_groups(Some(&p)).await.unwrap(),
        [first.clone(), second.clone()]
    );
    assert_eq!(
        db.store.server_groups(None).await.unwrap(),
        [elsewhere.clone(), first.clone(), second.clone()],
        "oldest first"
    );
    assert_eq!(db.store.server_group_count(&p, "alice").await.unwrap(), (2, 1));
    commit(&*db.store, join(&first, 0, &on("h1", "p", 3))).await;
    commit(&*db.store, vec![Change::DeleteServerGroup { id: first.id }]).await;
    assert_eq!(db.store.server_group(first.id).await.unwrap(), None);
    assert_not_found(db.store.commit(vec![Change::DeleteServerGroup { id: first.id }]).await);
    if let Some(reopened) = db.reopen().await {
        assert_eq!(reopened.server_groups(Some(&p)).await.unwrap(), [second]);
    }
}

pub async fn group_members_are_live_servers_in_join_order(db: &Db) {
    let g = group("p", "alice", 1, GroupPolicy::Affinity);
    commit(&*db.store, vec![Change::InsertServerGroup(g.clone())]).await;
    let (a, b) = (on("h2", "p", 2), on("h1", "p", 3));
    commit(&*db.store, join(&g, 0, &a)).await;
    commit(&*db.store, join(&g, 1, &b)).await;
    let member = |s: &Server| GroupMember {
        server_id: s.id,
        user_id: s.user_id.clone(),
        host: s.host.clone(),
    };
    assert_eq!(db.store.group_members(g.id).await.unwrap(), [member(&a), member(&b)]);
    assert_eq!(db.store.server_group(g.id).await.unwrap().unwrap().generation, 2);
    assert_eq!(db.store.groups_of_server(b.id).await.unwrap(), [g.id]);
    let by_group = db.store.members_of_groups(Some(&ProjectId::from("p"))).await.unwrap();
    assert_eq!(by_group[&g.id], [member(&a), member(&b)]);
    assert!(
        db.store
            .members_of_groups(Some(&ProjectId::from("q")))
            .await
            .unwrap()
            .is_empty()
    );
    // A deleted server is no member; once purged its membership goes with it.
    let deleted = Server {
        vm_state: VmState::Deleted,
        deleted_at: Some(at(4)),
        ..a.clone()
    };
    commit(&*db.store, vec![Change::UpdateServer(deleted)]).await;
    assert_eq!(db.store.group_members(g.id).await.unwrap(), [member(&b)]);
    let purged = db.store.purge_servers(&[a.id]).await.unwrap();
    assert_eq!(purged.servers, 1);
    assert_eq!(db.store.groups_of_server(a.id).await.unwrap(), Vec::<Uuid>::new());
}

pub async fn a_group_placement_is_recorded_only_at_the_generation_read(db: &Db) {
    let g = group("p", "alice", 1, GroupPolicy::AntiAffinity);
    commit(&*db.store, vec![Change::InsertServerGroup(g.clone())]).await;
    // Two boots read generation 0 and both chose h1: one is recorded.
    commit(&*db.store, join(&g, 0, &on("h1", "p", 2))).await;
    let loser = on("h1", "p", 3);
    match db.store.commit(join(&g, 0, &loser)).await {
        Err(e @ Error::GroupMoved(_)) => assert!(e.is_conflict()),
        other => panic!("expected the group's swap to fail, got {other:?}"),
    }
    assert_eq!(
        db.store.server(loser.id).await.unwrap(),
        None,
        "the whole batch rolled back"
    );
    assert_eq!(db.store.group_members(g.id).await.unwrap().len(), 1);
    let gone = Change::AdvanceServerGroup {
        id: Uuid::new_v4(),
        expected_generation: 0,
    };
    assert_not_found(db.store.commit(vec![gone]).await);
}

/// Invariant 27.
pub async fn racing_placements_in_one_group_one_wins(db: &Db) {
    let g = group("p", "alice", 1, GroupPolicy::AntiAffinity);
    commit(&*db.store, vec![Change::InsertServerGroup(g.clone())]).await;
    let placements = (0..6).map(|i| join(&g, 0, &on("h1", "p", i + 2)));
    let moved = |e: &Error| matches!(e, Error::GroupMoved(_));
    let won = race(db, placements, moved).await;
    assert_eq!(won, 1);
    assert_eq!(db.store.group_members(g.id).await.unwrap().len(), 1);
}

pub async fn a_server_group_claim_applies_only_if_it_fits(db: &Db) {
    let claim = || {
        Change::RequireServerGroupQuota(ServerGroupClaim {
            project_id: ProjectId::from("p"),
            user_id: "alice".into(),
            defaults: QuotaSet::default(),
        })
    };
    commit(
        &*db.store,
        vec![Change::SetQuotaLimits {
            project_id: ProjectId::from("p"),
            user_id: None,
            limits: vec![(Resource::ServerGroups, 1)],
        }],
    )
    .await;
    let first = group("p", "alice", 1, GroupPolicy::Affinity);
    commit(&*db.store, vec![claim(), Change::InsertServerGroup(first)]).await;
    let second = group("p", "alice", 2, GroupPolicy::Affinity);
    match db
        .store
        .commit(vec![claim(), Change::InsertServerGroup(second.clone())])
        .await
    {
        Err(Error::OverQuota(_)) => {}
        other => panic!("expected the quota's refusal, got {other:?}"),
    }
    assert_eq!(db.store.server_group(second.id).await.unwrap(), None);
}
