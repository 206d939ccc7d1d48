//! os-simple-tenant-usage: each project's servers' hours and flavor sizes in a
//! window, deleted servers counted for their lifetime, Nova's three time
//! formats and its 400s, its policy (the list an admin's, a project's its
//! owner's too), 2.40's paging of servers by project then id with `next`
//! links, and 2.75's refusal of unknown parameters; the bodies checked against
//! `nova_schema::tenant_usages` and Tempest's needs. Time moves by the compute
//! service's clock, so no assertion waits on the wall clock.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use chrono::{NaiveDateTime, TimeDelta};
use common::{Api, BASE};
use netcache_testenv::json::items;
use nova_schema::tenant_usages::{self as schema, TEMPEST_SERVER_USAGE_KEYS};
use nova_schema::{assert_nova_error, assert_satisfies};
use serde_json::{Value, json};

const ADMIN: &str = "admin,member,reader";
const MEMBER: &str = "member,reader";
const USAGE: &str = "/v2.1/os-simple-tenant-usage";
/// A window around any test's servers: the end is capped at now.
const WIDE: &str = "start=2000-01-01T00:00:00&end=2999-12-31T23:59:59.999999";

/// `GET uri` at `2.minor` as `roles` of `project`.
async fn get(api: &Api, minor: u16, (project, roles): (&str, &str), uri: &str) -> (StatusCode, Value) {
    let who = [("x-project-id", project), ("x-roles", roles)];
    api.at_as(minor, &who, Method::GET, uri, None).await
}

/// The admin's `GET uri` at `2.minor`, which must answer 200 in Nova's schema.
async fn admin_get(api: &Api, minor: u16, uri: &str) -> Value {
    let (status, body) = get(api, minor, ("demo", ADMIN), uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    let schema = if uri.starts_with(&format!("{USAGE}/")) {
        schema::show(minor)
    } else {
        schema::index(minor)
    };
    assert_satisfies(uri, &schema, &body);
    body
}

/// Boots a server of `flavor` in `project` (as its admin); answers its id once ACTIVE.
async fn boot_in(api: &Api, project: &str, flavor: &str) -> String {
    let who = [("x-project-id", project), ("x-roles", ADMIN)];
    let body = json!({"server": {"name": "vm", "flavorRef": flavor, "imageRef": common::IMAGE, "networks": "none"}});
    let (status, body) = api.at_as(37, &who, Method::POST, "/v2.1/servers", Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.built(&id).await, "ACTIVE");
    id
}

/// A time as Nova writes it (`2025-06-15T10:11:12.000000`).
fn time(text: &Value) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text.as_str().unwrap(), "%Y-%m-%dT%H:%M:%S%.f").unwrap()
}

/// `at` moved by `by`, in Tempest's format (`%Y-%m-%dT%H:%M:%S.%f`).
fn shifted(at: NaiveDateTime, by: TimeDelta) -> String {
    (at + by).format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// Python's `(to - from).total_seconds() / 3600.0`.
fn hours(from: NaiveDateTime, to: NaiveDateTime) -> f64 {
    (to - from).num_microseconds().unwrap() as f64 / 1e6 / 3600.0
}

/// The usage of server `id` among a summary's.
fn usage_of<'a>(summary: &'a Value, id: &str) -> &'a Value {
    items(summary, "server_usages")
        .iter()
        .find(|u| u["instance_id"] == id)
        .unwrap_or_else(|| panic!("{id} in {summary}"))
}

fn assert_close(got: &Value, want: f64) {
    let got = got.as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "{got} is not {want}");
}

