//! Neutron faults during the workload: seeded phases, each a small set of the embedded
//! Neutron's fault rules (set through its `/_sim/faults` admin API, or the fault proxy
//! in front of a real Neutron), then a calm phase. Rules aim at netcache's calls only:
//! creates by their `device_owner`, lists by having a query (the harness lists ports
//! unfiltered), so the sampler and the workload's own Neutron calls see no fault.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use neutron_sim::{FaultAction, FaultRule};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{info, warn};

use super::history::FaultWindow;
use super::proxy::FaultProxy;
use super::recorder::Recorder;

/// The longest delay a fault holds a commit back, in ms (settling waits this long).
pub const MAX_DELAY_MS: u64 = 6000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    CommitThenDrop,
    DelayedCommit,
    CommitThenDelay,
    Error500,
    Error503,
    Reset,
    Latency,
    Unreachable,
}

impl FaultKind {
    pub const ALL: [FaultKind; 8] = [
        Self::CommitThenDrop,
        Self::DelayedCommit,
        Self::CommitThenDelay,
        Self::Error500,
        Self::Error503,
        Self::Reset,
        Self::Latency,
        Self::Unreachable,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::CommitThenDrop => "commit-then-drop",
            Self::DelayedCommit => "delayed-commit",
            Self::CommitThenDelay => "commit-then-delay",
            Self::Error500 => "error-500",
            Self::Error503 => "error-503",
            Self::Reset => "reset",
            Self::Latency => "latency",
            Self::Unreachable => "unreachable",
        }
    }
}

impl FromStr for FaultKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown fault {s:?}; known: {:?}", Self::ALL.map(FaultKind::name)))
    }
}

/// Which of netcache's Neutron calls a rule aims at.
#[derive(Clone, Copy, Debug)]
enum Target {
    Create,
    List,
    Show,
    Update,
    Delete,
    Tags,
    Networks,
    Subnets,
    FloatingIps,
    Extensions,
}

const PORT_TARGETS: [Target; 5] = [
    Target::Create,
    Target::List,
    Target::Show,
    Target::Update,
    Target::Delete,
];
const ALL_TARGETS: [Target; 10] = [
    Target::Create,
    Target::List,
    Target::Show,
    Target::Update,
    Target::Delete,
    Target::Tags,
    Target::Networks,
    Target::Subnets,
    Target::FloatingIps,
    Target::Extensions,
];

fn rule(target: Target, action: FaultAction) -> FaultRule {
    let op = match target {
        Target::Create => "ports.create",
        Target::List => "ports.list",
        Target::Show => "ports.show",
        Target::Update => "ports.update",
        Target::Delete => "ports.delete",
        Target::Tags => "ports.tags",
        Target::Networks => "networks.list",
        Target::Subnets => "subnets.list",
        Target::FloatingIps => "floatingips.list",
        Target::Extensions => "extensions.list",
    };
    let r = FaultRule::new(op, action);
    match target {
        // netcache's creates carry compute:<az>; the workload's own ports do not.
        Target::Create => r.body_matches(json!({"port": {"device_owner": "compute:nova"}})),
        // netcache always filters; the sampler lists everything.
        Target::List => r.query_contains("="),
        _ => r,
    }
}

/// The rules of one phase of `kind`, drawn from `rng`.
fn rules_for(kind: FaultKind, rng: &mut ChaCha8Rng) -> Vec<FaultRule> {
    let pick = |rng: &mut ChaCha8Rng, targets: &[Target]| targets[rng.random_range(0..targets.len())];
    let mutating = [Target::Create, Target::Update, Target::Delete];
    let p = 0.3;
    match kind {
        FaultKind::CommitThenDrop => vec![
            rule(pick(rng, &mutating), FaultAction::CommitThenDrop)
                .probability(p)
                .times(3),
        ],
        FaultKind::DelayedCommit => {
            let ms = rng.random_range(1000..=MAX_DELAY_MS);
            vec![
                rule(pick(rng, &mutating), FaultAction::DelayedCommit { ms, status: None })
                    .probability(p)
                    .times(3),
            ]
        }
        FaultKind::CommitThenDelay => {
            let ms = rng.random_range(500..=MAX_DELAY_MS);
            vec![
                rule(pick(rng, &PORT_TARGETS), FaultAction::CommitThenDelay { ms })
                    .probability(p)
                    .times(3),
            ]
        }
        FaultKind::Error500 | FaultKind::Error503 => {
            let status = if kind == FaultKind::Error500 { 500 } else { 503 };
            vec![
                rule(pick(rng, &ALL_TARGETS), FaultAction::Error { status })
                    .probability(p)
                    .times(5),
            ]
        }
        FaultKind::Reset => vec![
            rule(pick(rng, &ALL_TARGETS), FaultAction::Reset)
                .probability(p)
                .times(5),
        ],
        FaultKind::Latency => PORT_TARGETS
            .iter()
            .map(|t| {
                rule(
                    *t,
                    FaultAction::Latency {
                        ms: 20,
                        max_ms: Some(800),
                    },
                )
                .probability(0.5)
            })
            .collect(),
        FaultKind::Unreachable => {
            let action = if rng.random_bool(0.5) {
                FaultAction::Reset
            } else {
                FaultAction::Error { status: 503 }
            };
            ALL_TARGETS.iter().map(|t| rule(*t, action.clone()).times(40)).collect()
        }
    }
}

