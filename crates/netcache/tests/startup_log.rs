//! What netcache writes to its log at start: the database and Neutron it uses,
//! never their passwords.
//!
//! A test binary of its own: the test reads the log through a thread's own
//! subscriber (`set_default`), and tracing caches each log line's interest
//! process-wide, so another test's thread that first reaches the start-up line
//! while this one registers its subscriber can leave that line off for good
//! (seen in CI). Alone in its process, nothing races it.

#[path = "it/common/mod.rs"]
mod common;

use netcache_app::scratch_pg::ScratchDatabase;
use netcache_testenv::log::CapturedLog;

use common::{Options, TestApp};

/// Neutron's URL with a password in it (the embedded Neutron takes no notice).
fn neutron_with_password(settings: &mut netcache_app::settings::Settings) {
    if let Some(url) = &mut settings.neutron.url {
        *url = url.replacen("http://", "http://neutron:neutron-s3cret@", 1);
    }
}

/// The start-up line names the database and Neutron, their passwords as
/// `****`, and no log line at start holds a password. The database's password
/// is checked on PostgreSQL (`NETCACHE_TEST_PG_URL`, whose server takes any);
/// without it, on Neutron's URL alone.
#[tokio::test]
async fn the_start_up_log_shows_no_password() {
    let log = CapturedLog::start();
    let scratch = match std::env::var("NETCACHE_TEST_PG_URL") {
        Ok(admin) => Some(
            ScratchDatabase::create(&admin, &format!("test_{}", uuid::Uuid::new_v4().as_u64_pair().0))
                .await
                .unwrap(),
        ),
        Err(_) => {
            eprintln!("NETCACHE_TEST_PG_URL is not set: the database's password is not checked (SQLite has none)");
            None
        }
    };
    let database = scratch.as_ref().map(|s| {
        let mut url = url::Url::parse(&s.url).unwrap();
        url.set_password(Some("db-s3cret")).unwrap();
        url.to_string()
    });

    let t = TestApp::with(Options {
        tweak: neutron_with_password,
        database: database.clone(),
        ..Options::default()
    })
    .await;
    assert!(
        t.settings
            .neutron
            .url
            .as_deref()
            .is_some_and(|u| u.contains("neutron-s3cret")),
        "netcache was given the password"
    );

    let logged = log.text();
    let line = logged
        .lines()
        .find(|l| l.contains("netcache compute API listening"))
        .unwrap_or_else(|| panic!("no start-up line in\n{logged}"));
    assert!(line.contains("neutron=http://neutron:****@127.0.0.1:"), "{line}");
    if let Some(database) = &database {
        let shown = database.replace("db-s3cret", "****");
        assert!(line.contains(&format!("database={shown}")), "{line}");
    }
    assert!(!logged.contains("s3cret"), "a password in the log:\n{logged}");

    drop(t);
    if let Some(scratch) = scratch {
        scratch.drop_database().await.unwrap();
    }
}
