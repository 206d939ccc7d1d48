//! Configuration of the compute service. Every field has a default that needs no
//! set-up.

use std::time::Duration;

use netcache_domain::HostName;
use netcache_domain::cache::CacheOptions;

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
    pub cache: CacheOptions,
    pub virt: VirtConfig,
    /// Simulates a process death at a point of the allocation protocol (tests, drills).
    pub crash_at: Option<CrashPoint>,
}

impl Default for ComputeConfig {
    fn default() -> Self {
        Self {
            hosts: (1..=3).map(|i| HostName::from(format!("host{i}"))).collect(),
            availability_zone: "nova".to_owned(),
            max_attempts: 3,
            create_attempts_per_host: 1,
            network_details_ttl: Duration::from_secs(300),
            cache: CacheOptions::default(),
            virt: VirtConfig::default(),
            crash_at: None,
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

/// Where a simulated crash stops the allocation protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// The intent is committed; the create-port call is not sent.
    AfterIntentRecorded,
    /// The create-port call went through; its result is not recorded.
    AfterCreateSent,
}

impl std::str::FromStr for CrashPoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "after-intent-recorded" => Ok(Self::AfterIntentRecorded),
            "after-create-sent" => Ok(Self::AfterCreateSent),
            other => Err(format!(
                "unknown crash point {other:?}: use after-intent-recorded or after-create-sent"
            )),
        }
    }
}
