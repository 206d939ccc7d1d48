//! The `netcache` binary as a user runs it, against an in-process netcache:
//! one-off commands print only their result off a terminal, `purge` removes
//! only deleted servers nothing watches any more, servers are found
//! by name as the `openstack` CLI finds them, and `server create` boots with an
//! image the image service lists.

use crate::common;

use std::process::{Output, Stdio};

use common::TestApp;
use netcache_testenv::json::strings;
use neutron_sim::{NeutronSim, SimConfig};
use serde_json::{Value, json};

/// Runs the binary with stdin and the output streams off a terminal, and with
/// no log settings from the caller's environment: what a script would see.
async fn netcache(t: &TestApp, args: &[&str]) -> Output {
    netcache_with(t, args, &[]).await
}

/// The same, with these settings in the environment.
async fn netcache_with(t: &TestApp, args: &[&str], env: &[(&str, &str)]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_netcache"))
        .args(args)
        .envs(env.iter().copied())
        .env("NETCACHE_DATABASE", &t.settings.database)
        .env("NETCACHE_NEUTRON_URL", t.sim.url())
        .env("NETCACHE_URL", t.app().api_url())
        .env_remove("NETCACHE_LOG")
        .env_remove("RUST_LOG")
        .env_remove("NETCACHE_PROJECT")
        .env_remove("OS_TOKEN")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Boots a server without networks under this name; returns its id once built.
async fn boot_named(t: &TestApp, name: &str) -> String {
    let (status, body) = t
        .post(
            "/servers",
            json!({"server": {"name": name, "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
    body["server"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_off_commands_print_only_their_result_off_a_terminal() {
    let t = TestApp::start().await;
    t.boot_on_private().await;
    let audit = netcache(&t, &["audit"]).await;
    assert_eq!(audit.status.code(), Some(0), "{audit:?}");
    assert_eq!(stderr(&audit), "", "audit wrote to stderr");
    assert!(stdout(&audit).starts_with("1 servers: "), "{}", stdout(&audit));
    let heal = netcache(&t, &["heal"]).await;
    assert!(heal.status.success(), "{heal:?}");
    assert_eq!(stderr(&heal), "", "heal wrote to stderr");
    assert!(stdout(&heal).starts_with("Healed 1 servers"), "{}", stdout(&heal));
    let gc = netcache(&t, &["gc", "--dry-run"]).await;
    assert!(gc.status.success(), "{gc:?}");
    assert_eq!(stderr(&gc), "", "gc wrote to stderr");
    assert!(stdout(&gc).starts_with("Dry run: would delete []"), "{}", stdout(&gc));
    // Asked for, the logs are there.
    let verbose = netcache(&t, &["heal", "-v"]).await;
    assert!(verbose.status.success(), "{verbose:?}");
    assert!(stderr(&verbose).contains("INFO"), "{verbose:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_removes_deleted_servers_but_never_one_heal_still_watches() {
    let t = TestApp::start().await;
    let kept = boot_named(&t, "kept").await;
    let gone = boot_named(&t, "gone").await;
    let (status, _) = t.call(reqwest::Method::DELETE, &format!("/servers/{gone}"), None).await;
    assert_eq!(status, 204);
    t.app().compute.settle().await;
    let row = |id: &str| {
        let store = t.app().compute.store().clone();
        let id = id.parse().unwrap();
        async move { store.server(id).await.unwrap() }
    };

    // Deleted a moment ago: still watched for ghosts (heal.deleted_window), so kept
    // whatever date is asked for.
    let watched = netcache(&t, &["purge", "--before", "2999-01-01"]).await;
    assert!(watched.status.success(), "{watched:?}");
    assert_eq!(
        stdout(&watched),
        "Purged 0 servers, 0 port intents, 0 actions, 0 action events\n"
    );

    let unwatched = [("NETCACHE_HEAL_DELETED_WINDOW", "0")];
    let dry = netcache_with(&t, &["purge", "--before", "2999-01-01", "--dry-run"], &unwatched).await;
    assert!(dry.status.success(), "{dry:?}");
    assert_eq!(stderr(&dry), "", "purge wrote to stderr");
    assert!(
        stdout(&dry).starts_with("Dry run: would purge 1 servers, "),
        "{}",
        stdout(&dry)
    );
    assert!(row(&gone).await.is_some(), "a dry run changes nothing");

    let purge = netcache_with(&t, &["purge", "--before", "2999-01-01T00:00:00Z"], &unwatched).await;
    assert!(purge.status.success(), "{purge:?}");
    assert!(stdout(&purge).starts_with("Purged 1 servers, "), "{}", stdout(&purge));
    assert!(row(&gone).await.is_none(), "the deleted server is purged");
    assert!(row(&kept).await.is_some(), "a live server is kept");

    let bad = netcache(&t, &["purge", "--before", "last tuesday"]).await;
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(
        stderr(&bad).contains("neither YYYY-MM-DD nor an RFC 3339 time"),
        "{}",
        stderr(&bad)
    );
}

/// The benchmark runs end to end at a small size and prints each figure beside
/// its comparison (the figures themselves are read by people, not asserted),
/// with the embedded Neutron in its process or in one of its own, or with a
/// Neutron it did not start (here an embedded one standing in for a real one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchmark_prints_each_figure_beside_its_comparison() {
    let outside = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    for (flags, rss) in [
        (vec![], "(this process, Neutron included)"),
        (vec!["--neutron-process".to_owned()], "Neutron's process: "),
        (
            vec!["--neutron-url".to_owned(), outside.url()],
            "Neutron runs outside the bench",
        ),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_netcache"))
            .args(["bench", "--servers", "30", "--boots", "4"])
            .args(&flags)
            .env_remove("NETCACHE_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let printed = stdout(&out);
        for figure in [
            "SQLite with 30 servers:",
            // The loader's caches are as heal builds them: its pass writes none.
            "for the heal pass that records the caches right (0 caches written",
            "heal pass: ",
            "the same port lists raw, sent after each pass: ",
            "Neutron calls",
            "/servers/detail?limit=1000: p50 ",
            "RSS after 32 detail pages at once",
            rss,
            "concurrency 32: ",
            " transactions, ",
            "creates/s",
        ] {
            assert!(printed.contains(figure), "no {figure:?} in:\n{printed}");
        }
    }
    outside.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_commands_find_a_server_by_its_exact_name() {
    let t = TestApp::start().await;
    let vm1 = boot_named(&t, "vm1").await;
    // Nova's name filter would match both; only the exact name counts.
    boot_named(&t, "vm10").await;
    let shown = netcache(&t, &["server", "show", "vm1", "--output", "json"]).await;
    assert!(shown.status.success(), "{shown:?}");
    let server: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(server["id"], vm1, "{server}");
    let listed = netcache(&t, &["interface", "list", "vm1", "--output", "json"]).await;
    assert!(listed.status.success(), "{listed:?}");
    let by_id = netcache(&t, &["server", "show", &vm1, "--output", "json"]).await;
    assert!(by_id.status.success(), "{by_id:?}");
    let deleted = netcache(&t, &["server", "delete", "vm1"]).await;
    assert!(deleted.status.success(), "{deleted:?}");
    t.app().compute.settle().await;
    let (status, _) = t.get(&format!("/servers/{vm1}")).await;
    assert_eq!(status, 404, "the server named vm1 is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_name_is_an_error_that_lists_the_servers() {
    let t = TestApp::start().await;
    let first = boot_named(&t, "twin").await;
    let second = boot_named(&t, "twin").await;
    let out = netcache(&t, &["server", "show", "twin"]).await;
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains("More than one server exists with the name 'twin': "),
        "{err}"
    );
    assert!(err.contains(&first) && err.contains(&second), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_name_is_an_error() {
    let t = TestApp::start().await;
    boot_named(&t, "vm1").await;
    for args in [
        &["server", "show", "nosuch"][..],
        &["server", "delete", "nosuch"],
        &["interface", "list", "nosuch"],
    ] {
        let out = netcache(&t, args).await;
        assert!(!out.status.success(), "{args:?}: {out:?}");
        assert!(
            stderr(&out).contains("No server with a name or ID of 'nosuch' exists."),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_create_boots_with_an_image_the_image_service_lists() {
    let t = TestApp::start().await;
    let (status, images) = common::send_json(
        &t.http,
        reqwest::Method::GET,
        &format!("{}/image/v2/images", t.app().api_url()),
        None,
    )
    .await;
    assert_eq!(status, 200, "{images}");
    let listed = strings(&images, "images", "id");
    let out = create(&t, "vm1", &[]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stderr(&out), "", "server create wrote to stderr");
    let created: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        listed.contains(&created["image"]["id"].as_str().unwrap()),
        "{} is not among {listed:?}",
        created["image"]
    );
    // An image name is resolved to its id, as the openstack CLI does.
    let name = images["images"][0]["name"].as_str().unwrap();
    let out = create(&t, "vm2", &["--image", name]).await;
    assert!(out.status.success(), "{out:?}");
    let created: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(created["image"]["id"], listed[0], "{created}");
}

/// `netcache server create NAME` on the private network, waiting for the build.
async fn create(t: &TestApp, name: &str, extra: &[&str]) -> Output {
    let network = t.topology.private_network_id.clone();
    let mut args = vec!["server", "create", name, "--network", &network, "--output", "json"];
    args.extend_from_slice(extra);
    netcache(t, &args).await
}