/// Where the rules go.
pub enum Injector {
    Sim { url: String, http: reqwest::Client },
    Proxy(FaultProxy),
    None,
}

impl Injector {
    pub fn sim(url: &str) -> anyhow::Result<Self> {
        Ok(Self::Sim {
            url: url.to_owned(),
            http: reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?,
        })
    }

    /// Replaces the rules; returns how often the replaced ones fired.
    pub async fn set(&self, rules: Vec<FaultRule>) -> anyhow::Result<u64> {
        match self {
            Self::Sim { url, http } => {
                let before: Value = http.get(format!("{url}/_sim/faults")).send().await?.json().await?;
                let fired = before["faults"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["fired"].as_u64())
                    .sum();
                http.delete(format!("{url}/_sim/faults"))
                    .send()
                    .await?
                    .error_for_status()?;
                if !rules.is_empty() {
                    http.post(format!("{url}/_sim/faults"))
                        .json(&json!({ "faults": rules }))
                        .send()
                        .await?
                        .error_for_status()?;
                }
                Ok(fired)
            }
            Self::Proxy(proxy) => {
                let fired = proxy.rules().iter().map(|r| r.fired).sum();
                proxy.set_rules(rules);
                Ok(fired)
            }
            Self::None => Ok(0),
        }
    }
}

/// The phases: `kinds` to draw from (empty: no faults), the slack added to a window
/// for calls a fault still holds.
pub struct FaultPlan {
    pub seed: u64,
    pub kinds: Vec<FaultKind>,
    pub slack: Duration,
}

/// Runs phases until `stop` turns true, then clears every rule.
pub async fn run(plan: FaultPlan, injector: Arc<Injector>, rec: Arc<Recorder>, mut stop: watch::Receiver<bool>) {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    rng.set_stream(u64::MAX - 1);
    let slack = u64::try_from(plan.slack.as_millis()).unwrap_or(u64::MAX);
    while !plan.kinds.is_empty() && !*stop.borrow() {
        let calm = rng.random_bool(0.25);
        let mut kinds = Vec::new();
        let mut rules = Vec::new();
        if !calm {
            let kind = plan.kinds[rng.random_range(0..plan.kinds.len())];
            kinds.push(kind);
            rules.extend(rules_for(kind, &mut rng));
            if kind != FaultKind::Latency && plan.kinds.contains(&FaultKind::Latency) && rng.random_bool(0.3) {
                kinds.push(FaultKind::Latency);
                rules.extend(rules_for(FaultKind::Latency, &mut rng));
            }
        }
        let phase = Duration::from_millis(rng.random_range(1000..=3000));
        let start_ms = rec.now_ms();
        if let Err(e) = injector.set(rules).await {
            warn!(error = %e, "could not set Neutron faults");
        }
        if !kinds.is_empty() {
            info!(faults = ?kinds, "Neutron faults on for {phase:?}");
        }
        let _ = tokio::time::timeout(phase, stop.changed()).await;
        let fired = injector.set(Vec::new()).await.unwrap_or(0);
        let end_ms = rec.now_ms();
        if !kinds.is_empty() {
            rec.fault_window(FaultWindow {
                start_ms,
                end_ms: end_ms + slack,
                unreachable: kinds.contains(&FaultKind::Unreachable),
                kinds: kinds.iter().map(|k| k.name().to_owned()).collect(),
                fired,
            });
        }
    }
    let _ = injector.set(Vec::new()).await;
}
