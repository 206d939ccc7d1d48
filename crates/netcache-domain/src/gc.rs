//! What the garbage collector may do with a ghost. It deletes only what is
//! provably netcache's own garbage (invariant 11 of docs/ARCHITECTURE.md):
//! it carries this deployment's owner marker; its intent is not pending and its
//! port is in no VIF record; it was first seen at least `grace` ago and in at
//! least `min_sightings` sweeps; and a live re-read just before the delete shows
//! the same device_id, marker and revision. Foreign ghosts are never deleted.

use chrono::{DateTime, TimeDelta, Utc};

use crate::DeploymentId;
use crate::ghost::{GhostOwner, GhostSighting, owner_of};
use crate::intent::IntentState;
use crate::neutron::Port;

/// What to do with foreign ghosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForeignPolicy {
    /// Report them only.
    #[default]
    Report,
    /// Clear `device_id`, `device_owner` and `binding:host_id`.
    Unbind,
}

#[derive(Clone, Debug)]
pub struct GcPolicy {
    pub grace: TimeDelta,
    pub min_sightings: u32,
    pub foreign: ForeignPolicy,
}

impl Default for GcPolicy {
    fn default() -> Self {
        Self {
            grace: TimeDelta::minutes(10),
            min_sightings: 2,
            foreign: ForeignPolicy::Report,
        }
    }
}

/// Facts about a ghost gathered from netcache's own records.
#[derive(Clone, Debug)]
pub struct GhostFacts<'a> {
    pub sighting: &'a GhostSighting,
    /// State of the intent the ghost's marker names, if netcache has it.
    pub intent_state: Option<IntentState>,
    /// Whether any VIF record holds the port.
    pub in_vif_records: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcAction {
    Delete,
    Unbind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// Not ours, and foreign ghosts are only reported.
    Foreign,
    /// Its intent is still pending: a create may be in flight.
    IntentPending,
    /// A VIF record holds the port now (it was legitimately attached).
    Attached,
    /// First seen less than the grace period ago.
    TooYoung,
    /// Seen in fewer sweeps than required.
    TooFewSightings,
    /// The live re-read differs from the sighting (device_id, marker or revision).
    Changed,
    /// Neutron no longer has the port.
    Gone,
}

impl SkipReason {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Foreign => "foreign",
            Self::IntentPending => "intent_pending",
            Self::Attached => "attached",
            Self::TooYoung => "too_young",
            Self::TooFewSightings => "too_few_sightings",
            Self::Changed => "changed",
            Self::Gone => "gone",
        }
    }
}

/// First decision, from netcache's records alone.
pub fn judge(facts: &GhostFacts<'_>, now: DateTime<Utc>, policy: &GcPolicy) -> Result<GcAction, SkipReason> {
    let action = match facts.sighting.owner {
        GhostOwner::Ours { .. } => GcAction::Delete,
        GhostOwner::Foreign => match policy.foreign {
            ForeignPolicy::Report => return Err(SkipReason::Foreign),
            ForeignPolicy::Unbind => GcAction::Unbind,
        },
    };
    if facts.in_vif_records {
        return Err(SkipReason::Attached);
    }
    if facts.intent_state == Some(IntentState::Pending) {
        return Err(SkipReason::IntentPending);
    }
    if now - facts.sighting.first_seen < policy.grace {
        return Err(SkipReason::TooYoung);
    }
    if facts.sighting.times_seen < policy.min_sightings {
        return Err(SkipReason::TooFewSightings);
    }
    Ok(action)
}

