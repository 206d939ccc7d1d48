//! Server lists as Nova filters, sorts and pages them at 2.1: `name` as a
//! regular expression, `flavor`, `image`, `changes-since` (deletions included),
//! `ip`/`ip6` as regular expressions, admin-only `deleted` and `host`, `sort_key`/`sort_dir` (newest first by
//! default), pages of at most `max_limit` linked to the next, and Nova's 400s for
//! values its schema refuses.

use crate::common;

use common::{IMAGE, TestApp};
use netcache_testenv::json::strings;
use serde_json::{Value, json};

fn names(body: &Value) -> Vec<String> {
    field_of_servers(body, "name")
}

fn ids(body: &Value) -> Vec<String> {
    field_of_servers(body, "id")
}

fn field_of_servers(body: &Value, field: &str) -> Vec<String> {
    strings(body, "servers", field).into_iter().map(str::to_owned).collect()
}

/// Boots `name` with no network, one after the other (so creation times order them).
async fn boot(t: &TestApp, name: &str, flavor: &str, image: &str) -> String {
    let body = json!({"server": {"name": name, "flavorRef": flavor, "imageRef": image, "networks": "none"}});
    let (status, body) = t.post("/servers", body).await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
    body["server"]["id"].as_str().unwrap().to_owned()
}

