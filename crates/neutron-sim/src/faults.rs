//! Fault engine (seeded) and call statistics.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::Value;

use crate::config::{FaultAction, FaultRule};

/// Per-operation call counts by outcome, plus notifier counters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub total: u64,
    pub operations: BTreeMap<String, BTreeMap<String, u64>>,
    pub nova_batches_sent: u64,
    pub nova_events_sent: u64,
    pub nova_post_failures: u64,
}

impl Stats {
    /// Calls of `op` (e.g. `ports.create`), whatever their outcome.
    #[must_use]
    pub fn calls(&self, op: &str) -> u64 {
        self.operations.get(op).map_or(0, |m| m.values().sum())
    }
    /// Calls of `op` with `outcome` (`ok`, `error_4xx`, `fault_500`, `fault_reset`, ...).
    #[must_use]
    pub fn outcome(&self, op: &str, outcome: &str) -> u64 {
        self.operations
            .get(op)
            .and_then(|m| m.get(outcome))
            .copied()
            .unwrap_or(0)
    }
    /// All counted calls.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }
    pub(crate) fn record(&mut self, op: &str, outcome: &str) {
        self.total += 1;
        *self
            .operations
            .entry(op.to_string())
            .or_default()
            .entry(outcome.to_string())
            .or_default() += 1;
    }
}

/// A rule with its counters.
#[derive(Debug, Clone, Serialize)]
pub struct RuleState {
    #[serde(flatten)]
    pub rule: FaultRule,
    /// Calls that matched op/body/query so far.
    pub matched: u64,
    /// Times the rule fired.
    pub fired: u64,
}

/// What to do with one call.
#[derive(Debug, Default)]
pub(crate) struct Decision {
    pub latency: Duration,
    pub action: Option<FaultAction>,
}

pub(crate) struct FaultEngine {
    rules: Vec<RuleState>,
    rng: ChaCha8Rng,
}

impl FaultEngine {
    pub fn new(seed: u64, rules: Vec<FaultRule>) -> Self {
        let mut e = Self {
            rules: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_fa17),
        };
        for r in rules {
            e.add(r);
        }
        e
    }
    pub fn add(&mut self, rule: FaultRule) {
        self.rules.push(RuleState {
            rule,
            matched: 0,
            fired: 0,
        });
    }
    pub fn clear(&mut self) {
        self.rules.clear();
    }
    pub fn list(&self) -> Vec<RuleState> {
        self.rules.clone()
    }

    /// Evaluates every rule for one call. Latencies add up; the first other action wins.
    pub fn decide(&mut self, op: &str, query: &str, params: &[(String, String)], body: Option<&Value>) -> Decision {
        let mut d = Decision::default();
        for st in &mut self.rules {
            let r = &st.rule;
            if r.op != "*" && r.op != op {
                continue;
            }
            if let Some(pat) = &r.body
                && !body.is_some_and(|b| json_subset(pat, b))
            {
                continue;
            }
            if let Some(q) = &r.query
                && !query.contains(q.as_str())
            {
                continue;
            }
            if !r.query_params.iter().all(|p| params.contains(p)) {
                continue;
            }
            if r.times.is_some_and(|t| st.fired >= t) {
                continue;
            }
            st.matched += 1;
            if r.nth.is_some_and(|n| n != st.matched) {
                continue;
            }
            if let Some(p) = r.probability
                && self.rng.random::<f64>() >= p
            {
                continue;
            }
            let fires = match &r.action {
                FaultAction::Latency { ms, max_ms } => {
                    let ms = match max_ms {
                        Some(max) if *max > *ms => self.rng.random_range(*ms..=*max),
                        _ => *ms,
                    };
                    d.latency += Duration::from_millis(ms);
                    true
                }
                other if d.action.is_none() => {
                    d.action = Some(other.clone());
                    true
                }
                _ => false,
            };
            if fires {
                st.fired += 1;
            }
        }
        d
    }
}

/// `pattern` is a JSON subset of `value`: objects by key, arrays element-wise (each pattern
/// element matches some value element), scalars by equality.
#[must_use]
pub fn json_subset(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::Object(p), Value::Object(v)) => p.iter().all(|(k, pv)| v.get(k).is_some_and(|vv| json_subset(pv, vv))),
        (Value::Array(p), Value::Array(v)) => p.iter().all(|pe| v.iter().any(|ve| json_subset(pe, ve))),
        _ => pattern == value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_matching() {
        let body = json!({"port": {"device_id": "d1", "name": "x", "tags": ["a", "b"]}});
        assert!(json_subset(&json!({"port": {"device_id": "d1"}}), &body));
        assert!(json_subset(&json!({"port": {"tags": ["b"]}}), &body));
        assert!(!json_subset(&json!({"port": {"device_id": "d2"}}), &body));
        assert!(!json_subset(&json!({"network": {}}), &body));
    }

    #[test]
    fn nth_and_times() {
        let mut e = FaultEngine::new(1, vec![FaultRule::new("ports.create", FaultAction::Reset).nth(2)]);
        let fired: Vec<bool> = (0..4)
            .map(|_| e.decide("ports.create", "", &[], None).action.is_some())
            .collect();
        assert_eq!(fired, [false, true, false, false]);
        let mut e = FaultEngine::new(1, vec![FaultRule::new("*", FaultAction::Reset).times(2)]);
        let fired: Vec<bool> = (0..4)
            .map(|_| e.decide("ports.list", "", &[], None).action.is_some())
            .collect();
        assert_eq!(fired, [true, true, false, false]);
    }

    #[test]
    fn probability_is_seeded() {
        let run = |seed| {
            let mut e = FaultEngine::new(seed, vec![FaultRule::new("*", FaultAction::Reset).probability(0.5)]);
            (0..64)
                .map(|_| e.decide("x", "", &[], None).action.is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        let n = run(7).iter().filter(|b| **b).count();
        assert!((16..=48).contains(&n), "{n}");
    }
}
