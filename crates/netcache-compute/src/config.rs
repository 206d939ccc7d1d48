//! Configuration of the compute service. Every field has a default that needs no
//! set-up.

use std::time::Duration;

use netcache_domain::HostName;
use netcache_domain::cache::CacheOptions;
use netcache_domain::quota::QuotaSet;

#[derive(Clone, Debug)]
pub struct ComputeConfig {
    /// Compute hosts of this process.
    pub hosts: Vec<HostName>,
    /// Availability zone; ports get `device_owner = compute:<az>`.
    pub availability_zone: String,
    /// Build attempts across hosts before a server goes to ERROR (Nova's `max_attempts`).
    pub max_attempts: u32,
    /// Create-port tries for one slot on one host; an abandoned intent counts as one.
    pub create_attempts_per_host: u32,
    /// How long network and subnet details are reused without asking Neutron.
    pub network_details_ttl: Duration,
    /// The pool (an external network's name or id) of a floating IP asked for
    /// without one (Nova's `[neutron] default_floating_pool`).
    pub default_floating_pool: String,
    pub cache: CacheOptions,
    pub virt: VirtConfig,
    pub heal: HealConfig,
    pub gc: GcConfig,
    pub retention: RetentionConfig,
    /// Wait this long for `network-vif-plugged` of inactive ports before spawning
    /// (Nova's `vif_plugging_timeout`); zero does not wait.
    pub vif_plugging_timeout: Duration,
    /// Whether that timeout fails the build (Nova's `vif_plugging_is_fatal`).
    pub vif_plugging_is_fatal: bool,
    pub operations: OperationsConfig,
    /// The default quota limits (Nova's `[quota]`), for projects and users
    /// without limits of their own, where an admin set no value of the
    /// `default` quota class in their place.
    pub quota: QuotaSet,
    /// Test hook: simulates a process death at a point of the protocol.
    #[cfg(feature = "testing")]
    pub crash_at: Option<CrashPoint>,
    /// Test hook: a deliberate defect, so that a test can prove the chaos
    /// checker catches it.
    #[cfg(feature = "testing")]
    pub sabotage: Option<Sabotage>,
}

impl ComputeConfig {
    /// The node this process runs: named by its hosts, so a restart with the same
    /// hosts is the same node (and takes its operations over at once).
    pub fn node_name(&self) -> String {
        let mut hosts: Vec<&str> = self.hosts.iter().map(HostName::as_str).collect();
        hosts.sort_unstable();
        hosts.join(",")
    }
}

/// Durable operations: leases and bounds.
#[derive(Clone, Debug)]
pub struct OperationsConfig {
    /// How long an operation's owner may go without renewing before any process
    /// takes the operation over (renewed every third of it).
    pub lease: Duration,
    /// Operations this process runs at once.
    pub workers: usize,
    /// Operations this process holds (running or waiting); beyond it, 503.
    pub max_queued: usize,
    /// Builds at once per host (Nova's `max_concurrent_builds`).
    pub max_concurrent_builds: usize,
    /// The audit reports an operation running longer than this as stuck.
    pub stuck_after: Duration,
    /// Failed attempts after which an operation ends with a fault.
    pub max_attempts: u32,
}

impl Default for OperationsConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            workers: 64,
            max_queued: 1000,
            max_concurrent_builds: 10,
            stuck_after: Duration::from_secs(600),
            max_attempts: 10,
        }
    }
}

impl Default for ComputeConfig {
    fn default() -> Self {
        Self {
            hosts: (1..=3).map(|i| HostName::from(format!("host{i}"))).collect(),
            availability_zone: "nova".to_owned(),
            max_attempts: 3,
            create_attempts_per_host: 1,
            network_details_ttl: Duration::from_secs(300),
            default_floating_pool: "nova".to_owned(),
            cache: CacheOptions::default(),
            virt: VirtConfig::default(),
            heal: HealConfig::default(),
            gc: GcConfig::default(),
            retention: RetentionConfig::default(),
            vif_plugging_timeout: Duration::ZERO,
            vif_plugging_is_fatal: true,
            operations: OperationsConfig::default(),
            quota: QuotaSet::default(),
            #[cfg(feature = "testing")]
            crash_at: None,
            #[cfg(feature = "testing")]
            sabotage: None,
        }
    }
}