#[tokio::test]
async fn a_servers_usage_is_its_hours_and_flavor_sizes_in_the_window() {
    let api = Api::start().await;
    let tiny = boot_in(&api, "demo", "1").await;
    let medium = boot_in(&api, "demo", "3").await;
    api.compute.clock().advance(TimeDelta::hours(2));

    let listed = admin_get(&api, 1, &format!("{USAGE}?{WIDE}&detailed=1")).await;
    let tenants = listed["tenant_usages"].as_array().unwrap();
    assert_eq!(tenants.len(), 1, "{listed}");
    let summary = &tenants[0];
    assert_eq!(summary.as_object().unwrap().len(), 8, "Tempest's 8 keys: {summary}");
    assert_eq!(summary["tenant_id"], "demo");
    assert_eq!(summary["start"], "2000-01-01T00:00:00.000000");
    let stop = time(&summary["stop"]);
    assert!(summary["stop"].as_str().unwrap() < "2999", "the end is capped at now");

    let (_, shown) = api.get(&format!("/v2.1/servers/{tiny}")).await;
    let usage = usage_of(summary, &tiny);
    let mut keys: Vec<&str> = usage.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, TEMPEST_SERVER_USAGE_KEYS);
    assert_eq!(usage["name"], "vm");
    assert_eq!(usage["tenant_id"], "demo");
    assert_eq!(usage["state"], "active");
    assert_eq!(usage["ended_at"], Value::Null);
    assert_eq!(
        (
            &usage["flavor"],
            &usage["memory_mb"],
            &usage["local_gb"],
            &usage["vcpus"]
        ),
        (&json!("m1.tiny"), &json!(512), &json!(1), &json!(1))
    );
    assert_eq!(usage["started_at"], shown["server"]["OS-SRV-USG:launched_at"]);
    let started = time(&usage["started_at"]);
    let tiny_hours = hours(started, stop);
    assert_eq!(usage["hours"], tiny_hours, "from its launch to now");
    assert!((2.0..3.0).contains(&tiny_hours), "{tiny_hours}");
    assert_eq!(usage["uptime"], (stop - started).num_seconds());

    let other = usage_of(summary, &medium);
    assert_eq!(
        (
            &other["flavor"],
            &other["memory_mb"],
            &other["local_gb"],
            &other["vcpus"]
        ),
        (&json!("m1.medium"), &json!(4096), &json!(40), &json!(2))
    );
    let medium_hours = other["hours"].as_f64().unwrap();
    assert_close(&summary["total_hours"], tiny_hours + medium_hours);
    assert_close(
        &summary["total_memory_mb_usage"],
        512.0 * tiny_hours + 4096.0 * medium_hours,
    );
    assert_close(&summary["total_local_gb_usage"], tiny_hours + 40.0 * medium_hours);
    assert_close(&summary["total_vcpus_usage"], tiny_hours + 2.0 * medium_hours);

    // Not detailed: the 7 keys of the summary alone.
    let brief = admin_get(&api, 1, &format!("{USAGE}?{WIDE}&detailed=0")).await;
    let brief = brief["tenant_usages"][0].as_object().unwrap();
    assert_eq!(brief.len(), 7, "{brief:?}");
    assert!(!brief.contains_key("server_usages"));

    // A project's: always detailed (`detailed` ignored).
    let one = admin_get(&api, 1, &format!("{USAGE}/demo?{WIDE}&detailed=0")).await;
    let one = &one["tenant_usage"];
    assert_eq!(one.as_object().unwrap().len(), 8, "{one}");
    assert_eq!(one["server_usages"].as_array().unwrap().len(), 2);

    // Windows that miss the servers, and one inside their lives.
    let before = format!(
        "start={}&end={}",
        shifted(started, TimeDelta::hours(-2)),
        shifted(started, TimeDelta::seconds(-1))
    );
    let missed = admin_get(&api, 1, &format!("{USAGE}/demo?{before}")).await;
    assert_eq!(missed, json!({"tenant_usage": {}}));
    let listed = admin_get(&api, 1, &format!("{USAGE}?{before}&detailed=1")).await;
    assert_eq!(listed, json!({"tenant_usages": []}));
    let inside = format!(
        "start={}&end={}",
        shifted(started, TimeDelta::minutes(15)),
        shifted(started, TimeDelta::minutes(45))
    );
    let half = admin_get(&api, 1, &format!("{USAGE}/demo?{inside}")).await;
    assert_eq!(usage_of(&half["tenant_usage"], &tiny)["hours"], 0.5);
    assert_eq!(
        half["tenant_usage"]["stop"],
        json!(shifted(started, TimeDelta::minutes(45)))
    );
}

