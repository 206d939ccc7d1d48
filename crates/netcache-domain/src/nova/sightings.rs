//! GC's memory of what it saw: a finding is acted on only after it was seen
//! as garbage in two audits at least `grace` apart, at the same revision of
//! its port. A port missing from an audit, or seen as something else or at
//! another revision, starts over. Losing this memory (a restart) only delays
//! GC.

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};

use super::audit::{Finding, FindingKind, GcPlan};
use crate::{InstanceUuid, PortId};

#[derive(Clone, Debug, PartialEq)]
struct Seen {
    kind: FindingKind,
    instance: InstanceUuid,
    revision: Option<u64>,
    first: DateTime<Utc>,
    times: u32,
}

impl Seen {
    fn matches(&self, finding: &Finding) -> bool {
        self.kind == finding.kind && self.instance == finding.instance && self.revision == finding.revision()
    }
}

#[derive(Clone, Debug, Default)]
pub struct Sightings {
    seen: HashMap<PortId, Seen>,
}

impl Sightings {
    /// Records one whole audit's findings: the actionable ones are counted,
    /// every other port is forgotten.
    pub fn record(&mut self, findings: &[Finding], now: DateTime<Utc>) {
        let mut next = HashMap::new();
        for finding in findings.iter().filter(|f| f.plan != GcPlan::Nothing) {
            let Some(port) = &finding.port else { continue };
            let seen = match self.seen.remove(port) {
                Some(seen) if seen.matches(finding) => Seen {
                    times: seen.times + 1,
                    ..seen
                },
                _ => Seen {
                    kind: finding.kind,
                    instance: finding.instance.clone(),
                    revision: finding.revision(),
                    first: now,
                    times: 1,
                },
            };
            next.insert(port.clone(), seen);
        }
        self.seen = next;
    }

    /// Whether `finding` was seen twice as it is now, at least `grace` apart.
    #[must_use]
    pub fn ready(&self, finding: &Finding, now: DateTime<Utc>, grace: TimeDelta) -> bool {
        finding.plan != GcPlan::Nothing
            && finding
                .port
                .as_ref()
                .and_then(|p| self.seen.get(p))
                .is_some_and(|seen| seen.matches(finding) && seen.times >= 2 && now - seen.first >= grace)
    }

    /// How many ports are being watched.
    #[must_use]
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}
