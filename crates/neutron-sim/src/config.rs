//! Configuration of the simulator and of its fault rules (serde: JSON or TOML).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every extension alias the simulator lists by default. It also implements
/// `auto-allocated-topology`, listed only when named in
/// [`SimConfig::extensions`]: CI's real Neutron does not load that plugin.
pub const ALL_EXTENSIONS: &[&str] = &[
    "binding",
    "empty-string-filtering",
    "ext-gw-mode",
    "external-net",
    "filter-validation",
    "fip-port-details",
    "ip-substring-filtering",
    "net-mtu",
    "pagination",
    "port-security",
    "project-id",
    "revision-if-match",
    "router",
    "security-group",
    "sorting",
    "standard-attr-description",
    "standard-attr-revisions",
    "standard-attr-tag",
    "standard-attr-timestamp",
    "tag-ports-during-bulk-creation",
];

/// Simulator configuration. Every field has a default, so `{}` is a valid config.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Extension aliases to advertise and honour; `None` = all of [`ALL_EXTENSIONS`].
    pub extensions: Option<Vec<String>>,
    /// Binding a port to a host makes it ACTIVE (real fakebind); `false` keeps it DOWN.
    pub bind_activates: bool,
    /// Nova compute endpoint for `os-server-external-events`, e.g. `http://127.0.0.1:8774/v2.1`.
    pub nova_url: Option<String>,
    /// Nova notifier batching interval (Neutron's `send_events_interval`), in ms.
    pub notify_interval_ms: u64,
    /// Extra attempts when posting a batch of Nova events fails.
    pub notify_retries: u32,
    /// First retry backoff for the Nova notifier (doubles each attempt), in ms.
    pub notify_backoff_ms: u64,
    /// Seed of every random choice (ids, MACs, fault probabilities).
    pub seed: u64,
    /// Fault rules active from the start.
    pub faults: Vec<FaultRule>,
    /// `netcache neutron-sim` creates the default topology for this project when set.
    pub default_topology_project: Option<String>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            extensions: None,
            bind_activates: true,
            nova_url: None,
            notify_interval_ms: 1000,
            notify_retries: 3,
            notify_backoff_ms: 200,
            seed: 0,
            faults: Vec::new(),
            default_topology_project: None,
        }
    }
}

impl SimConfig {
    /// Removes one alias from the advertised extensions (e.g. `tag-ports-during-bulk-creation`).
    #[must_use]
    pub fn without_extension(mut self, alias: &str) -> Self {
        let mut list = self.take_extensions();
        list.retain(|a| a != alias);
        self.extensions = Some(list);
        self
    }

    /// Adds one alias to the advertised extensions (e.g. `auto-allocated-topology`).
    #[must_use]
    pub fn with_extension(mut self, alias: &str) -> Self {
        let mut list = self.take_extensions();
        if !list.iter().any(|a| a == alias) {
            list.push(alias.to_owned());
        }
        self.extensions = Some(list);
        self
    }

    /// The advertised extensions, taken out to be changed.
    fn take_extensions(&mut self) -> Vec<String> {
        self.extensions
            .take()
            .unwrap_or_else(|| ALL_EXTENSIONS.iter().map(std::string::ToString::to_string).collect())
    }

    /// Parses a config from JSON or TOML text (JSON if it starts with `{`).
    pub fn from_text(text: &str) -> anyhow::Result<Self> {
        if text.trim_start().starts_with('{') {
            Ok(serde_json::from_str(text)?)
        } else {
            Ok(toml::from_str(text)?)
        }
    }

    pub(crate) fn has_extension(&self, alias: &str) -> bool {
        match &self.extensions {
            None => ALL_EXTENSIONS.contains(&alias),
            Some(list) => list.iter().any(|a| a == alias),
        }
    }
}

/// What a fault rule does to a matching call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultAction {
    /// Wait `ms` (or a seeded random duration in `ms..=max_ms`) before handling; combines
    /// with one other action.
    Latency { ms: u64, max_ms: Option<u64> },
    /// Answer `status` (500, 503, ...) before committing anything.
    Error { status: u16 },
    /// Close the TCP connection (RST) without a response, before committing anything.
    Reset,
    /// Commit, then never answer (the connection is held until the client gives up).
    CommitThenDrop,
    /// Commit, then answer normally after `ms`.
    CommitThenDelay { ms: u64 },
    /// Answer nothing (or `status` at once if given) and commit the request `ms` later.
    DelayedCommit { ms: u64, status: Option<u16> },
    /// Wait until the test releases held calls ([`crate::SimHandle::release_held`]),
    /// then handle the call normally: a test decides when the answer comes.
    Hold,
}

impl FaultAction {
    /// The seed's late commit: answer nothing (or `status` at once) and commit
    /// only when the test releases it ([`crate::SimHandle::release_delayed_commits`]);
    /// its own delay, an hour, outlasts any test.
    #[must_use]
    pub fn commit_on_release(status: Option<u16>) -> Self {
        FaultAction::DelayedCommit { ms: 3_600_000, status }
    }

    /// Outcome label counted in [`crate::Stats`] when this action fires.
    #[must_use]
    pub fn outcome(&self) -> String {
        match self {
            FaultAction::Latency { .. } => "fault_latency".into(),
            FaultAction::Error { status } => format!("fault_{status}"),
            FaultAction::Reset => "fault_reset".into(),
            FaultAction::CommitThenDrop => "fault_commit_then_drop".into(),
            FaultAction::CommitThenDelay { .. } => "fault_commit_then_delay".into(),
            FaultAction::DelayedCommit { .. } => "fault_delayed_commit".into(),
            FaultAction::Hold => "fault_hold".into(),
        }
    }
}

/// One fault rule. `op` names the operation (`ports.create`, `ports.list`, ..., or `*`).
/// A call matches when its op, `body` (JSON subset) and `query` (substring) /
/// `query_params` (every pair present) match; among matching calls the rule fires on the
/// `nth` one (1-based) if set, else on every one, each with probability `probability`
/// (seeded) if set, at most `times` times in all if set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    pub op: String,
    pub action: FaultAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_params: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
}

impl FaultRule {
    pub fn new(op: impl Into<String>, action: FaultAction) -> Self {
        Self {
            op: op.into(),
            action,
            nth: None,
            probability: None,
            body: None,
            query: None,
            query_params: Vec::new(),
            times: None,
        }
    }
    #[must_use]
    pub fn nth(mut self, n: u64) -> Self {
        self.nth = Some(n);
        self
    }
    #[must_use]
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = Some(p);
        self
    }
    #[must_use]
    pub fn body_matches(mut self, subset: Value) -> Self {
        self.body = Some(subset);
        self
    }
    #[must_use]
    pub fn query_contains(mut self, s: impl Into<String>) -> Self {
        self.query = Some(s.into());
        self
    }
    #[must_use]
    pub fn query_param(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.query_params.push((k.into(), v.into()));
        self
    }
    #[must_use]
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }
}