/// The purge of deleted servers (Nova's `archive_deleted_rows` plus `purge`).
#[derive(Clone, Debug)]
pub struct RetentionConfig {
    /// Time between purges; zero disables the loop (`netcache purge` still works).
    pub interval: Duration,
    /// A deleted server is purged, with its cache, intents and actions, this long
    /// after its deletion (never while heal still watches it for ghosts).
    pub purge_deleted_after: Duration,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(3600),
            purge_deleted_after: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

/// The periodic heal.
#[derive(Clone, Debug)]
pub struct HealConfig {
    /// Time between passes; zero disables the loop (`netcache heal` still works).
    pub interval: Duration,
    /// Each wait is the interval plus up to this much, drawn from a seeded RNG.
    pub jitter: Duration,
    /// Servers per Neutron port list (Neutron's URL limit makes ~100 safe).
    pub batch_size: usize,
    /// Deleted servers stay watched for ghosts this long.
    pub deleted_window: Duration,
}

impl Default for HealConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(60),
            jitter: Duration::from_secs(10),
            batch_size: 100,
            deleted_window: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// The garbage collector.
#[derive(Clone, Debug)]
pub struct GcConfig {
    /// Time between passes; zero disables the loop (`netcache gc` still works).
    pub interval: Duration,
    pub policy: netcache_domain::gc::GcPolicy,
    /// Report what would be done, do nothing.
    pub dry_run: bool,
}

impl Default for GcConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(300),
            policy: netcache_domain::gc::GcPolicy::default(),
            dry_run: false,
        }
    }
}

/// The fake virt driver's injected failures.
#[derive(Clone, Debug, Default)]
pub struct VirtConfig {
    /// Spawning always fails on these hosts.
    pub failing_hosts: Vec<HostName>,
    /// Probability that a spawn fails on any host.
    pub failure_rate: f64,
    /// Seed of the failure draws.
    pub seed: u64,
}

/// The points of the protocol where a process may die; a build with the
/// `testing` feature can simulate a death at one of them (`crash_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// An operation is committed and claimed; none of its steps ran.
    OperationStarted,
    /// A port's release is recorded (`releasing`, out of the cache); Neutron was not asked.
    AfterReleaseRecorded,
    /// Neutron released the port; the record of it is not removed.
    AfterReleaseSent,
    /// Every port of a build is recorded; the spawn did not happen.
    BeforeSpawn,
    /// The intent is committed; the create-port call is not sent.
    AfterIntentRecorded,
    /// The create-port call went through; its result is not recorded.
    AfterCreateSent,
    /// The driver changed a server's power state; the new state is not recorded.
    AfterPowerChanged,
    /// The driver rebuilt a server; the outcome is not recorded.
    AfterRebuildSpawned,
    /// Neutron put one port in (or out of) a security group; nothing is recorded.
    AfterSecurityGroupApplied,
    /// Neutron bound a user's port to its server; the record has no details of it yet.
    AfterUserPortBound,
    /// A GC pass holds the deployment's GC lease; it did nothing yet.
    GcPassStarted,
    /// A heal pass took a shard's lease; it healed none of the shard's servers.
    HealShardTaken,
}

#[cfg(feature = "testing")]
impl std::str::FromStr for CrashPoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "operation-started" => Ok(Self::OperationStarted),
            "after-intent-recorded" => Ok(Self::AfterIntentRecorded),
            "after-create-sent" => Ok(Self::AfterCreateSent),
            "after-release-recorded" => Ok(Self::AfterReleaseRecorded),
            "after-release-sent" => Ok(Self::AfterReleaseSent),
            "before-spawn" => Ok(Self::BeforeSpawn),
            "after-power-changed" => Ok(Self::AfterPowerChanged),
            "after-rebuild-spawned" => Ok(Self::AfterRebuildSpawned),
            "after-security-group-applied" => Ok(Self::AfterSecurityGroupApplied),
            "after-user-port-bound" => Ok(Self::AfterUserPortBound),
            "gc-pass-started" => Ok(Self::GcPassStarted),
            "heal-shard-taken" => Ok(Self::HealShardTaken),
            other => Err(format!(
                "unknown crash point {other:?}: use operation-started, after-intent-recorded, after-create-sent, \
                 after-release-recorded, after-release-sent, before-spawn, after-power-changed, \
                 after-rebuild-spawned, after-security-group-applied, after-user-port-bound, gc-pass-started or heal-shard-taken"
            )),
        }
    }
}

/// A deliberate defect (test hook): a broken build the chaos checker must catch.
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sabotage {
    /// Releasing a VIF (server delete, interface detach, a failed build's ports)
    /// removes its record without deleting or unbinding the port in Neutron: the
    /// port leaks, as it would with a real bug.
    SkipRelease,
    /// Every attempt of a delete fails, as a poison operation would.
    PoisonDelete,
    /// The first attempt of a delete panics, as a bug would.
    PanicOnDelete,
}

#[cfg(feature = "testing")]
impl std::str::FromStr for Sabotage {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "skip-release" => Ok(Self::SkipRelease),
            "poison-delete" => Ok(Self::PoisonDelete),
            "panic-on-delete" => Ok(Self::PanicOnDelete),
            other => Err(format!(
                "unknown sabotage {other:?}: use skip-release, poison-delete or panic-on-delete"
            )),
        }
    }
}
