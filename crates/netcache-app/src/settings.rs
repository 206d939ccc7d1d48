//! Configuration: defaults, then a TOML file, then `NETCACHE_*` environment
//! variables, then flags. A bad value stops start-up with an error naming the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
#[cfg(test)]
use netcache_compute::Sabotage;
use netcache_compute::{ComputeConfig, GcConfig, HealConfig, OperationsConfig, RetentionConfig, VirtConfig};
use netcache_domain::HostName;
use netcache_domain::cache::{CacheOptions, OnLost};
use netcache_domain::gc::{ForeignPolicy, GcPolicy};
use serde::{Deserialize, Serialize};

mod nova;
mod quota;
pub mod redact;

pub use nova::NovaSettings;
pub use quota::QuotaSettings;

/// Sections whose keys `NETCACHE_<SECTION>_<KEY>` address.
const SECTIONS: [&str; 10] = [
    "neutron",
    "compute",
    "api",
    "auth",
    "heal",
    "gc",
    "retention",
    "operations",
    "quota",
    "nova",
];

/// `Debug` shows no password (`redact`).
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Where the compute API listens.
    pub listen: SocketAddr,
    /// `sqlite:PATH` (default, created on first run) or `postgres://…`.
    pub database: String,
    pub api: ApiSettings,
    pub auth: AuthSettings,
    pub neutron: NeutronSettings,
    pub compute: ComputeSettings,
    pub heal: HealSettings,
    pub gc: GcSettings,
    pub retention: RetentionSettings,
    pub operations: OperationsSettings,
    /// Default quota limits (Nova's `[quota]`).
    pub quota: QuotaSettings,
    /// An existing Nova cloud, for `netcache nova …`.
    pub nova: NovaSettings,
    /// Policy rules overridden by name (oslo.policy check strings), e.g.
    /// `"os_compute_api:servers:create" = "role:admin"`.
    pub policy: BTreeMap<String, String>,
}

