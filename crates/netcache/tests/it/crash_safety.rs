//! The process dies in the middle of the allocation protocol; after a restart,
//! pending intents are resolved: one port attached, nothing duplicated, nothing
//! leaked untracked.

use crate::common;

use common::TestApp;
use netcache_domain::intent::IntentState;

async fn crash_then_restart(crash_at: fn(&mut netcache_app::settings::Settings)) -> (TestApp, String) {
    let mut t = TestApp::doomed(crash_at).await;
    let id = t.boot_on_private().await;
    assert!(t.app().compute.has_crashed());
    assert_eq!(t.server(&id).await["status"], "BUILD");
    t.restart(|s| s.compute.crash_at = None).await;
    t.app().compute.settle().await;
    (t, id)
}

/// Invariant 2.
/// Invariant 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_between_intent_and_create() {
    let (t, id) = crash_then_restart(|s| s.compute.crash_at = Some("after-intent-recorded".into())).await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    t.the_one_port(&id).await;
    let intents = t.intents(&id).await;
    let states: Vec<_> = intents.iter().map(|i| i.state).collect();
    assert_eq!(states, [IntentState::Abandoned, IntentState::Created], "{intents:?}");
    assert!(intents[0].port_id.is_none(), "no port ever carried the first intent");
}

/// Invariant 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_between_create_and_recording_its_result() {
    let (t, id) = crash_then_restart(|s| s.compute.crash_at = Some("after-create-sent".into())).await;
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    t.the_one_port(&id).await;
    let intents = t.intents(&id).await;
    assert_eq!(intents.len(), 1, "{intents:?}");
    assert_eq!(intents[0].state, IntentState::Created);
    assert!(
        intents[0].adopted,
        "the port created before the crash was adopted by its marker"
    );
    assert_eq!(t.neutron().stats().calls("ports.create"), 1, "never re-POSTed");
}
