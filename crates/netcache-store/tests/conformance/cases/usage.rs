//! Usage windows (os-simple-tenant-usage): the servers that ran in a window,
//! live and deleted, by project then id, a keyset page at a time.

use netcache_store::UsageWindow;

use super::*;

/// A server of `project` launched at `launched`, deleted at `deleted` if given.
fn ran(project: &str, launched: Option<i64>, deleted: Option<i64>) -> Server {
    Server {
        vm_state: if deleted.is_some() {
            VmState::Deleted
        } else {
            VmState::Active
        },
        launched_at: launched.map(at),
        deleted_at: deleted.map(at),
        ..bare_server(project, at(0))
    }
}

fn window(start: i64, end: i64, project: Option<&str>) -> UsageWindow {
    UsageWindow {
        start: at(start),
        end: at(end),
        project_id: project.map(ProjectId::from),
    }
}

/// The servers of `all` in Nova's order: project byte by byte, then id.
fn in_order(all: &[&Server]) -> Vec<ServerId> {
    let mut sorted: Vec<&Server> = all.to_vec();
    sorted.sort_by(|a, b| (a.project_id.as_str(), a.id.to_string()).cmp(&(b.project_id.as_str(), b.id.to_string())));
    sorted.iter().map(|s| s.id).collect()
}

async fn ids_in(db: &Db, window: &UsageWindow) -> Vec<ServerId> {
    let servers = db.store.servers_in_window(window, None, 100).await.unwrap();
    servers.iter().map(|s| s.id).collect()
}

pub async fn usage_windows_hold_the_servers_that_ran_in_them_by_project_then_id(db: &Db) {
    let early = ran("Proj-c", Some(5), None);
    let live = ran("proj-a", Some(30), None);
    let deleted = ran("proj-a", Some(10), Some(20));
    let other = ran("proj-b", Some(10), None);
    let twin = ran("proj-a", Some(12), None);
    let never = ran("proj-a", None, None);
    let errored = ran("proj-a", None, Some(15));
    let all = [&early, &live, &deleted, &other, &twin, &never, &errored];
    commit(
        &*db.store,
        all.iter().map(|s| Change::InsertServer((*s).clone())).collect(),
    )
    .await;

    assert_eq!(
        ids_in(db, &window(0, 100, None)).await,
        in_order(&[&early, &live, &deleted, &other, &twin]),
        "never launched: never counted"
    );
    let read = db
        .store
        .servers_in_window(&window(0, 100, None), None, 100)
        .await
        .unwrap();
    let shown = read.iter().find(|s| s.id == deleted.id).expect("the deleted server");
    assert_eq!(shown, &deleted, "the whole row, deleted as it is");

    assert_eq!(
        ids_in(db, &window(19, 100, None)).await,
        in_order(&[&early, &live, &deleted, &other, &twin]),
        "deleted after the start"
    );
    assert_eq!(
        ids_in(db, &window(20, 100, None)).await,
        in_order(&[&early, &live, &other, &twin]),
        "deleted at the start: gone before it"
    );
    assert_eq!(
        ids_in(db, &window(0, 10, None)).await,
        in_order(&[&early]),
        "launched at the end: after it"
    );
    assert_eq!(
        ids_in(db, &window(0, 11, Some("proj-a"))).await,
        in_order(&[&deleted]),
        "one project's"
    );
    assert_eq!(ids_in(db, &window(0, 100, Some("proj-x"))).await, []);

    // Page after page, each reading its own rows: every server once, in order.
    let wide = window(0, 100, None);
    let mut seen = Vec::new();
    let mut after: Option<Server> = None;
    loop {
        let before = db.store.servers_read();
        let page = db.store.servers_in_window(&wide, after.as_ref(), 2).await.unwrap();
        assert!(db.store.servers_read() - before <= 2, "a page reads its rows only");
        seen.extend(page.iter().map(|s| s.id));
        if page.len() < 2 {
            break;
        }
        after = page.last().cloned();
    }
    assert_eq!(seen, in_order(&[&early, &live, &deleted, &other, &twin]));

    // A marker outside the window (never launched) still places the page.
    let rest = db.store.servers_in_window(&wide, Some(&never), 100).await.unwrap();
    let expected: Vec<ServerId> = in_order(&[&early, &live, &deleted, &other, &twin, &never])
        .into_iter()
        .skip_while(|id| *id != never.id)
        .skip(1)
        .filter(|id| *id != never.id)
        .collect();
    assert_eq!(rest.iter().map(|s| s.id).collect::<Vec<_>>(), expected);
    assert_eq!(db.store.servers_in_window(&wide, None, 0).await.unwrap(), []);
}
