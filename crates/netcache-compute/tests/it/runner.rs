//! The operation runner under faults its own seeds did not sample (issue 32):
//! leases on the database's clock, a paused owner taken over, a poison or
//! panicking step. Each test fails on the runner before it (`9ddb37f`).

use std::time::Duration;

use netcache_compute::prelude::*;
use netcache_compute::{AttachRequest, ComputeConfig, Sabotage};
use netcache_domain::server::VmState;
use netcache_domain::{HostName, ServerId};
use neutron_sim::{FaultAction, FaultRule};

use crate::support::{Harness, config};

/// Bounds a wait that the runner before this work never ended, so the test
/// fails instead of hanging; nothing here depends on how long anything takes.
const NEVER: Duration = Duration::from_secs(60);

/// Another process: a node of its own (other hosts), on the same store and Neutron.
async fn other_process(h: &Harness) -> std::sync::Arc<netcache_compute::Compute> {
    let mut other = config();
    other.hosts = vec![HostName::from("host9")];
    h.one_off(other).await
}

/// Leases are taken and judged on the database's clock: a process whose own
/// clock is an hour behind keeps its live work; before, its leases were an
/// hour stale when written, and another process took the build over at once.
#[tokio::test]
async fn a_process_whose_clock_is_behind_keeps_its_live_leases() {
    let h = Harness::start(config()).await;
    h.compute.clock().advance(chrono::TimeDelta::hours(-1));
    h.sim().add_fault(FaultRule::new("ports.create", FaultAction::Hold));
    let server = h
        .compute
        .create_server(&Harness::ctx(), h.boot_request(1))
        .await
        .unwrap();
    assert!(h.wait_until_every_fault_fired().await, "the build's create is held");
    let other = other_process(&h).await;
    assert_eq!(
        other.claim_orphaned_operations().await.unwrap(),
        0,
        "a live lease is never taken over"
    );
    let op = h.compute.store().operation(server.id).await.unwrap().unwrap();
    assert_eq!(&op.owner, h.compute.owner());
    h.sim().clear_faults();
    let _ = h.sim().release_held();
    h.compute.settle().await;
    assert_eq!(h.cached_port_ids(server.id).await.len(), 1);
}

/// An owner paused past its lease (its runner and lease loop stopped: here,
/// a lease of zero and no loop) is taken over by another process, which
/// finishes the attach; when the paused one wakes, its fenced commit fails,
/// it writes nothing more, and its waiting client is answered with the
/// interface the other process attached. Before, that client never was.
#[tokio::test]
async fn a_paused_owner_taken_over_answers_its_waiting_client() {
    let mut paused = config();
    paused.operations.lease = Duration::ZERO;
    let h = Harness::start(paused).await;
    let server = h.boot().await;
    h.sim()
        .add_fault(FaultRule::new("ports.create", FaultAction::Hold).times(1));
    let compute = h.compute.clone();
    let client = tokio::spawn(async move {
        let attach = AttachRequest::Network {
            network_id: None,
            fixed_ip: None,
            tag: None,
        };
        compute.attach_interface(&Harness::ctx(), server, attach).await
    });
    assert!(
        h.wait_until_every_fault_fired().await,
        "the paused owner's create is held"
    );

    let other = other_process(&h).await;
    assert_eq!(other.claim_orphaned_operations().await.unwrap(), 1);
    other.settle().await;
    assert!(
        h.compute.store().operation(server).await.unwrap().is_none(),
        "the other process finished it"
    );
    let records = h.compute.store().vifs(server).await.unwrap();

    // The paused owner wakes: its late create completes in Neutron.
    h.sim().clear_faults();
    assert_eq!(h.sim().release_held(), 1);
    let answer = tokio::time::timeout(NEVER, client)
        .await
        .expect("the waiting client is answered")
        .unwrap();
    let interface = answer.expect("the attach the other process finished");
    h.compute.settle().await;
    assert_eq!(
        h.compute.store().vifs(server).await.unwrap(),
        records,
        "the paused owner wrote nothing after"
    );
    assert!(records.iter().any(|v| v.port_id == interface.vif.port_id));
    assert_eq!(
        h.cached_port_ids(server).await.len(),
        2,
        "the boot's port and the attached one"
    );
}

fn sabotaged(sabotage: Sabotage) -> ComputeConfig {
    let mut config = config();
    config.sabotage = Some(sabotage);
    config.operations.max_attempts = 3;
    config
}

/// Boots a server under `sabotage`, deletes it, and waits until the delete's
/// operation has ended (bounded, so a runner that never ends it fails).
async fn delete_sabotaged(sabotage: Sabotage) -> (Harness, ServerId) {
    let h = Harness::start(sabotaged(sabotage)).await;
    let server = h.boot().await;
    h.compute.delete_server(&Harness::ctx(), server).await.unwrap();
    tokio::time::timeout(NEVER, h.compute.settle())
        .await
        .expect("the delete's operation ends");
    let operation = h.compute.store().operation(server).await.unwrap();
    assert!(operation.is_none(), "the delete's operation ended");
    (h, server)
}

/// A step that fails every time ends at the cap with a fault that names the
/// cause, instead of holding a worker and its lease forever.
/// Invariant 9.
#[tokio::test]
async fn a_poison_step_ends_with_a_fault_after_the_cap() {
    let (h, server) = delete_sabotaged(Sabotage::PoisonDelete).await;
    let store = h.compute.store();
    let stored = store.server(server).await.unwrap().unwrap();
    assert_eq!(stored.vm_state, VmState::Error);
    let fault = stored.fault.expect("a fault");
    assert!(
        fault.message.contains("after 3 failed attempts") && fault.message.contains("poison-delete"),
        "{}",
        fault.message
    );
    let events = &store.actions(server).await.unwrap()[0].events;
    assert!(
        events.iter().any(|e| e.result.as_deref() == Some("Error")),
        "{events:?}"
    );
}

/// A step that panics is a failed attempt: its slot is freed, its row
/// records the panic, and the retry finishes the delete. Before, the panic
/// left the server in the running set and its row forever.
#[tokio::test]
async fn a_panicking_step_frees_its_slot_and_is_retried() {
    let (h, server) = delete_sabotaged(Sabotage::PanicOnDelete).await;
    let store = h.compute.store();
    assert!(store.server(server).await.unwrap().unwrap().is_deleted());
    assert!(h.ports_of(server).is_empty());
}
