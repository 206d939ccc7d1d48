//! The audit reads and reports; it writes nothing, so it can run beside a live
//! service on the same store.

use crate::support;
use netcache_compute::prelude::*;

use serde_json::json;
use support::{Harness, config};

/// Invariant 14: an audit of servers that drifted (a ghost port, a lost port, a
/// stale cache) commits nothing to the store and sends Neutron only reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_of_drifted_servers_commits_nothing_and_only_reads_neutron() {
    let h = Harness::start(config()).await;
    let ghosted = h.boot().await;
    h.neutron_port(json!({"device_id": ghosted.to_string(), "device_owner": "compute:nova"}));
    let lost_on = h.boot().await;
    let lost = h.cached_port_ids(lost_on).await.remove(0);
    assert_eq!(h.sim().request("DELETE", &format!("/v2.0/ports/{lost}"), None).0, 204);

    let commits = h.compute.store().commits_made();
    let before = h.sim().stats();
    let report = h.compute.audit(&|_, _| {}).await.unwrap();
    let after = h.sim().stats();

    assert_eq!(report.totals.ghosts_foreign, 1, "{:?}", report.totals);
    assert_eq!(report.totals.lost, 1, "{:?}", report.totals);
    assert_eq!(h.compute.store().commits_made(), commits, "the audit committed");
    let writes = |stats: &neutron_sim::Stats| -> u64 {
        stats
            .operations
            .keys()
            .filter(|op| !op.ends_with(".list") && !op.ends_with(".show"))
            .map(|op| stats.calls(op))
            .sum()
    };
    assert!(after.total() > before.total(), "the audit read Neutron");
    assert_eq!(
        writes(&after),
        writes(&before),
        "the audit wrote to Neutron: {:?}",
        after.operations
    );
}
