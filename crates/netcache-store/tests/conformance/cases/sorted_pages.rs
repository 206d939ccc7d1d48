//! Server list pages in the orders of Nova's sort keys (issue 33 defect 7).

use std::cmp::Ordering;

use netcache_domain::HostName;
use netcache_domain::server::TaskState;
use netcache_store::{Sort, SortKey};

use super::*;

/// A key's value as the pages order it: `None` before any value, text byte by byte.
fn compare(key: SortKey, a: &Server, b: &Server) -> Ordering {
    let text = |s: &Server| -> Option<String> {
        match key {
            SortKey::Name => Some(s.name.clone()),
            SortKey::VmState => Some(s.vm_state.as_str().to_owned()),
            SortKey::TaskState => s.task_state.map(|t| t.as_str().to_owned()),
            SortKey::Host => s.host.as_ref().map(|h| h.as_str().to_owned()),
            SortKey::ImageRef => Some(s.image_ref.clone()),
            SortKey::FlavorRef => Some(s.flavor_ref.clone()),
            SortKey::AvailabilityZone => Some(s.availability_zone.clone()),
            SortKey::ProjectId => Some(s.project_id.as_str().to_owned()),
            SortKey::UserId => Some(s.user_id.clone()),
            SortKey::Id => Some(s.id.to_string()),
            _ => None,
        }
    };
    match key {
        SortKey::CreatedAt => a.created_at.cmp(&b.created_at),
        SortKey::UpdatedAt => a.updated_at.cmp(&b.updated_at),
        SortKey::LaunchedAt => a.launched_at.cmp(&b.launched_at),
        SortKey::DeletedAt => a.deleted_at.cmp(&b.deleted_at),
        SortKey::PowerState => a.power_state().cmp(&b.power_state()),
        _ => text(a).cmp(&text(b)),
    }
}

fn expected(servers: &[Server], order: &[Sort]) -> Vec<ServerId> {
    let mut keys = order.to_vec();
    if !keys.iter().any(|s| s.key == SortKey::Id) {
        keys.push(Sort {
            key: SortKey::Id,
            descending: order[0].descending,
        });
    }
    let mut sorted = servers.to_vec();
    sorted.sort_by(|a, b| {
        keys.iter()
            .map(|s| {
                let o = compare(s.key, a, b);
                if s.descending { o.reverse() } else { o }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    sorted.into_iter().map(|s| s.id).collect()
}

/// Issue 33 defect 7: pages in any order (mixed directions, NULLs, text in
/// mixed case, twins in time) are keyset pages: each reads at most `limit`
/// rows, and page after page gives every server once, in the order a sort of
/// them all gives.
pub async fn sorted_pages_are_keyset_pages_in_the_orders_of_novas_sort_keys(db: &Db) {
    let mut servers = Vec::new();
    for (i, (name, host, task)) in [
        ("beta", Some("h2"), None),
        ("Beta", None, Some(TaskState::Spawning)),
        ("alpha", Some("h1"), None),
        ("Zulu", Some("h2"), Some(TaskState::Deleting)),
        ("beta", None, None),
        ("éclair", Some("h1"), Some(TaskState::Spawning)),
        ("alpha", Some("H1"), None),
    ]
    .into_iter()
    .enumerate()
    {
        let created = at(i64::try_from(i / 2).unwrap());
        let mut s = if i % 3 == 0 {
            server("proj-a", created)
        } else {
            bare_server("proj-a", created)
        };
        s.name = name.into();
        s.host = host.map(HostName::from);
        s.task_state = task;
        s.vm_state = [VmState::Active, VmState::Stopped, VmState::Building][i % 3];
        s.launched_at = (i % 2 == 0).then(|| at(10 - i64::try_from(i).unwrap()));
        servers.push(s);
    }
    let other = bare_server("proj-b", at(1));
    let gone = Server {
        vm_state: VmState::Deleted,
        deleted_at: Some(at(9)),
        ..bare_server("proj-a", at(2))
    };
    let mut all = servers.clone();
    all.extend([other.clone(), gone]);
    commit(&*db.store, all.iter().cloned().map(Change::InsertServer).collect()).await;

    let asc = |key| Sort { key, descending: false };
    let desc = |key| Sort { key, descending: true };
    let project_a = ServerFilter {
        project_id: Some(ProjectId::from("proj-a")),
        include_deleted: false,
    };
    let live = servers.iter().chain([&other]).cloned().collect::<Vec<_>>();
    for (filter, listed) in [(&project_a, &servers), (&ServerFilter::default(), &live)] {
        for order in [
            vec![asc(SortKey::CreatedAt)],
            vec![desc(SortKey::Name), asc(SortKey::CreatedAt)],
            vec![asc(SortKey::Host), desc(SortKey::Name)],
            vec![desc(SortKey::Host), desc(SortKey::LaunchedAt)],
            vec![asc(SortKey::TaskState), asc(SortKey::PowerState)],
            vec![desc(SortKey::PowerState), asc(SortKey::VmState)],
            vec![asc(SortKey::Id), desc(SortKey::Name)],
            vec![desc(SortKey::ProjectId), asc(SortKey::LaunchedAt)],
        ] {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let before = db.store.servers_read();
                let page = db.store.servers_sorted(filter, &order, after, 2).await.unwrap();
                assert!(
                    db.store.servers_read() - before <= 2,
                    "{order:?}: a page reads its rows only"
                );
                after = page.last().map(|s| s.id);
                seen.extend(page.iter().map(|s| s.id));
                if page.len() < 2 {
                    break;
                }
            }
            assert_eq!(seen, expected(listed, &order), "{order:?}");
        }
    }
}
