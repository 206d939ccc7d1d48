//! The audit's budget: one Neutron list per page of 100 instances, whatever
//! the number of ports, and no page larger than that in memory.

use std::time::Duration;

use crate::support::{Cloud, built, deleted, uuid};

fn nothing(_: &netcache_nova::Progress<'_>) {}

#[tokio::test]
async fn an_audit_of_n_instances_makes_at_most_n_over_100_plus_5_neutron_calls() {
    let cloud = Cloud::start().await;
    let (live, gone) = (1_000, 250);
    for i in 0..live + gone {
        let server = uuid();
        let port = cloud.port(&server, "compute:nova", Some("compute1"), false);
        let records = built(&server, &[&port]);
        cloud.nova.put(if i < live { records } else { deleted(records) });
    }
    cloud.sim.handle().reset_stats();
    let report = cloud
        .auditor(Cloud::config(Duration::ZERO))
        .run(&nothing)
        .await
        .unwrap();
    let n = (live + gone) as u64;
    assert_eq!(report.totals.instances + report.totals.deleted_instances, n);
    let calls = cloud.neutron_calls();
    assert!(calls <= n.div_ceil(100) + 5, "{calls} Neutron calls for {n} instances");
    assert_eq!(cloud.list_calls(), n.div_ceil(100), "one port list per page");
    let (pages, largest) = cloud.nova.pages_read();
    assert!(largest <= 100, "a page held {largest} instances");
    assert!(pages <= n.div_ceil(100) + 2, "{pages} pages");
    // Every deleted instance's port was allocated and recorded: undecided, not leaked.
    assert_eq!(report.totals.findings["leaked"], 0);
}