/// Who callers are: `noauth` (identity headers; the zero-config quick start) or
/// `keystone` (tokens validated against Keystone, as keystonemiddleware does).
/// `Debug` shows no password (`redact`).
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSettings {
    pub strategy: String,
    /// Keystone v3 URL, and netcache's service user (password auth, project-scoped).
    pub auth_url: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub project_name: Option<String>,
    pub user_domain_name: String,
    pub project_domain_name: String,
    /// Seconds a token validation is reused.
    pub cache_ttl: f64,
    /// Serve noauth on an address other than loopback (anyone could claim admin).
    pub allow_noauth_on_public: bool,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            strategy: "noauth".to_owned(),
            auth_url: None,
            username: None,
            password: None,
            project_name: None,
            user_domain_name: "Default".to_owned(),
            project_domain_name: "Default".to_owned(),
            cache_ttl: 300.0,
            allow_noauth_on_public: false,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OperationsSettings {
    /// Seconds an operation's owner may go silent before another process takes it over.
    pub lease: f64,
    /// Operations run at once by this process.
    pub workers: usize,
    /// Operations held by this process (running or waiting); beyond it, 503.
    pub max_queued: usize,
    /// Builds at once per host (Nova's max_concurrent_builds).
    pub max_concurrent_builds: usize,
    /// Failed attempts after which an operation ends with a fault.
    pub max_attempts: u32,
}

impl Default for OperationsSettings {
    fn default() -> Self {
        let d = OperationsConfig::default();
        Self {
            lease: d.lease.as_secs_f64(),
            workers: d.workers,
            max_queued: d.max_queued,
            max_concurrent_builds: d.max_concurrent_builds,
            max_attempts: d.max_attempts,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealSettings {
    /// Seconds between heal passes; 0 disables the loop.
    pub interval: f64,
    /// Up to this many seconds added to each wait.
    pub jitter: f64,
    /// Servers per Neutron port list.
    pub batch_size: usize,
    /// `drop` a lost port from the cache, or `keep` its last entry.
    pub on_lost: OnLostSetting,
    /// Seconds a deleted server stays watched for ghosts.
    pub deleted_window: f64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnLostSetting {
    Drop,
    Keep,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcSettings {
    /// Seconds between GC passes; 0 disables the loop.
    pub interval: f64,
    /// Seconds a ghost must have been known before it may be deleted.
    pub grace: f64,
    /// Sweeps a ghost must have been seen in.
    pub min_sightings: u32,
    /// `report` foreign ghosts, or `unbind` them.
    pub foreign: ForeignSetting,
    /// Report what would be done; do nothing.
    pub dry_run: bool,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ForeignSetting {
    Report,
    Unbind,
}

impl Default for HealSettings {
    fn default() -> Self {
        let d = HealConfig::default();
        Self {
            interval: d.interval.as_secs_f64(),
            jitter: d.jitter.as_secs_f64(),
            batch_size: d.batch_size,
            on_lost: OnLostSetting::Drop,
            deleted_window: d.deleted_window.as_secs_f64(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionSettings {
    /// Seconds between purges; 0 disables the loop.
    pub interval: f64,
    /// Seconds after its deletion a server is purged with its rows.
    pub purge_deleted_after: f64,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        let d = RetentionConfig::default();
        Self {
            interval: d.interval.as_secs_f64(),
            purge_deleted_after: d.purge_deleted_after.as_secs_f64(),
        }
    }
}

impl Default for GcSettings {
    fn default() -> Self {
        let d = GcConfig::default();
        Self {
            interval: d.interval.as_secs_f64(),
            grace: d.policy.grace.as_seconds_f64(),
            min_sightings: d.policy.min_sightings,
            foreign: ForeignSetting::Report,
            dry_run: d.dry_run,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiSettings {
    /// Project of requests without `X-Project-Id`.
    pub default_project: String,
    /// Base URL in `links`; defaults to `http://<listen>`.
    pub public_url: Option<String>,
    /// Seconds a client has to send a request head (from connecting, or from the
    /// first byte of a request on a kept-alive connection).
    pub header_read_timeout: f64,
    /// Seconds a kept-alive connection may wait for its next request (and a
    /// request for its body) before it is closed.
    pub idle_timeout: f64,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Largest request body in bytes; beyond it, 413 (oslo.middleware's
    /// `max_request_body_size`, whose default this is).
    pub max_body_bytes: usize,
    /// A second address serving only `GET /metrics`, with no identity (for
    /// Prometheus); unset, `/metrics` is on the API, for admins.
    pub metrics_listen: Option<SocketAddr>,
    /// Servers a list page holds at most, and without `limit` (Nova's `max_limit`).
    pub max_limit: usize,
    /// Detail pages built at once; more wait their turn (memory stays bounded).
    pub detail_pages_at_once: usize,
}

/// `Debug` shows no password (`redact`).
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NeutronSettings {
    /// Neutron endpoint; unset runs the embedded Neutron, or with `auth_url`
    /// takes the catalog's (set, it overrides the catalog, as keystoneauth's
    /// `endpoint_override` does).
    pub url: Option<String>,
    /// Per-call timeout in seconds.
    pub timeout: f64,
    /// Retries of idempotent calls (never of a create).
    pub retries: u32,
    /// Keystone v3 URL; unset means no auth (static `url`).
    pub auth_url: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub user_domain_name: String,
    pub project_name: Option<String>,
    pub project_domain_name: String,
    pub application_credential_id: Option<String>,
    pub application_credential_secret: Option<String>,
    pub region: Option<String>,
    pub interface: String,
    /// Where the embedded Neutron listens.
    pub embedded_listen: SocketAddr,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ComputeSettings {
    pub hosts: Vec<String>,
    pub availability_zone: String,
    pub max_attempts: u32,
    pub create_attempts_per_host: u32,
    /// Seconds network details are reused.
    pub network_details_ttl: f64,
    /// The pool of a floating IP asked for without one (Nova's `[neutron] default_floating_pool`).
    pub default_floating_pool: String,
    /// Hosts whose spawns always fail (to force reschedules).
    pub failing_hosts: Vec<String>,
    /// Probability of a spawn failure on any host.
    pub spawn_failure_rate: f64,
    pub seed: u64,
    /// Seconds to wait for `network-vif-plugged` before spawning; 0 does not wait.
    pub vif_plugging_timeout: f64,
    /// Whether that wait timing out fails the build.
    pub vif_plugging_is_fatal: bool,
    /// Simulated crash point (`after-intent-recorded`, `after-create-sent`): drills only.
    pub crash_at: Option<String>,
    /// Test hook: a deliberately broken build the chaos checker must catch. Only
    /// `skip-release` (releasing a VIF removes its record without deleting or
    /// unbinding the port in Neutron, so the port leaks). Never set it in production.
    pub sabotage: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8774".parse().expect("valid default address"),
            database: "sqlite:netcache.db".to_owned(),
            api: ApiSettings::default(),
            auth: AuthSettings::default(),
            neutron: NeutronSettings::default(),
            compute: ComputeSettings::default(),
            heal: HealSettings::default(),
            gc: GcSettings::default(),
            retention: RetentionSettings::default(),
            operations: OperationsSettings::default(),
            quota: QuotaSettings::default(),
            nova: NovaSettings::default(),
            policy: BTreeMap::new(),
        }
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            default_project: "demo".to_owned(),
            public_url: None,
            header_read_timeout: 10.0,
            idle_timeout: 60.0,
            max_connections: 1024,
            // Nova's API pipeline limits bodies with oslo.middleware's sizelimit: 112 KiB.
            max_body_bytes: 114_688,
            metrics_listen: None,
            max_limit: netcache_api::MAX_LIMIT,
            detail_pages_at_once: netcache_api::DETAIL_PAGES_AT_ONCE,
        }
    }
}

impl Default for NeutronSettings {
    fn default() -> Self {
        Self {
            url: None,
            timeout: 30.0,
            retries: 3,
            auth_url: None,
            username: None,
            password: None,
            user_domain_name: "Default".to_owned(),
            project_name: None,
            project_domain_name: "Default".to_owned(),
            application_credential_id: None,
            application_credential_secret: None,
            region: None,
            interface: "public".to_owned(),
            embedded_listen: "127.0.0.1:9696".parse().expect("valid default address"),
        }
    }
}

impl Default for ComputeSettings {
    fn default() -> Self {
        let defaults = ComputeConfig::default();
        Self {
            hosts: defaults.hosts.iter().map(ToString::to_string).collect(),
            availability_zone: defaults.availability_zone,
            max_attempts: defaults.max_attempts,
            create_attempts_per_host: defaults.create_attempts_per_host,
            network_details_ttl: defaults.network_details_ttl.as_secs_f64(),
            default_floating_pool: defaults.default_floating_pool,
            failing_hosts: vec![],
            spawn_failure_rate: 0.0,
            seed: 0,
            vif_plugging_timeout: defaults.vif_plugging_timeout.as_secs_f64(),
            vif_plugging_is_fatal: defaults.vif_plugging_is_fatal,
            crash_at: None,
            sabotage: None,
        }
    }
}

impl Settings {
    /// Defaults < file < environment < `overrides` (from flags).
    pub fn load(file: Option<&Path>, overrides: &[(&str, String)]) -> anyhow::Result<Self> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = file {
            if !path.exists() {
                bail!("config file {} does not exist", path.display());
            }
            figment = figment.merge(Toml::file(path));
        }
        // NETCACHE_URL, _PROJECT and _LOG belong to the client commands and logging.
        // The client's and the log's variables, and the test suites' (`NETCACHE_TEST_*`,
        // `NETCACHE_E2E_*`, `NETCACHE_CHAOS_*`), which a test's `serve` inherits.
        let not_settings = |key: &figment::value::UncasedStr| {
            !["url", "project", "log"].iter().any(|k| key == *k)
                && !["test_", "e2e_", "chaos_"]
                    .iter()
                    .any(|p| key.as_str().to_ascii_lowercase().starts_with(p))
        };
        figment = figment.merge(Env::prefixed("NETCACHE_").filter(not_settings).map(|key| {
            let key = key.as_str().to_ascii_lowercase();
            SECTIONS
                .iter()
                .find_map(|s| key.strip_prefix(&format!("{s}_")).map(|rest| format!("{s}.{rest}")))
                .unwrap_or(key)
                .into()
        }));
        for (key, value) in overrides {
            figment = figment.merge(Serialized::default(key, value));
        }
        let settings: Settings = figment.extract().context("invalid configuration")?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> anyhow::Result<()> {
        self.validate_auth()?;
        self.policy()?;
        self.quota.validate()?;
        self.nova.validate()?;
        if !(self.neutron.timeout > 0.0 && self.neutron.timeout.is_finite()) {
            bail!("invalid configuration: neutron.timeout must be a positive number of seconds");
        }
        if self.compute.hosts.is_empty() {
            bail!("invalid configuration: compute.hosts must name at least one host");
        }
        if self.compute.max_attempts == 0 {
            bail!("invalid configuration: compute.max_attempts must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.compute.spawn_failure_rate) {
            bail!("invalid configuration: compute.spawn_failure_rate must be between 0 and 1");
        }
        for (key, seconds) in [
            ("compute.network_details_ttl", self.compute.network_details_ttl),
            ("compute.vif_plugging_timeout", self.compute.vif_plugging_timeout),
            ("heal.interval", self.heal.interval),
            ("heal.jitter", self.heal.jitter),
            ("heal.deleted_window", self.heal.deleted_window),
            ("gc.interval", self.gc.interval),
            ("gc.grace", self.gc.grace),
            ("retention.interval", self.retention.interval),
            ("retention.purge_deleted_after", self.retention.purge_deleted_after),
            ("operations.lease", self.operations.lease),
        ] {
            if !(seconds >= 0.0 && seconds.is_finite()) {
                bail!("invalid configuration: {key} must be a non-negative number of seconds");
            }
        }
        if self.api.detail_pages_at_once == 0 {
            bail!("invalid configuration: api.detail_pages_at_once must be at least 1");
        }
        if self.api.max_limit == 0 {
            bail!("invalid configuration: api.max_limit must be at least 1");
        }
        if self.operations.lease < 1.0 {
            bail!("invalid configuration: operations.lease must be at least 1 second");
        }
        if self.operations.workers == 0 || self.operations.max_queued == 0 || self.operations.max_concurrent_builds == 0
        {
            bail!("invalid configuration: operations.workers, max_queued and max_concurrent_builds must be positive");
        }
        for (key, seconds) in [
            ("api.header_read_timeout", self.api.header_read_timeout),
            ("api.idle_timeout", self.api.idle_timeout),
        ] {
            if !(seconds > 0.0 && seconds.is_finite()) {
                bail!("invalid configuration: {key} must be a positive number of seconds");
            }
        }
        if self.api.max_connections == 0 || self.api.max_body_bytes == 0 {
            bail!("invalid configuration: api.max_connections and api.max_body_bytes must be positive");
        }
        if self.heal.batch_size == 0 || self.heal.batch_size > 500 {
            bail!("invalid configuration: heal.batch_size must be between 1 and 500");
        }
        self.test_hooks()
    }

    /// The test hooks are parsed strictly where they exist (the `testing`
    /// feature), and refused where they do not.
    #[cfg(feature = "testing")]
    fn test_hooks(&self) -> anyhow::Result<()> {
        self.crash_point()?;
        self.sabotage()?;
        Ok(())
    }

    #[cfg(not(feature = "testing"))]
    fn test_hooks(&self) -> anyhow::Result<()> {
        for (key, value) in [
            ("crash_at", &self.compute.crash_at),
            ("sabotage", &self.compute.sabotage),
        ] {
            if value.is_some() {
                bail!(
                    "invalid configuration: compute.{key} is a test hook, and this build has none (it is built with --features testing)"
                );
            }
        }
        Ok(())
    }

    #[cfg(feature = "testing")]
    fn crash_point(&self) -> anyhow::Result<Option<netcache_compute::CrashPoint>> {
        test_hook("compute.crash_at", self.compute.crash_at.as_deref())
    }

    #[cfg(feature = "testing")]
    fn sabotage(&self) -> anyhow::Result<Option<netcache_compute::Sabotage>> {
        test_hook("compute.sabotage", self.compute.sabotage.as_deref())
    }

    #[must_use]
    pub fn compute_config(&self) -> ComputeConfig {
        let c = &self.compute;
        ComputeConfig {
            hosts: c.hosts.iter().map(|h| HostName::from(h.as_str())).collect(),
            availability_zone: c.availability_zone.clone(),
            max_attempts: c.max_attempts,
            create_attempts_per_host: c.create_attempts_per_host,
            network_details_ttl: Duration::from_secs_f64(c.network_details_ttl),
            default_floating_pool: c.default_floating_pool.clone(),
            virt: VirtConfig {
                failing_hosts: c.failing_hosts.iter().map(|h| HostName::from(h.as_str())).collect(),
                failure_rate: c.spawn_failure_rate,
                seed: c.seed,
            },
            cache: CacheOptions {
                on_lost: match self.heal.on_lost {
                    OnLostSetting::Drop => OnLost::Drop,
                    OnLostSetting::Keep => OnLost::Keep,
                },
                ..CacheOptions::default()
            },
            heal: HealConfig {
                interval: Duration::from_secs_f64(self.heal.interval),
                jitter: Duration::from_secs_f64(self.heal.jitter),
                batch_size: self.heal.batch_size,
                deleted_window: Duration::from_secs_f64(self.heal.deleted_window),
            },
            operations: OperationsConfig {
                lease: Duration::from_secs_f64(self.operations.lease),
                workers: self.operations.workers,
                max_queued: self.operations.max_queued,
                max_concurrent_builds: self.operations.max_concurrent_builds,
                max_attempts: self.operations.max_attempts.max(1),
                ..OperationsConfig::default()
            },
            gc: GcConfig {
                interval: Duration::from_secs_f64(self.gc.interval),
                policy: GcPolicy {
                    grace: chrono::TimeDelta::from_std(Duration::from_secs_f64(self.gc.grace))
                        .unwrap_or(chrono::TimeDelta::MAX),
                    min_sightings: self.gc.min_sightings,
                    foreign: match self.gc.foreign {
                        ForeignSetting::Report => ForeignPolicy::Report,
                        ForeignSetting::Unbind => ForeignPolicy::Unbind,
                    },
                },
                dry_run: self.gc.dry_run,
            },
            retention: RetentionConfig {
                interval: Duration::from_secs_f64(self.retention.interval),
                purge_deleted_after: Duration::from_secs_f64(self.retention.purge_deleted_after),
            },
            vif_plugging_timeout: Duration::from_secs_f64(c.vif_plugging_timeout),
            vif_plugging_is_fatal: c.vif_plugging_is_fatal,
            quota: self.quota.defaults(),
            #[cfg(feature = "testing")]
            crash_at: self.crash_point().ok().flatten(),
            #[cfg(feature = "testing")]
            sabotage: self.sabotage().ok().flatten(),
        }
    }

    #[must_use]
    pub fn public_url(&self) -> String {
        self.api
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
    }
}

impl Settings {
    fn validate_auth(&self) -> anyhow::Result<()> {
        let a = &self.auth;
        match a.strategy.as_str() {
            "noauth" if !self.listen.ip().is_loopback() && !a.allow_noauth_on_public => bail!(
                "invalid configuration: auth.strategy = noauth on {} lets anyone claim any project and role; \
                 use auth.strategy = keystone, listen on 127.0.0.1, or set auth.allow_noauth_on_public = true",
                self.listen
            ),
            "noauth" => Ok(()),
            "keystone" => {
                for (key, value) in [
                    ("auth_url", &a.auth_url),
                    ("username", &a.username),
                    ("password", &a.password),
                    ("project_name", &a.project_name),
                ] {
                    if value.as_deref().is_none_or(str::is_empty) {
                        bail!("invalid configuration: auth.strategy = keystone needs auth.{key}");
                    }
                }
                if !(a.cache_ttl >= 0.0 && a.cache_ttl.is_finite()) {
                    bail!("invalid configuration: auth.cache_ttl must be a number of seconds");
                }
                Ok(())
            }
            other => bail!("invalid configuration: auth.strategy {other:?}: use noauth or keystone"),
        }
    }

    /// The Keystone validation of `auth.strategy = keystone`; `None` for noauth.
    /// Nova's default rules with the `[policy]` overrides.
    pub fn policy(&self) -> anyhow::Result<netcache_api::policy::Policy> {
        netcache_api::policy::Policy::with_overrides(&self.policy)
            .map_err(|e| anyhow::anyhow!("invalid configuration: policy: {e}"))
    }

    #[must_use]
    pub fn keystone_auth(&self) -> Option<std::sync::Arc<netcache_api::auth::KeystoneAuth>> {
        let a = &self.auth;
        if a.strategy != "keystone" {
            return None;
        }
        let field = |v: &Option<String>| v.clone().unwrap_or_default();
        let auth_url = field(&a.auth_url);
        let keystone = netcache_api::auth::HttpKeystone::new(
            &auth_url,
            &field(&a.username),
            &field(&a.password),
            &field(&a.project_name),
            &a.user_domain_name,
            &a.project_domain_name,
        );
        Some(std::sync::Arc::new(netcache_api::auth::KeystoneAuth::new(
            std::sync::Arc::new(keystone),
            &auth_url,
            Duration::from_secs_f64(a.cache_ttl),
        )))
    }
}

/// A test hook's value, parsed strictly: an unknown one is a configuration error.
#[cfg(feature = "testing")]
fn test_hook<T: std::str::FromStr<Err = String>>(key: &str, value: Option<&str>) -> anyhow::Result<Option<T>> {
    value
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("invalid configuration: {key}: {e}"))
}

#[cfg(test)]
// figment's Jail fixes the closure's error type.
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_config() {
        let s = Settings::default();
        assert!(s.validate().is_ok());
        assert_eq!(s.compute.hosts, ["host1", "host2", "host3"]);
        assert_eq!(s.listen.to_string(), "127.0.0.1:8774");
    }

    #[test]
    fn a_bad_value_names_its_key() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("NETCACHE_NEUTRON_TIMEOUT", "soon");
            let err = format!("{:#}", Settings::load(None, &[]).unwrap_err());
            assert!(
                err.to_lowercase().contains("neutron.timeout") && err.contains("NETCACHE_"),
                "{err}"
            );
            Ok(())
        });
    }

    #[test]
    fn client_log_and_test_variables_are_not_settings() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("NETCACHE_LOG", "debug");
            jail.set_env("NETCACHE_URL", "http://127.0.0.1:1");
            jail.set_env("NETCACHE_PROJECT", "p");
            jail.set_env("NETCACHE_GC_GRACE", "60");
            jail.set_env("NETCACHE_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres");
            jail.set_env("NETCACHE_TEST_REQUIRE_ENV", "1");
            jail.set_env("NETCACHE_E2E_NEUTRON_URL", "http://127.0.0.1:1");
            jail.set_env("NETCACHE_CHAOS_SEED", "7");
            let s = Settings::load(None, &[]).unwrap();
            assert_eq!(s.gc.grace, 60.0);
            Ok(())
        });
    }

    #[test]
    fn file_env_and_flags_layer_in_order() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "netcache.toml",
                "database = \"sqlite:from-file.db\"\n[compute]\nmax_attempts = 5\n",
            )?;
            jail.set_env("NETCACHE_COMPUTE_MAX_ATTEMPTS", "7");
            let s = Settings::load(Some(Path::new("netcache.toml")), &[("listen", "127.0.0.1:9999".into())]).unwrap();
            assert_eq!(s.database, "sqlite:from-file.db");
            assert_eq!(s.compute.max_attempts, 7);
            assert_eq!(s.listen.to_string(), "127.0.0.1:9999");
            Ok(())
        });
    }

    #[test]
    fn unknown_keys_and_bad_ranges_are_refused() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("bad.toml", "[compute]\nmax_attempt = 5\n")?;
            let err = format!("{:#}", Settings::load(Some(Path::new("bad.toml")), &[]).unwrap_err());
            assert!(err.contains("max_attempt"), "{err}");
            jail.create_file("rate.toml", "[compute]\nspawn_failure_rate = 2.0\n")?;
            let err = format!("{:#}", Settings::load(Some(Path::new("rate.toml")), &[]).unwrap_err());
            assert!(err.contains("compute.spawn_failure_rate"), "{err}");
            jail.create_file("sabotage.toml", "[compute]\nsabotage = \"skip-releases\"\n")?;
            let err = format!(
                "{:#}",
                Settings::load(Some(Path::new("sabotage.toml")), &[]).unwrap_err()
            );
            assert!(err.contains("compute.sabotage"), "{err}");
            jail.create_file("hook.toml", "[compute]\nsabotage = \"skip-release\"\n")?;
            let s = Settings::load(Some(Path::new("hook.toml")), &[]).unwrap();
            assert_eq!(s.compute_config().sabotage, Some(Sabotage::SkipRelease));
            Ok(())
        });
    }

    #[test]
    fn noauth_stays_on_loopback_and_keystone_needs_its_credentials() {
        figment::Jail::expect_with(|jail| {
            let load = |name: &str| Settings::load(Some(Path::new(name)), &[]).map_err(|e| format!("{e:#}"));
            jail.create_file("public.toml", "listen = \"0.0.0.0:8774\"\n")?;
            let err = load("public.toml").unwrap_err();
            assert!(err.contains("auth.allow_noauth_on_public"), "{err}");
            jail.create_file(
                "forced.toml",
                "listen = \"0.0.0.0:8774\"\n[auth]\nallow_noauth_on_public = true\n",
            )?;
            assert!(load("forced.toml").is_ok());
            jail.create_file(
                "keystone.toml",
                "[auth]\nstrategy = \"keystone\"\nauth_url = \"http://k/v3\"\n",
            )?;
            let err = load("keystone.toml").unwrap_err();
            assert!(err.contains("auth.username"), "{err}");
            jail.create_file("other.toml", "[auth]\nstrategy = \"basic\"\n")?;
            assert!(load("other.toml").unwrap_err().contains("auth.strategy"));
            let s = load("forced.toml").unwrap();
            assert!(s.keystone_auth().is_none(), "noauth by default");
            Ok(())
        });
    }

    #[test]
    fn quota_defaults_are_novas_and_set_by_novas_option_names() {
        use netcache_domain::quota::{QuotaSet, Resource};
        assert_eq!(Settings::default().compute_config().quota, QuotaSet::default());
        figment::Jail::expect_with(|jail| {
            let load = |name: &str| Settings::load(Some(Path::new(name)), &[]).map_err(|e| format!("{e:#}"));
            jail.create_file(
                "quota.toml",
                "[quota]\ninstances = -1\ninjected_file_path_length = 100\n",
            )?;
            jail.set_env("NETCACHE_QUOTA_CORES", "4");
            let quota = load("quota.toml").unwrap().compute_config().quota;
            assert_eq!(quota.get(Resource::Instances), -1);
            assert_eq!(quota.get(Resource::Cores), 4);
            assert_eq!(quota.get(Resource::InjectedFilePathBytes), 100);
            assert_eq!(quota.get(Resource::Ram), 51200, "the others keep Nova's");
            jail.create_file("bad.toml", "[quota]\nram = -2\n")?;
            assert!(load("bad.toml").unwrap_err().contains("quota.ram"));
            jail.create_file("unknown.toml", "[quota]\nfloating_ips = 5\n")?;
            assert!(load("unknown.toml").unwrap_err().contains("floating_ips"));
            Ok(())
        });
    }

    #[test]
    fn policy_overrides_are_read_by_rule_name_and_checked_at_start() {
        figment::Jail::expect_with(|jail| {
            let load = |name: &str| Settings::load(Some(Path::new(name)), &[]).map_err(|e| format!("{e:#}"));
            jail.create_file(
                "policy.toml",
                "[policy]\n\"os_compute_api:servers:create\" = \"role:admin\"\n",
            )?;
            let policy = load("policy.toml").unwrap().policy().unwrap();
            assert!(!policy.allows("os_compute_api:servers:create", &["member".to_owned()]));
            jail.create_file("typo.toml", "[policy]\n\"os_compute_api:server:create\" = \"@\"\n")?;
            let err = load("typo.toml").unwrap_err();
            assert!(
                err.contains("policy: os_compute_api:server:create: no such rule"),
                "{err}"
            );
            Ok(())
        });
    }
}
