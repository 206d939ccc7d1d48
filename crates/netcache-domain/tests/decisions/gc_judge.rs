//! `gc::judge`: what GC may do with a ghost, from netcache's records.

use super::*;

const GRACE: TimeDelta = TimeDelta::minutes(10);

#[derive(Clone, Copy)]
struct JudgeCase {
    name: &'static str,
    owner: Owner,
    foreign: ForeignPolicy,
    grace: TimeDelta,
    min_sightings: u32,
    intent: Option<IntentState>,
    in_vif_records: bool,
    /// How long ago the ghost was first seen.
    age: TimeDelta,
    times_seen: u32,
    want: Result<GcAction, SkipReason>,
}

/// Our ghost, every condition met, under the default policy.
const ELIGIBLE: JudgeCase = JudgeCase {
    name: "",
    owner: Owner::Ours(1),
    foreign: ForeignPolicy::Report,
    grace: GRACE,
    min_sightings: 2,
    intent: Some(IntentState::Abandoned),
    in_vif_records: false,
    age: GRACE,
    times_seen: 2,
    want: Ok(GcAction::Delete),
};

impl Case for JudgeCase {
    type Decision = Result<GcAction, SkipReason>;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let now = t0();
        let sighting = GhostSighting {
            port_id: PortId::from("g"),
            device_id: SERVER.into(),
            owner: self.owner.ghost_owner(),
            first_seen: now - self.age,
            last_seen: now,
            times_seen: self.times_seen,
            revision_number: 1,
        };
        let facts = GhostFacts {
            sighting: &sighting,
            intent_state: self.intent,
            in_vif_records: self.in_vif_records,
        };
        let policy = GcPolicy {
            grace: self.grace,
            min_sightings: self.min_sightings,
            foreign: self.foreign,
        };
        judge(&facts, now, &policy)
    }
    fn expected(&self) -> Self::Decision {
        self.want
    }
}

#[test]
fn gc_judgements() {
    use GcAction::{Delete, Unbind};
    use IntentState::{Created, Failed, Pending};
    use SkipReason::*;
    let foreign = JudgeCase {
        owner: Owner::Foreign,
        intent: None,
        ..ELIGIBLE
    };
    let unbinding = JudgeCase {
        foreign: ForeignPolicy::Unbind,
        ..foreign
    };
    check(&[
        JudgeCase {
            name: "ours, abandoned intent, old, seen twice: delete",
            ..ELIGIBLE
        },
        JudgeCase {
            name: "ours, failed intent: delete",
            intent: Some(Failed),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "ours, intent unknown to netcache: delete",
            intent: None,
            ..ELIGIBLE
        },
        JudgeCase {
            name: "ours, created intent but no VIF record holds it: delete",
            intent: Some(Created),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "ours, pending intent: a create may be in flight",
            intent: Some(Pending),
            age: TimeDelta::days(30),
            times_seen: 100,
            want: Err(IntentPending),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "ours, in a VIF record: attached",
            in_vif_records: true,
            want: Err(Attached),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "attached is told before pending",
            in_vif_records: true,
            intent: Some(Pending),
            want: Err(Attached),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "pending is told before too young",
            intent: Some(Pending),
            age: TimeDelta::zero(),
            want: Err(IntentPending),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "first seen exactly the grace ago: old enough",
            age: GRACE,
            ..ELIGIBLE
        },
        JudgeCase {
            name: "first seen a second short of the grace: too young",
            age: GRACE - TimeDelta::seconds(1),
            want: Err(TooYoung),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "first seen in the future (clock skew): too young",
            age: -TimeDelta::minutes(5),
            want: Err(TooYoung),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "seen once: too few sightings",
            times_seen: 1,
            want: Err(TooFewSightings),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "young and seen once: too young is told first",
            times_seen: 1,
            age: TimeDelta::minutes(1),
            want: Err(TooYoung),
            ..ELIGIBLE
        },
        JudgeCase {
            name: "no grace and one sighting required: delete at first sight",
            grace: TimeDelta::zero(),
            min_sightings: 1,
            age: TimeDelta::zero(),
            times_seen: 1,
            ..ELIGIBLE
        },
        JudgeCase {
            name: "foreign, reported only",
            age: TimeDelta::days(30),
            times_seen: 100,
            want: Err(Foreign),
            ..foreign
        },
        JudgeCase {
            name: "foreign is told before attached",
            in_vif_records: true,
            want: Err(Foreign),
            ..foreign
        },
        JudgeCase {
            name: "foreign, unbind policy, eligible: unbind, never delete",
            want: Ok(Unbind),
            ..unbinding
        },
        JudgeCase {
            name: "foreign, unbind policy, in a VIF record: attached",
            in_vif_records: true,
            want: Err(Attached),
            ..unbinding
        },
        JudgeCase {
            name: "foreign, unbind policy, young: too young",
            age: TimeDelta::minutes(9),
            want: Err(TooYoung),
            ..unbinding
        },
        JudgeCase {
            name: "foreign, unbind policy, seen once: too few sightings",
            times_seen: 1,
            want: Err(TooFewSightings),
            ..unbinding
        },
        JudgeCase {
            name: "the unbind policy does not change what happens to ours",
            foreign: ForeignPolicy::Unbind,
            want: Ok(Delete),
            ..ELIGIBLE
        },
    ]);
}
