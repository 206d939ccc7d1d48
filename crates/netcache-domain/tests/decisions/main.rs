//! The domain's decisions as data.
//!
//! Each table is one decision: a row is a case (inputs → the expected decision)
//! with a short name, and every table goes through the one [`check`] helper, which
//! runs all rows and names each one that fails. The `properties` module then
//! checks the invariants of docs/ARCHITECTURE.md (1, 3, 6, 11, 15) over generated
//! inputs with proptest, on a fixed seed.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use netcache_domain::allocation::{Resolution, resolve_ambiguous_create};
use netcache_domain::cache::{CacheOutcome, LostReason, LostVif, Observed, OnLost};
use netcache_domain::fixtures::{self, present};
use netcache_domain::gc::{ForeignPolicy, GcAction, GcPolicy, GhostFacts, SkipReason, judge, recheck};
use netcache_domain::ghost::{GhostOwner, GhostSighting, classify_ports, owner_of};
use netcache_domain::intent::IntentState;
use netcache_domain::marker::OwnershipMarker;
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::neutron::{FloatingIp, HostRoute, Network, Port, PortFixedIp, Subnet};
use netcache_domain::vif::{VifOrigin, VifRecord, VifState};
use netcache_domain::{DeploymentId, IntentId, NetworkId, PortId, ProjectId, ServerId, SubnetId};
use serde_json::{Value, json};

mod allocation;
mod cache_membership;
mod cache_render;
mod flavors;
mod gc_judge;
mod gc_recheck;
mod ghosts;
mod properties;
mod quotas;

// ---------------------------------------------------------------------------
// The one check helper
// ---------------------------------------------------------------------------

/// One row of a decision table.
trait Case {
    type Decision: PartialEq + Debug;
    fn name(&self) -> &str;
    /// What the domain decides for this row's inputs.
    fn decide(&self) -> Self::Decision;
    /// What the row says it must decide.
    fn expected(&self) -> Self::Decision;
}