#[tokio::test]
async fn a_deleted_server_counts_for_its_lifetime() {
    let api = Api::start().await;
    let id = boot_in(&api, "demo", "2").await;
    api.compute.clock().advance(TimeDelta::hours(1));
    let (status, body) = api.call(Method::DELETE, &format!("/v2.1/servers/{id}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    api.gone(&id).await;
    api.compute.clock().advance(TimeDelta::hours(1));

    let shown = admin_get(&api, 1, &format!("{USAGE}/demo?{WIDE}")).await;
    let usage = usage_of(&shown["tenant_usage"], &id);
    assert_eq!(usage["state"], "terminated");
    assert_eq!(usage["flavor"], "m1.small");
    let (started, ended) = (time(&usage["started_at"]), time(&usage["ended_at"]));
    let lifetime = hours(started, ended);
    assert_eq!(usage["hours"], lifetime, "from its launch to its deletion");
    assert!((1.0..2.0).contains(&lifetime), "{lifetime}");
    assert_eq!(usage["uptime"], (ended - started).num_seconds());
    assert_close(&shown["tenant_usage"]["total_memory_mb_usage"], 2048.0 * lifetime);

    // Not in a window after its deletion (the third format, with a space).
    let after = format!(
        "start={}&end={}",
        shifted(ended, TimeDelta::seconds(1)).replace('T', "+"),
        shifted(ended, TimeDelta::minutes(30))
    );
    let later = admin_get(&api, 1, &format!("{USAGE}/demo?{after}")).await;
    assert_eq!(later, json!({"tenant_usage": {}}));
    // Partly in one that ends after it: up to its deletion only.
    let across = format!(
        "{USAGE}?start={}&end=2999-12-31T23:59:59&detailed=1",
        shifted(ended, TimeDelta::minutes(-30))
    );
    let across = admin_get(&api, 1, &across).await;
    assert_eq!(usage_of(&across["tenant_usages"][0], &id)["hours"], 0.5);
}

#[tokio::test]
async fn usage_refuses_what_nova_refuses() {
    let api = Api::start().await;
    boot_in(&api, "demo", "1").await;
    api.compute.clock().advance(TimeDelta::seconds(1));
    let admin = ("demo", ADMIN);
    let invalid_time = "Invalid datetime string: Datetime is in invalid format";
    for query in [
        "start=2025-06-15",
        "start=2025-06-15T10:00:00Z",
        "start=2025-06-15T10:00:00%2B00:00",
        "end=2025-13-01T00:00:00",
        "end=2025-06-15+10:00:00",
        "start=yesterday",
    ] {
        for uri in [format!("{USAGE}?{query}"), format!("{USAGE}/demo?{query}")] {
            assert_nova_error(get(&api, 1, admin, &uri).await, StatusCode::BAD_REQUEST, invalid_time);
        }
    }
    let backwards = "Invalid start time. The start time cannot occur after the end time.";
    for query in [
        "start=2025-06-15T10:00:00&end=2025-06-15T10:00:00",
        "start=2025-06-16T10:00:00.000000&end=2025-06-14T10:00:00.000000",
        "start=2999-01-01T00:00:00",
    ] {
        for uri in [format!("{USAGE}?{query}"), format!("{USAGE}/demo?{query}")] {
            assert_nova_error(get(&api, 1, admin, &uri).await, StatusCode::BAD_REQUEST, backwards);
        }
    }
    // Blank values are dropped and the first given one counts (Python's `parse_qs`).
    let first = format!("{USAGE}/demo?start=&start=2000-01-01T00:00:00&start=x");
    assert_eq!(
        admin_get(&api, 1, &first).await["tenant_usage"]["start"],
        "2000-01-01T00:00:00.000000"
    );

    // The list is an admin's, even with bad dates (the policy is checked first).
    let list = "Policy doesn't allow os_compute_api:os-simple-tenant-usage:list to be performed.";
    for query in [format!("{WIDE}&detailed=1"), "start=x".into()] {
        let uri = format!("{USAGE}?{query}");
        assert_nova_error(get(&api, 1, ("demo", MEMBER), &uri).await, StatusCode::FORBIDDEN, list);
    }
    // A project's is its owner's (a reader's too) and an admin's.
    for roles in [MEMBER, "reader"] {
        let (status, body) = get(&api, 1, ("demo", roles), &format!("{USAGE}/demo?{WIDE}")).await;
        assert_eq!(status, StatusCode::OK, "{roles}: {body}");
        assert_satisfies("a project's own usage", &schema::show(1), &body);
        assert_eq!(body["tenant_usage"].as_object().unwrap().len(), 8, "{body}");
    }
    let show = "Policy doesn't allow os_compute_api:os-simple-tenant-usage:show to be performed.";
    let uri = format!("{USAGE}/demo?{WIDE}");
    assert_nova_error(get(&api, 1, ("other", MEMBER), &uri).await, StatusCode::FORBIDDEN, show);
    let others = admin_get(&api, 1, &format!("{USAGE}/other?{WIDE}")).await;
    assert_eq!(others, json!({"tenant_usage": {}}));

    // No project id: no route (Tempest's empty tenant id).
    let (status, _) = get(&api, 1, admin, &format!("{USAGE}/?{WIDE}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Unknown parameters: stripped until 2.74, refused from 2.75.
    for uri in [format!("{USAGE}?{WIDE}&foo=1"), format!("{USAGE}/demo?{WIDE}&foo=1")] {
        admin_get(&api, 74, &uri).await;
        assert_nova_error(
            get(&api, 75, admin, &uri).await,
            StatusCode::BAD_REQUEST,
            "Additional properties are not allowed ('foo' was unexpected)",
        );
    }
    let (status, body) = get(&api, 75, admin, &format!("{USAGE}/demo?{WIDE}&detailed=1")).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a project's takes no `detailed`: {body}"
    );

    // Paging: from 2.40 only, with Nova's checks.
    assert_nova_error(
        get(&api, 40, admin, &format!("{USAGE}?limit=-1")).await,
        StatusCode::BAD_REQUEST,
        "Invalid input for query parameters limit. Value: -1. '-1' does not match '^[0-9]*$'",
    );
    let missing = "3f9b4c1e-0000-4000-8000-000000000000";
    assert_nova_error(
        get(&api, 40, admin, &format!("{USAGE}?{WIDE}&marker={missing}")).await,
        StatusCode::BAD_REQUEST,
        &format!("Marker {missing} could not be found."),
    );
    admin_get(&api, 39, &format!("{USAGE}?{WIDE}&marker={missing}&limit=-1")).await;

    let (status, entry) = api.get("/v2.1/extensions/os-simple-tenant-usage").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(entry["extension"]["name"], "SimpleTenantUsage");
    assert_eq!(entry["extension"]["description"], "Simple tenant usage extension.");
}

/// The ids of a page's server usages, project after project.
fn page_ids(body: &Value) -> Vec<String> {
    let summaries = match &body["tenant_usages"] {
        Value::Array(all) => all.clone(),
        _ => vec![body["tenant_usage"].clone()],
    };
    summaries
        .iter()
        .flat_map(|s| s["server_usages"].as_array().cloned().unwrap_or_default())
        .map(|u| u["instance_id"].as_str().unwrap().to_owned())
        .collect()
}

/// A `next` link's path and query, checked to be `path`'s with `marker`.
fn next_page(links: &Value, path: &str, marker: &str) -> String {
    let href = links[0]["href"].as_str().unwrap();
    assert_eq!(links[0]["rel"], "next");
    let uri = href.strip_prefix(BASE).unwrap_or_else(|| panic!("{href}"));
    assert!(uri.starts_with(&format!("{path}?")), "{uri}");
    assert!(uri.contains(&format!("marker={marker}")), "{uri}");
    uri.to_owned()
}

#[tokio::test]
async fn from_2_40_servers_are_paged_by_project_then_id_with_next_links() {
    let api = Api::start().await;
    let mut demo = [boot_in(&api, "demo", "1").await, boot_in(&api, "demo", "1").await];
    let mut alt = [boot_in(&api, "alt", "1").await, boot_in(&api, "alt", "2").await];
    demo.sort();
    alt.sort();
    let all: Vec<String> = alt.iter().chain(&demo).cloned().collect();
    // Launched before now, however fast the machine.
    api.compute.clock().advance(TimeDelta::seconds(1));

    let first = admin_get(&api, 40, &format!("{USAGE}?{WIDE}&detailed=1&limit=3")).await;
    assert_eq!(page_ids(&first), all[..3]);
    let tenants: Vec<&Value> = items(&first, "tenant_usages").iter().map(|t| &t["tenant_id"]).collect();
    assert_eq!(tenants, [&json!("alt"), &json!("demo")], "by project");
    let next = next_page(&first["tenant_usages_links"], USAGE, &all[2]);
    assert!(next.contains("limit=3") && next.contains("detailed=1"), "{next}");
    let rest = admin_get(&api, 40, &next).await;
    assert_eq!(page_ids(&rest), all[3..]);
    assert!(rest.get("tenant_usages_links").is_none(), "{rest}");

    // A full last page links to an empty one.
    let whole = admin_get(&api, 40, &format!("{USAGE}?{WIDE}&detailed=1&limit=4")).await;
    assert_eq!(page_ids(&whole), all);
    let empty = admin_get(&api, 40, &next_page(&whole["tenant_usages_links"], USAGE, &all[3])).await;
    assert_eq!(empty, json!({"tenant_usages": []}));

    // One project's, a server a page.
    let path = format!("{USAGE}/demo");
    let one = admin_get(&api, 40, &format!("{path}?{WIDE}&limit=1")).await;
    assert_eq!(page_ids(&one), demo[..1]);
    let two = admin_get(&api, 40, &next_page(&one["tenant_usage_links"], &path, &demo[0])).await;
    assert_eq!(page_ids(&two), demo[1..]);

    // Before 2.40, no paging: every server, no links.
    let unpaged = admin_get(&api, 39, &format!("{USAGE}?{WIDE}&detailed=1&limit=1")).await;
    assert_eq!(page_ids(&unpaged), all);
    assert!(unpaged.get("tenant_usages_links").is_none(), "{unpaged}");
}