async fn list(t: &TestApp, query: &str) -> Vec<String> {
    let (status, body) = t.get(&format!("/servers?{query}")).await;
    assert_eq!(status, 200, "{query}: {body}");
    names(&body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_filter_sort_and_page_as_nova_does() {
    let t = TestApp::start().await;
    boot(&t, "vm-1", "1", IMAGE).await;
    boot(&t, "vm-2", "2", IMAGE).await;
    let gone = boot(&t, "web-3", "1", IMAGE).await;
    boot(&t, "vm-10", "1", IMAGE).await;
    let before_delete = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
    let (status, _) = t.delete(&format!("/servers/{gone}")).await;
    assert_eq!(status, 204);

    // Newest first, deleted servers left out.
    assert_eq!(list(&t, "").await, ["vm-10", "vm-2", "vm-1"]);
    assert_eq!(list(&t, "name=^vm-[0-9]$").await, ["vm-2", "vm-1"]);
    assert_eq!(list(&t, "name=1").await, ["vm-10", "vm-1"]);
    assert_eq!(list(&t, "flavor=2").await, ["vm-2"]);
    assert!(list(&t, "flavor=1234").await.is_empty());
    assert_eq!(list(&t, &format!("image={IMAGE}")).await.len(), 3);
    assert_eq!(
        list(&t, &format!("image=http://127.0.0.1:8774/images/{IMAGE}"))
            .await
            .len(),
        3
    );
    assert!(list(&t, "image=1234abcd-zzz0-aaa9-ppp3-0987654abcde").await.is_empty());
    assert!(list(&t, "status=BALONEY").await.is_empty());
    assert_eq!(
        list(&t, "sort_key=display_name&sort_dir=asc").await,
        ["vm-1", "vm-10", "vm-2"]
    );
    assert_eq!(
        list(
            &t,
            "sort_key=instance_type_id&sort_dir=desc&sort_key=display_name&sort_dir=asc"
        )
        .await,
        ["vm-2", "vm-1", "vm-10"]
    );
    assert_eq!(
        list(&t, "sort_key=created_at&sort_dir=asc&limit=2").await,
        ["vm-1", "vm-2"]
    );

    // changes-since shows what changed since, the deletion included.
    let since = before_delete.format("%Y-%m-%dT%H:%M:%SZ");
    let changed = list(&t, &format!("changes-since={since}")).await;
    assert!(changed.contains(&"web-3".to_owned()), "{changed:?}");
    assert!(list(&t, "changes-since=2051-01-01T12:34:00Z").await.is_empty());
    // Only admins list deleted servers or filter by host (for others: ignored).
    let as_admin = |query: &str| common::send(common::as_admin(t.http.get(t.url(&format!("/servers?{query}")))));
    assert_eq!(names(&as_admin("deleted=true").await.1), ["web-3"]);
    assert!(names(&as_admin("host=no-such-host").await.1).is_empty());
    assert_eq!(list(&t, "deleted=true").await, ["vm-10", "vm-2", "vm-1"]);
    assert_eq!(list(&t, "host=no-such-host").await, ["vm-10", "vm-2", "vm-1"]);

    for bad in [
        "limit=-1",
        "limit=testing",
        "changes-since=2011/01/01",
        "sort_key=shoe_size",
        "sort_dir=sideways",
        "name=(",
    ] {
        let (status, body) = t.get(&format!("/servers?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["badRequest"]["code"], 400, "{bad}: {body}");
    }
}

/// Without `limit`, a page holds `api.max_limit` servers (Nova's `max_limit`)
/// and a full one links to the next; following the links lists every server
/// once, newest first. A page is read from the store as a keyset page: a fixed
/// number of statements per page, whatever the number of servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_hold_max_limit_servers_link_the_next_and_cost_fixed_statements() {
    let t = TestApp::with(common::Options {
        tweak: |s| s.api.max_limit = 3,
        ..common::Options::default()
    })
    .await;
    let mut booted = Vec::new();
    for i in 0..7 {
        booted.push(boot(&t, &format!("vm-{i}"), "1", IMAGE).await);
    }
    booted.reverse();
    let store = t.app().compute.store().clone();

    let mut seen = Vec::new();
    let mut path = "/servers/detail".to_owned();
    loop {
        let before = store.queries_sent();
        let (status, page) = t.get(&path).await;
        let statements = store.queries_sent() - before;
        assert_eq!(status, 200, "{page}");
        let ids = ids(&page);
        assert!(ids.len() <= 3, "{} servers on one page", ids.len());
        // The marker's row, the page, its VIF records and its caches.
        assert!(statements <= 4, "{statements} statements for one page of {}", ids.len());
        seen.extend(ids);
        let Some(next) = page["servers_links"][0]["href"].as_str() else {
            break;
        };
        path = next.split_once("/v2.1").unwrap().1.to_owned();
    }
    assert_eq!(seen, booted, "every server once, newest first");

    let (_, asked) = t.get("/servers?limit=10").await;
    assert_eq!(
        asked["servers"].as_array().unwrap().len(),
        3,
        "limit is capped at max_limit"
    );
}

/// Issue 33 defect 2: `ip` and `ip6` are Nova's regular expressions, matched
/// as Python's `re.match` matches (from an address's start, not to its end);
/// a server passes if an IPv4 address matches `ip` or an IPv6 one `ip6`
/// (`ip6` is an admin's at 2.1); a bad pattern is Nova's schema 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_filters_are_regular_expressions_matched_from_an_addresss_start() {
    let t = TestApp::start().await;
    let net = t.topology.private_network_id.clone();
    for (name, ip) in [("short", "10.0.0.24"), ("long", "10.0.0.240")] {
        let networks = json!([{"uuid": net, "fixed_ip": ip}]);
        let body = json!({"server": {"name": name, "flavorRef": "1", "imageRef": IMAGE, "networks": networks}});
        let (status, body) = t.post("/servers", body).await;
        assert_eq!(status, 202, "{body}");
        t.app().compute.settle().await;
    }
    let filtered = |path: &str, filters: &[(&str, &str)], admin: bool| {
        let request = t.http.get(t.url(path)).query(filters);
        let request = if admin { common::as_admin(request) } else { request };
        common::send(request)
    };
    for (filter, pattern, found) in [
        ("ip", r"^10\.0\.0\.24$", &["short"][..]),
        ("ip", "10.0.0.24", &["long", "short"]),
        ("ip", "0.0.24", &[]),
        ("ip", r"10\.0\.0\.2[0-9]+", &["long", "short"]),
    ] {
        for path in ["/servers", "/servers/detail"] {
            let (status, body) = filtered(path, &[(filter, pattern)], false).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(names(&body), found, "{path}?{filter}={pattern}");
        }
    }
    let (_, body) = filtered("/servers", &[("ip", r"^10\.0\.0\.24$"), ("ip6", "^fd00:")], true).await;
    assert_eq!(names(&body), ["long", "short"], "either filter lets a server pass");
    let (_, body) = filtered("/servers", &[("ip6", "^fe80:")], true).await;
    assert!(names(&body).is_empty(), "{body}");
    let (_, body) = filtered("/servers", &[("ip6", "^fe80:")], false).await;
    assert_eq!(names(&body), ["long", "short"], "ip6 is ignored for others at 2.1");

    for (filter, pattern, message) in [
        (
            "ip",
            "(",
            "Invalid input for query parameters ip. Value: (. '(' is not a 'regex'",
        ),
        (
            "ip",
            "",
            "Invalid input for query parameters ip. Value: . '' is not a 'regex'",
        ),
        (
            "ip6",
            "[",
            "Invalid input for query parameters ip6. Value: [. '[' is not a 'regex'",
        ),
    ] {
        let (status, body) = filtered("/servers", &[(filter, pattern)], true).await;
        assert_eq!(status, 400, "{filter}={pattern}: {body}");
        assert_eq!(body["badRequest"]["message"], message);
    }
}

/// Issue 33 defect 6: as in Nova, an admin's `tenant_id` (or its alias
/// `project_id`) with `all_tenants` lists that project's servers only, in any
/// order; without `all_tenants`, or from anyone else, it is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admins_tenant_filter_with_all_tenants_lists_that_project_only() {
    let t = TestApp::start().await;
    boot(&t, "mine", "1", IMAGE).await;
    let body = json!({"server": {"name": "theirs", "flavorRef": "1", "imageRef": IMAGE, "networks": "none"}});
    let request = t
        .http
        .post(t.url("/servers"))
        .header("x-project-id", "other")
        .json(&body);
    let (status, body) = common::send(request).await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
    let listed = |query: &str, admin: bool| {
        let request = t.http.get(t.url(&format!("/servers/detail?{query}")));
        let request = if admin { common::as_admin(request) } else { request };
        common::send(request)
    };
    for (query, found) in [
        ("all_tenants=1", &["theirs", "mine"][..]),
        ("all_tenants=1&tenant_id=other", &["theirs"]),
        ("all_tenants=1&project_id=other", &["theirs"]),
        ("all_tenants=1&tenant_id=other&sort_dir=asc", &["theirs"]),
        ("all_tenants=1&tenant_id=other&sort_key=display_name", &["theirs"]),
        (&format!("all_tenants=1&tenant_id={}", common::PROJECT), &["mine"]),
        ("all_tenants=1&tenant_id=nobody", &[]),
        ("tenant_id=other", &["mine"]),
        ("project_id=other&sort_dir=asc", &["mine"]),
    ] {
        let (status, body) = listed(query, true).await;
        assert_eq!(status, 200, "{query}: {body}");
        assert_eq!(names(&body), found, "admin: {query}");
    }
    let (_, body) = listed("tenant_id=other", false).await;
    assert_eq!(names(&body), ["mine"], "a member's tenant_id is ignored");
    let (status, _) = listed("all_tenants=1&tenant_id=other", false).await;
    assert_eq!(status, 403, "all_tenants is an admin's");
}

/// Issue 33 defect 7: a page in any order is a keyset page from the store, so
/// it reads at most its own servers' rows (and the marker's), not every
/// server of the scope — an admin's `all_tenants` list in particular; and
/// page after page (each last server the next marker) lists every server
/// once, in that order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_page_reads_one_pages_rows_not_the_whole_table() {
    let t = TestApp::start().await;
    let mut booted = Vec::new();
    for i in 0..7 {
        booted.push(boot(&t, &format!("vm-{}", 6 - i), "1", IMAGE).await);
    }
    let store = t.app().compute.store().clone();
    for (query, order) in [
        ("sort_dir=asc", booted.clone()),
        ("all_tenants=1&sort_dir=asc", booted.clone()),
        ("sort_key=display_name", booted.clone()),
        (
            "all_tenants=1&sort_key=display_name&sort_dir=asc",
            booted.iter().rev().cloned().collect(),
        ),
        (
            "sort_key=launched_at&sort_dir=asc&sort_key=display_name&sort_dir=desc",
            booted.clone(),
        ),
    ] {
        let mut seen = Vec::new();
        let mut path = format!("/servers?{query}&limit=3");
        loop {
            let before = store.servers_read();
            let (status, page) = common::send(common::as_admin(t.http.get(t.url(&path)))).await;
            assert_eq!(status, 200, "{path}: {page}");
            let rows = store.servers_read() - before;
            let ids = ids(&page);
            // The page's rows and the marker's row.
            assert!(rows <= 4, "{path}: {rows} server rows read for a page of {}", ids.len());
            let full = ids.len() == 3;
            path = format!(
                "/servers?{query}&limit=3&marker={}",
                ids.last().map_or("", String::as_str)
            );
            seen.extend(ids);
            if !full {
                break;
            }
        }
        assert_eq!(seen, order, "{query}: every server once, in order");
    }
}
