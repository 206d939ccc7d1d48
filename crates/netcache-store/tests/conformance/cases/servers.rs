//! Deployment id and server rows.

use super::*;

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
    insert_servers_with(&*db.store, &[&full, &bare, &no_networks], vec![]).await;

    assert_eq!(db.store.server(full.id).await.unwrap(), Some(full.clone()));
    assert_eq!(db.store.server(bare.id).await.unwrap(), Some(bare.clone()));
    assert_eq!(
        db.store.server(no_networks.id).await.unwrap(),
        Some(no_networks.clone())
    );
    assert_eq!(db.store.server(ServerId(uuid::Uuid::new_v4())).await.unwrap(), None);
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

/// Commits `update` and reads it back: as written, now at `generation`.
async fn update_server(store: &dyn Store, update: &Server, generation: i64) -> Server {
    commit(store, vec![Change::UpdateServer(update.clone())]).await;
    let stored = store.server(update.id).await.unwrap().unwrap();
    assert_eq!(
        stored,
        Server {
            generation,
            ..update.clone()
        }
    );
    stored
}

pub async fn update_server_compares_and_swaps_the_generation(db: &Db) {
    let original = bare_server("p", at(0));
    insert_server(&*db.store, &original).await;

    let mut active = server("p", at(0));
    active.id = original.id;
    active.vm_state = VmState::Active;
    active.generation = 0;
    let stored = update_server(&*db.store, &active, 1).await;

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

/// Migration 0003's columns: a server's access addresses are written and cleared
/// by the compare-and-swap update like its other fields, and read back in their
/// canonical form (`0:0::babe:220.12.22.2` is `::babe:dc0c:1602`, as Nova shows it).
pub async fn access_ips_are_set_and_cleared_with_the_row(db: &Db) {
    let original = bare_server("p", at(0));
    insert_server(&*db.store, &original).await;
    assert_eq!(db.store.server(original.id).await.unwrap().unwrap().access_ip_v4, None);

    let with_ips = Server {
        access_ip_v4: Some("1.1.1.1".parse().unwrap()),
        access_ip_v6: Some("0000:0000:0000:0000:0000:babe:220.12.22.2".parse().unwrap()),
        ..original.clone()
    };
    let stored = update_server(&*db.store, &with_ips, 1).await;
    assert_eq!(
        stored.access_ip_v6.map(|ip| ip.to_string()).as_deref(),
        Some("::babe:dc0c:1602")
    );

    let cleared = Server {
        access_ip_v4: None,
        access_ip_v6: None,
        ..stored
    };
    update_server(&*db.store, &cleared, 2).await;
}

pub async fn watched_servers_are_the_live_and_the_recently_deleted(db: &Db) {
    let live = bare_server("p", at(0));
    let deleted = |created: i64, gone: i64| Server {
        vm_state: VmState::Deleted,
        deleted_at: Some(at(gone)),
        ..bare_server("p", at(created))
    };
    let (long_gone, at_the_edge, recent) = (deleted(1, 10), deleted(2, 50), deleted(3, 100));
    // Recently deleted servers whose creates ended each way; `recent` made none.
    let ended = |created: i64, state: IntentState| {
        let server = deleted(created, 100);
        let intent = resolved(&intent(server.id, 0, at(created)), state, None, false);
        (server, intent)
    };
    let settled = [ended(4, IntentState::Created), ended(5, IntentState::Failed)];
    let unsettled = [ended(6, IntentState::Pending), ended(7, IntentState::Abandoned)];
    let mut changes: Vec<Change> = [&live, &long_gone, &at_the_edge, &recent]
        .into_iter()
        .map(|s| Change::InsertServer(s.clone()))
        .collect();
    for (server, intent) in settled.iter().chain(&unsettled) {
        changes.push(Change::InsertServer(server.clone()));
        changes.push(Change::InsertIntent(intent.clone()));
    }
    // The long-gone server's unsettled create is outside the watch all the same.
    changes.push(Change::InsertIntent(intent(long_gone.id, 0, at(1))));
    commit(&*db.store, changes).await;
    let ids = |servers: &[WatchedServer]| servers.iter().map(|s| s.id).collect::<Vec<ServerId>>();
    let every = DeletedWatch {
        since: at(50),
        every: true,
    };
    let whole = (ServerId(uuid::Uuid::nil()), ServerId(uuid::Uuid::max()));
    let all = db.store.watched_servers(every, whole, None, 10).await.unwrap();
    let mut want = vec![live.id, recent.id];
    want.extend(settled.iter().chain(&unsettled).map(|(s, _)| s.id));
    want.sort();
    assert_eq!(ids(&all), want, "deleted after the given time only, in id order");
    let row = |id: ServerId| all.iter().find(|s| s.id == id).unwrap().clone();
    assert_eq!(
        [row(live.id), row(recent.id)],
        [WatchedServer::from(&live), WatchedServer::from(&recent)],
        "the columns heal reads, a deleted server's state among them"
    );
    let unsettled_only = DeletedWatch { every: false, ..every };
    let mut want_unsettled = vec![live.id, unsettled[0].0.id, unsettled[1].0.id];
    want_unsettled.sort();
    // The ids of `limit` watched servers in `range`, after `after`.
    let page =
        async |watch, range, after, limit| ids(&db.store.watched_servers(watch, range, after, limit).await.unwrap());
    assert_eq!(
        page(unsettled_only, whole, None, 10).await,
        want_unsettled,
        "without `every`, a deleted server only while a create of it is pending or abandoned"
    );
    // A keyset page at a time.
    let first = page(every, whole, None, 1).await;
    assert_eq!(first, want[..1]);
    let next = page(every, whole, Some(first[0]), 1).await;
    assert_eq!(next, want[1..2]);
    let rest = page(every, whole, Some(next[0]), 10).await;
    assert_eq!(rest, want[2..]);
    let after_last = page(every, whole, rest.last().copied(), 1).await;
    assert!(after_last.is_empty(), "{after_last:?}");
    let unsettled_after = |after: ServerId| want_unsettled.iter().copied().find(|id| *id > after);
    assert_eq!(
        page(unsettled_only, whole, Some(first[0]), 1).await,
        unsettled_after(first[0]).into_iter().collect::<Vec<_>>(),
        "the same pages without `every`"
    );
    // A range of ids (a heal shard's), both ends included, paged the same way.
    let (low, high) = (want[1], want[want.len() - 2]);
    assert_eq!(page(every, (low, high), None, 10).await, want[1..want.len() - 1]);
    assert_eq!(page(every, (low, high), Some(low), 10).await, want[2..want.len() - 1]);
}
