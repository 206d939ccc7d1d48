//! The boot write path's commit budget (issue 12): the accept records the
//! server, its host and its ports' intents before any POST; one commit after
//! them records the ports, the server ACTIVE, the action's event and the
//! operation's end.

use netcache_compute::prelude::*;
use netcache_domain::intent::IntentState;
use netcache_domain::quota::Resource;
use netcache_domain::server::VmState;

use neutron_sim::{FaultAction, FaultRule};

use crate::support::{Harness, config};

#[tokio::test]
async fn a_boot_commits_twice_whatever_its_ports() {
    let h = Harness::start(config()).await;
    for ports in [1, 3] {
        // The build's POSTs wait for the test: whatever runs first, nothing
        // after the accept can commit before the accept's count is taken.
        h.sim().add_fault(FaultRule::new("ports.create", FaultAction::Hold));
        let store = h.compute.store();
        let before = store.commits_made();
        let server = h
            .compute
            .create_server(&Harness::ctx(), h.boot_request(ports))
            .await
            .unwrap();
        assert_eq!(store.commits_made() - before, 1, "the accept is one commit");
        h.sim().clear_faults();
        let _ = h.sim().release_held();
        h.compute.settle().await;
        let commits = store.commits_made() - before;

        let stored = store.server(server.id).await.unwrap().unwrap();
        assert_eq!(stored.vm_state, VmState::Active);
        assert_eq!(stored.task_state, None);
        assert_eq!(h.cached_port_ids(server.id).await.len(), ports);
        assert_eq!(h.ports_of(server.id).len(), ports);
        let intents = store.intents(server.id).await.unwrap();
        assert_eq!(intents.len(), ports, "one intent per port, none sent twice");
        assert!(intents.iter().all(|i| i.state == IntentState::Created), "{intents:?}");
        assert!(
            store.operation(server.id).await.unwrap().is_none(),
            "the build is finished"
        );
        let events = store.actions(server.id).await.unwrap()[0].events.clone();
        assert!(
            events.iter().any(|e| e.result.as_deref() == Some("Success")),
            "{events:?}"
        );
        assert_eq!(commits, 2, "a boot with {ports} new port(s) commits {commits} times");
    }
}

/// A boot counts the project's servers (before the accept, and again under the
/// quota's lock inside it) only when a limit applies to them: with `instances`,
/// `cores` and `ram` unlimited, it reads no count, and so does not grow with the
/// project's servers. Counted over the whole boot, to its end, so the build's
/// own reads (which may run before the accept returns) count the same in both.
/// Invariant 23.
#[tokio::test]
async fn a_boot_counts_servers_only_where_a_limit_applies() {
    let mut unlimited = config();
    for resource in [Resource::Instances, Resource::Cores, Resource::Ram] {
        unlimited.quota = unlimited.quota.with(resource, -1);
    }
    let mut store_uses = Vec::new();
    for config in [config(), unlimited] {
        let h = Harness::start(config).await;
        let store = h.compute.store();
        let before = store.queries_sent();
        let server = h.boot().await;
        store_uses.push(store.queries_sent() - before);
        let stored = store.server(server).await.unwrap().unwrap();
        assert_eq!(stored.vm_state, VmState::Active);
    }
    assert_eq!(
        store_uses[0] - store_uses[1],
        1,
        "limited, the boot reads the count once more: {store_uses:?}"
    );
}