/// Second decision, on a live re-read just before acting: the port must be the
/// one that was sighted, unchanged.
pub fn recheck(sighting: &GhostSighting, live: Option<&Port>, deployment: &DeploymentId) -> Result<(), SkipReason> {
    let port = live.ok_or(SkipReason::Gone)?;
    let unchanged = port.device_id == sighting.device_id
        && owner_of(port, deployment) == sighting.owner
        && port.revision_number == sighting.revision_number;
    if unchanged { Ok(()) } else { Err(SkipReason::Changed) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::port;
    use crate::marker::OwnershipMarker;
    use crate::{IntentId, PortId, ServerId};

    fn sighting(owner: GhostOwner, first_seen: DateTime<Utc>, times_seen: u32) -> GhostSighting {
        GhostSighting {
            port_id: PortId::from("p"),
            device_id: "dev".into(),
            owner,
            first_seen,
            last_seen: first_seen,
            times_seen,
            revision_number: 3,
        }
    }

    #[test]
    fn deletes_only_old_twice_seen_unattached_ours_with_a_settled_intent() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let policy = GcPolicy::default();
        let ours = GhostOwner::Ours {
            intent: Some(IntentId(crate::fixtures::uuid(1))),
        };
        let s = sighting(ours.clone(), t0, 2);
        let facts = |intent_state, in_vif_records| GhostFacts {
            sighting: &s,
            intent_state,
            in_vif_records,
        };
        let later = t0 + TimeDelta::minutes(10);
        assert_eq!(
            judge(&facts(Some(IntentState::Abandoned), false), later, &policy),
            Ok(GcAction::Delete)
        );
        assert_eq!(judge(&facts(None, false), later, &policy), Ok(GcAction::Delete));
        assert_eq!(
            judge(&facts(Some(IntentState::Pending), false), later, &policy),
            Err(SkipReason::IntentPending)
        );
        assert_eq!(
            judge(&facts(Some(IntentState::Abandoned), true), later, &policy),
            Err(SkipReason::Attached)
        );
        assert_eq!(
            judge(
                &facts(Some(IntentState::Abandoned), false),
                later - TimeDelta::seconds(1),
                &policy
            ),
            Err(SkipReason::TooYoung)
        );
        let once = sighting(ours, t0, 1);
        let facts_once = GhostFacts {
            sighting: &once,
            intent_state: None,
            in_vif_records: false,
        };
        assert_eq!(judge(&facts_once, later, &policy), Err(SkipReason::TooFewSightings));
    }

    #[test]
    fn foreign_ghosts_are_never_deleted() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let s = sighting(GhostOwner::Foreign, t0, 5);
        let facts = GhostFacts {
            sighting: &s,
            intent_state: None,
            in_vif_records: false,
        };
        let later = t0 + TimeDelta::hours(1);
        assert_eq!(judge(&facts, later, &GcPolicy::default()), Err(SkipReason::Foreign));
        let unbind = GcPolicy {
            foreign: ForeignPolicy::Unbind,
            ..GcPolicy::default()
        };
        assert_eq!(judge(&facts, later, &unbind), Ok(GcAction::Unbind));
    }

    #[test]
    fn recheck_refuses_a_changed_or_gone_port() {
        let deployment = DeploymentId::from("d");
        let server = ServerId(crate::fixtures::uuid(2));
        let marker = OwnershipMarker {
            deployment: deployment.clone(),
            intent: IntentId(crate::fixtures::uuid(3)),
        };
        let mut live = port("p", &server, "10.0.0.3");
        live.tags = marker.tags().into_iter().collect();
        let s = GhostSighting {
            port_id: live.id.clone(),
            device_id: live.device_id.clone(),
            owner: GhostOwner::Ours {
                intent: Some(marker.intent),
            },
            first_seen: DateTime::<Utc>::UNIX_EPOCH,
            last_seen: DateTime::<Utc>::UNIX_EPOCH,
            times_seen: 2,
            revision_number: live.revision_number,
        };
        assert_eq!(recheck(&s, Some(&live), &deployment), Ok(()));
        assert_eq!(recheck(&s, None, &deployment), Err(SkipReason::Gone));
        let mut bumped = live.clone();
        bumped.revision_number += 1;
        assert_eq!(recheck(&s, Some(&bumped), &deployment), Err(SkipReason::Changed));
        let mut moved = live.clone();
        moved.device_id = "other".into();
        assert_eq!(recheck(&s, Some(&moved), &deployment), Err(SkipReason::Changed));
        let mut untagged = live;
        untagged.tags.clear();
        assert_eq!(recheck(&s, Some(&untagged), &deployment), Err(SkipReason::Changed));
    }
}
