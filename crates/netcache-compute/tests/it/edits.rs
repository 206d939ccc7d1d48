//! A user's edits of a server (rename, access addresses, metadata): compare-and-
//! swaps outside operations, which an operation's own writes keep.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use netcache_compute::lifecycle::virt::VirtDriver;
use netcache_compute::prelude::*;
use netcache_compute::{CreateServer, Error, ServerEdit};
use netcache_domain::power::PowerAction;
use netcache_domain::quota::Refusal;
use netcache_domain::server::{NetworkRequests, Server, TaskState, VmState};
use netcache_domain::{HostName, ServerId};
use neutron_sim::SimConfig;
use support::{Harness, config};
use tokio::sync::{Notify, Semaphore};

/// Nova's default quota `metadata_items` (the harness keeps the defaults).
const MAX_METADATA_ITEMS: usize = 128;

/// Holds every spawn until the test opens the gate, and counts them.
struct GatedVirt {
    spawning: Notify,
    gate: Semaphore,
    spawns: AtomicUsize,
}

impl GatedVirt {
    fn closed() -> Self {
        Self {
            spawning: Notify::new(),
            gate: Semaphore::new(0),
            spawns: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl VirtDriver for GatedVirt {
    async fn spawn(&self, _host: &HostName, _server: &Server) -> Result<(), String> {
        self.spawns.fetch_add(1, Ordering::SeqCst);
        self.spawning.notify_one();
        self.gate.acquire().await.map_err(|e| e.to_string())?.forget();
        Ok(())
    }

    async fn power(&self, _host: &HostName, _server: &Server, _action: PowerAction) -> Result<(), String> {
        Ok(())
    }

    async fn rebuild(&self, _host: &HostName, _server: &Server) -> Result<(), String> {
        Ok(())
    }

    async fn destroy(&self, _host: &HostName, _server: &Server) {}

    async fn console_log(&self, _host: &HostName, _server: &Server) -> String {
        String::new()
    }
}

fn boot_request(metadata: BTreeMap<String, String>) -> CreateServer {
    CreateServer {
        name: "vm".into(),
        flavor_ref: "1".into(),
        flavor: netcache_domain::flavor::built_in_snapshot("1").unwrap(),
        image_ref: "img".into(),
        metadata,
        access_ip_v4: None,
        access_ip_v6: None,
        key_name: None,
        security_groups: vec![],
        group: None,
        networks: NetworkRequests::None,
        allocate_network: false,
        attributes: Default::default(),
        injected_files: vec![],
    }
}

fn items(range: std::ops::Range<usize>) -> BTreeMap<String, String> {
    range.map(|i| (format!("k{i}"), format!("v{i}"))).collect()
}

fn set_metadata(items: BTreeMap<String, String>, replace: bool) -> ServerEdit {
    ServerEdit::SetMetadata { items, replace }
}

/// The user's boot of a server without ports, with `metadata`: accepted, not built.
async fn create(h: &Harness, metadata: BTreeMap<String, String>) -> Result<ServerId, Error> {
    let server = h.compute.create_server(&Harness::ctx(), boot_request(metadata)).await?;
    Ok(server.id)
}

/// The user's `edit` of `server`.
async fn edit(h: &Harness, server: ServerId, edit: &ServerEdit) -> Result<Server, Error> {
    h.compute.edit_server(&Harness::ctx(), server, edit).await
}

/// The build is spawning (its next write is ACTIVE, with its ports) when the
/// user renames the server: the rename is kept, and the build finishes without
/// a retried step. The row still says `networking`: a boot writes no state
/// between its accept and ACTIVE (two commits per boot).
/// Invariant 22.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_during_a_build_is_kept_and_the_build_goes_on() {
    let virt = Arc::new(GatedVirt::closed());
    let h = Harness::with_virt(config(), SimConfig::default(), virt.clone()).await;
    let server = create(&h, BTreeMap::new()).await.unwrap();
    virt.spawning.notified().await;

    let rename = ServerEdit::Update {
        name: Some("renamed".into()),
        access_ip_v4: Some("192.0.2.7".parse().unwrap()),
        access_ip_v6: None,
        description: Some(Some("renamed in flight".into())),
        hostname: None,
        pinned_availability_zone: None,
        auto_disk_config: None,
    };
    let edited = edit(&h, server, &rename).await.unwrap();
    assert_eq!(
        (edited.name.as_str(), edited.task_state),
        ("renamed", Some(TaskState::Networking))
    );
    // Metadata waits for an active server without a task, as in Nova (409).
    let refused = edit(&h, server, &set_metadata(items(0..1), false)).await.unwrap_err();
    assert!(matches!(refused, Error::InvalidState { .. }), "{refused:?}");
    assert_eq!(
        refused.to_string(),
        format!("Cannot 'update metadata' instance {server} while it is in vm_state building")
    );

    virt.gate.add_permits(100);
    h.compute.settle().await;
    let built = h.compute.server(server).await.unwrap();
    assert_eq!(built.vm_state, VmState::Active, "{built:?}");
    assert_eq!(
        (built.name.as_str(), built.access_ip_v4),
        ("renamed", Some("192.0.2.7".parse().unwrap()))
    );
    assert_eq!(
        virt.spawns.load(Ordering::SeqCst),
        1,
        "the build's write after the rename was retried from its records"
    );
}

/// Concurrent edits each land (compare-and-swap, retried on a conflict); the
/// quota counts the merged metadata; deleting a missing item is a 404 first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_metadata_edits_all_land_within_the_quota() {
    let h = Harness::start(config()).await;
    let server = create(&h, items(0..2)).await.unwrap();
    h.compute.settle().await;

    let writers = (10..14).map(|i| {
        let compute = h.compute.clone();
        tokio::spawn(async move {
            let edit = set_metadata(items(i..i + 1), false);
            compute.edit_server(&Harness::ctx(), server, &edit).await
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap().unwrap();
    }
    let stored = h.compute.server(server).await.unwrap();
    let keys: Vec<&str> = stored.metadata.keys().map(String::as_str).collect();
    assert_eq!(keys, ["k0", "k1", "k10", "k11", "k12", "k13"]);

    // Six stored and 123 new ones: one over.
    let new_items = items(0..MAX_METADATA_ITEMS - 5)
        .into_iter()
        .map(|(k, v)| (format!("new-{k}"), v))
        .collect();
    let refused = edit(&h, server, &set_metadata(new_items, false)).await.unwrap_err();
    assert_eq!(refused.to_string(), "Maximum number of metadata items exceeds 128");
    let replaced = set_metadata(items(0..MAX_METADATA_ITEMS), true);
    let stored = edit(&h, server, &replaced).await.unwrap();
    assert_eq!(stored.metadata.len(), MAX_METADATA_ITEMS);

    let missing = ServerEdit::DeleteMetadata { key: "nope".into() };
    let refused = edit(&h, server, &missing).await.unwrap_err();
    assert!(matches!(refused, Error::MetadataItemNotFound), "{refused:?}");

    let refused = create(&h, items(0..MAX_METADATA_ITEMS + 1)).await.unwrap_err();
    assert!(
        matches!(refused, Error::OverQuota(Refusal::MetadataItems { allowed: 128 })),
        "{refused:?}"
    );
}