/// Runs every row and fails once, naming each row whose decision differs.
fn check<C: Case>(table: &[C]) {
    assert!(!table.is_empty(), "an empty table checks nothing");
    let mut names = HashSet::new();
    let failures: Vec<String> = table
        .iter()
        .filter_map(|case| {
            assert!(names.insert(case.name()), "two rows are named {:?}", case.name());
            let (got, want) = (case.decide(), case.expected());
            (got != want).then(|| format!("row {:?}:\n   got: {got:?}\n  want: {want:?}", case.name()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Fixtures: fixed ids, one server, one deployment
// ---------------------------------------------------------------------------

const DEPLOYMENT: &str = "nc-test";
const OTHER_DEPLOYMENT: &str = "nc-other";
const SERVER: &str = "6c1d9c5e-2b4f-4a0e-9d59-0d8f1b7f0a01";
const OTHER_SERVER: &str = "0f3a0c77-51d2-4b8e-a1d4-7a2e3c9b5d02";
/// The address a port has now (fresh Neutron details).
const FRESH: &str = "10.0.0.5";
/// The address a port had when the previous cache was written.
const STALE: &str = "10.0.0.99";

fn server() -> ServerId {
    SERVER.parse().unwrap()
}

fn deployment() -> DeploymentId {
    DeploymentId::from(DEPLOYMENT)
}

/// Intent number `n`: a fixed uuid.
fn intent(n: u8) -> IntentId {
    format!("00000000-0000-4000-8000-0000000000{n:02x}").parse().unwrap()
}

fn marker(deployment: &str, n: u8) -> OwnershipMarker {
    OwnershipMarker {
        deployment: DeploymentId::from(deployment),
        intent: intent(n),
    }
}

/// A plain port of SERVER on net1/sub1, no marker, revision 1.
fn port(id: &str) -> Port {
    let mut port = fixtures::port(id, &server(), FRESH);
    port.revision_number = 1;
    port
}

trait PortExt {
    /// Carries `deployment`'s marker for intent `n` in its tags.
    fn tagged(self, deployment: &str, n: u8) -> Self;
    /// Carries `deployment`'s marker for intent `n` in its name only.
    fn named(self, deployment: &str, n: u8) -> Self;
    fn with_name(self, name: &str) -> Self;
    fn with_tags(self, tags: &[&str]) -> Self;
    fn on(self, device_id: &str) -> Self;
    fn rev(self, revision: u64) -> Self;
    fn ip(self, ip: &str) -> Self;
}

impl PortExt for Port {
    fn tagged(mut self, deployment: &str, n: u8) -> Self {
        self.tags = marker(deployment, n).tags().into_iter().collect();
        self
    }
    fn named(mut self, deployment: &str, n: u8) -> Self {
        self.name = marker(deployment, n).port_name();
        self
    }
    fn with_name(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }
    fn with_tags(mut self, tags: &[&str]) -> Self {
        self.tags = tags.iter().map(|t| (*t).to_owned()).collect();
        self
    }
    fn on(mut self, device_id: &str) -> Self {
        self.device_id = device_id.into();
        self
    }
    fn rev(mut self, revision: u64) -> Self {
        self.revision_number = revision;
        self
    }
    fn ip(mut self, ip: &str) -> Self {
        self.fixed_ips[0].ip_address = ip.parse().unwrap();
        self
    }
}

fn vif(id: &str, position: i64, state: VifState, origin: VifOrigin) -> VifRecord {
    VifRecord {
        port_id: PortId::from(id),
        server_id: server(),
        position,
        origin,
        state,
        intent_id: None,
        network_id: NetworkId::from("net1"),
        requested_fixed_ip: None,
        tag: None,
        details: None,
    }
}

/// SERVER's VIF records, all created by this deployment: (port id, position, state) each.
fn created<'a>(records: impl IntoIterator<Item = (&'a str, i64, VifState)>) -> Vec<VifRecord> {
    records
        .into_iter()
        .map(|(id, position, state)| vif(id, position, state, VifOrigin::Created))
        .collect()
}

/// net1 "private" (owned by proj-net, MTU 1442) with sub1 (IPv4) and sub6 (IPv6 SLAAC).
fn topology() -> fixtures::Topology {
    let net = Network {
        id: NetworkId::from("net1"),
        name: "private".into(),
        project_id: ProjectId::from("proj-net"),
        shared: false,
        external: false,
        mtu: Some(1442),
        subnet_ids: vec![SubnetId::from("sub1"), SubnetId::from("sub6")],
    };
    let sub1 = Subnet {
        id: SubnetId::from("sub1"),
        network_id: NetworkId::from("net1"),
        cidr: "10.0.0.0/24".parse().unwrap(),
        gateway_ip: Some("10.0.0.1".parse().unwrap()),
        enable_dhcp: true,
        dns_nameservers: vec!["8.8.8.8".parse().unwrap()],
        host_routes: vec![HostRoute {
            destination: "192.168.0.0/24".parse().unwrap(),
            nexthop: "10.0.0.1".parse().unwrap(),
        }],
        ipv6_address_mode: None,
    };
    let sub6 = Subnet {
        id: SubnetId::from("sub6"),
        cidr: "fd00:1::/64".parse().unwrap(),
        gateway_ip: Some("fd00:1::1".parse().unwrap()),
        dns_nameservers: vec![],
        host_routes: vec![],
        ipv6_address_mode: Some("slaac".into()),
        ..sub1.clone()
    };
    (
        HashMap::from([(net.id.clone(), net)]),
        HashMap::from([(sub1.id.clone(), sub1), (sub6.id.clone(), sub6)]),
    )
}

/// SERVER's cache rebuilt over [`topology`].
fn build(
    vifs: &[VifRecord],
    previous: &NetworkInfo,
    observed: &HashMap<PortId, Observed>,
    on_lost: OnLost,
) -> CacheOutcome {
    fixtures::build_cache(server(), &topology(), vifs, previous, observed, on_lost)
}

/// A cache holding `ids` (in this order) as they were when their address was STALE.
fn previous(ids: &[&str]) -> NetworkInfo {
    let vifs = created((0..).zip(ids).map(|(position, id)| (*id, position, VifState::Attached)));
    let observed = ids.iter().map(|id| present(port(id).ip(STALE))).collect();
    build(&vifs, &NetworkInfo::default(), &observed, OnLost::Drop).info
}

/// Each cache entry as (port id, first fixed IP): STALE means the previous entry was kept.
fn entries(info: &NetworkInfo) -> Vec<(String, String)> {
    info.0
        .iter()
        .map(|v| {
            let ip = v.fixed_ips().next().and_then(|ip| ip.ip.address.clone());
            (v.id.clone(), ip.unwrap_or_default())
        })
        .collect()
}

/// Who a ghost is expected to belong to.
#[derive(Clone, Copy, Debug)]
enum Owner {
    /// This deployment's, for intent `n`.
    Ours(u8),
    Foreign,
}

impl Owner {
    fn ghost_owner(self) -> GhostOwner {
        match self {
            Self::Ours(n) => GhostOwner::Ours {
                intent: Some(intent(n)),
            },
            Self::Foreign => GhostOwner::Foreign,
        }
    }
}

fn t0() -> DateTime<Utc> {
    "2026-01-02T03:04:05Z".parse().unwrap()
}
