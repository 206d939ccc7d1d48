//! Properties: the invariants the tables illustrate, over generated inputs.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

use super::*;
use crate::cache_membership::{Seen, observe};
use crate::gc_recheck::sighting_of;

/// Fixed seed, no regression files: the same cases on every run.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x6e65_7463_6163_6865),
        ..ProptestConfig::default()
    }
}

/// How a generated port is marked. Intent numbers are few so that they collide.
#[derive(Clone, Debug)]
enum Mark {
    None,
    OursTags(u8),
    OursName(u8),
    OtherTags(u8),
    OtherName(u8),
    OwnerTagOnly,
    IntentTagOnly(u8),
    /// A user's own name and tags.
    User(String, Vec<String>),
}

fn arb_mark() -> impl Strategy<Value = Mark> {
    prop_oneof![
        Just(Mark::None),
        (1u8..4).prop_map(Mark::OursTags),
        (1u8..4).prop_map(Mark::OursName),
        (1u8..4).prop_map(Mark::OtherTags),
        (1u8..4).prop_map(Mark::OtherName),
        Just(Mark::OwnerTagOnly),
        (1u8..4).prop_map(Mark::IntentTagOnly),
        ("[a-z:=-]{0,24}", vec("[a-z:=-]{0,24}", 0..3)).prop_map(|(n, t)| Mark::User(n, t)),
    ]
}

fn apply(port: Port, mark: &Mark) -> Port {
    match mark {
        Mark::None => port,
        Mark::OursTags(n) => port.tagged(DEPLOYMENT, *n),
        Mark::OursName(n) => port.named(DEPLOYMENT, *n),
        Mark::OtherTags(n) => port.tagged(OTHER_DEPLOYMENT, *n),
        Mark::OtherName(n) => port.named(OTHER_DEPLOYMENT, *n),
        Mark::OwnerTagOnly => port.with_tags(&["netcache:owner=nc-test"]),
        Mark::IntentTagOnly(n) => {
            let tag = marker(DEPLOYMENT, *n).intent_tag();
            port.with_tags(&[&tag])
        }
        Mark::User(name, tags) => {
            let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
            port.with_name(name).with_tags(&tags)
        }
    }
}

fn arb_device() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(SERVER), Just(OTHER_SERVER), Just("")]
}

/// One port body: (device_id, mark, revision).
fn arb_body() -> impl Strategy<Value = (&'static str, Mark, u64)> {
    (arb_device(), arb_mark(), 0u64..4)
}

fn make(id: u8, (device, mark, rev): &(&'static str, Mark, u64)) -> Port {
    apply(port(&format!("p{id}")).on(device).rev(*rev), mark)
}

fn arb_port() -> impl Strategy<Value = Port> {
    (0u8..8, arb_body()).prop_map(|(id, body)| make(id, &body))
}

/// Ports with distinct ids p0..p7, in id order.
fn arb_ports() -> impl Strategy<Value = Vec<Port>> {
    btree_map(0u8..8, arb_body(), 0..8).prop_map(|m| m.iter().map(|(id, body)| make(*id, body)).collect())
}

fn arb_state() -> impl Strategy<Value = VifState> {
    prop_oneof![
        3 => Just(VifState::Attached),
        1 => Just(VifState::Releasing),
        1 => Just(VifState::Lost),
    ]
}

fn arb_intent_state() -> impl Strategy<Value = Option<IntentState>> {
    prop_oneof![
        Just(None),
        Just(Some(IntentState::Pending)),
        Just(Some(IntentState::Created)),
        Just(Some(IntentState::Failed)),
        Just(Some(IntentState::Abandoned)),
    ]
}

fn arb_seen() -> impl Strategy<Value = Seen> {
    prop_oneof![
        3 => Just(Seen::Here),
        1 => Just(Seen::At(OTHER_SERVER)),
        1 => Just(Seen::At("")),
        1 => Just(Seen::Gone),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Invariants 1 and 15: the cache is a subset of the attached VIF records, in
    /// position order, each once; a record refreshed as present is in it, fresh;
    /// only attached records are reported lost, and only for a reason.
    #[test]
    fn the_cache_is_made_of_attached_vif_records_only(
        records in btree_map(0u8..8, (0i64..8, arb_state(), any::<bool>()), 0..8),
        seen in btree_map(0u8..10, arb_seen(), 0..10),
        cached_before in btree_set(0u8..10, 0..10),
        keep in any::<bool>(),
    ) {
        let vifs: Vec<VifRecord> = records
            .iter()
            .map(|(id, (position, state, user))| {
                let origin = if *user { VifOrigin::Preexisting } else { VifOrigin::Created };
                vif(&format!("p{id}"), *position, *state, origin)
            })
            .collect();
        let seen: Vec<(String, Seen)> = seen.into_iter().map(|(id, s)| (format!("p{id}"), s)).collect();
        let seen_refs: Vec<(&str, Seen)> = seen.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let before: Vec<String> = cached_before.iter().map(|id| format!("p{id}")).collect();
        let before_refs: Vec<&str> = before.iter().map(String::as_str).collect();
        let observed = observe(&seen_refs);
        let on_lost = if keep { OnLost::Keep } else { OnLost::Drop };

        let out = build(&vifs, &previous(&before_refs), &observed, on_lost);

        let attached: BTreeMap<&str, i64> = vifs
            .iter()
            .filter(|v| v.state == VifState::Attached)
            .map(|v| (v.port_id.as_str(), v.position))
            .collect();
        let cached = entries(&out.info);
        let mut ids = BTreeSet::new();
        let mut last_position = i64::MIN;
        for (id, _) in &cached {
            let position = attached.get(id.as_str());
            prop_assert!(position.is_some(), "{id} is cached but not an attached VIF record");
            prop_assert!(ids.insert(id.clone()), "{id} is cached twice");
            prop_assert!(*position.unwrap() >= last_position, "the cache is out of position order");
            last_position = *position.unwrap();
        }
        for (id, s) in &seen_refs {
            if matches!(s, Seen::Here) && attached.contains_key(id) {
                prop_assert!(cached.contains(&((*id).to_owned(), FRESH.to_owned())), "{id} was refreshed but is not cached fresh");
            }
        }
        for lost in &out.lost {
            let id = lost.port_id.as_str();
            prop_assert!(attached.contains_key(id), "{id} is lost but not attached");
            let reason = match observed.get(&lost.port_id) {
                Some(Observed::Gone) => LostReason::Gone,
                Some(Observed::Present { port, .. }) if port.device_id != SERVER => {
                    LostReason::Reassigned { device_id: port.device_id.clone() }
                }
                other => return Err(TestCaseError::fail(format!("{id} is lost but was seen as {other:?}"))),
            };
            prop_assert_eq!(&lost.reason, &reason);
            let kept = keep && before.iter().any(|b| b == id);
            prop_assert_eq!(cached.iter().any(|(c, _)| c == id), kept, "lost {} kept or dropped against the policy", id);
        }
    }

    /// Invariant 1: a recorded port (any state) is never a ghost; the ghosts are
    /// exactly the unrecorded ports with the server's device_id, ours exactly
    /// when they carry this deployment's marker.
    #[test]
    fn a_recorded_port_is_never_a_ghost(
        records in btree_map(0u8..8, arb_state(), 0..8),
        ports in arb_ports(),
    ) {
        let records: Vec<VifRecord> = records
            .iter()
            .map(|(id, state)| vif(&format!("p{id}"), 0, *state, VifOrigin::Created))
            .collect();
        let recorded: BTreeSet<&PortId> = records.iter().map(|v| &v.port_id).collect();
        let ghosts = classify_ports(SERVER, &records, &ports, &deployment());
        for ghost in &ghosts {
            prop_assert!(!recorded.contains(&ghost.port_id), "recorded {} classified a ghost", ghost.port_id);
            prop_assert_eq!(ghost.device_id.as_str(), SERVER);
            let port = ports.iter().find(|p| p.id == ghost.port_id).unwrap();
            let ours = OwnershipMarker::is_ours(port, &deployment());
            prop_assert_eq!(matches!(ghost.owner, GhostOwner::Ours { .. }), ours);
        }
        let want: Vec<&PortId> = ports
            .iter()
            .filter(|p| p.device_id == SERVER && !recorded.contains(&p.id))
            .map(|p| &p.id)
            .collect();
        let got: Vec<&PortId> = ghosts.iter().map(|g| &g.port_id).collect();
        prop_assert_eq!(got, want);
    }

    /// Invariants 6 and 11: GC deletes a port only when it carries this
    /// deployment's marker, is in no VIF record (so never a user's attached
    /// port), its intent is not pending, it is past the grace and seen often
    /// enough; it unbinds only foreign ports, and only when told to. And it does
    /// delete such provable garbage.
    #[test]
    fn gc_deletes_only_provable_garbage(
        port in arb_port(),
        intent_state in arb_intent_state(),
        in_vif_records in any::<bool>(),
        age_s in -600i64..7200,
        times_seen in 0u32..5,
        grace_s in 0i64..3600,
        min_sightings in 0u32..4,
        unbind in any::<bool>(),
    ) {
        let now = t0();
        let sighting = GhostSighting {
            first_seen: now - TimeDelta::seconds(age_s),
            times_seen,
            ..sighting_of(&port)
        };
        let policy = GcPolicy {
            grace: TimeDelta::seconds(grace_s),
            min_sightings,
            foreign: if unbind { ForeignPolicy::Unbind } else { ForeignPolicy::Report },
        };
        let facts = GhostFacts { sighting: &sighting, intent_state, in_vif_records };
        let decision = judge(&facts, now, &policy);

        let ours = OwnershipMarker::is_ours(&port, &deployment());
        let settled = !in_vif_records
            && intent_state != Some(IntentState::Pending)
            && age_s >= grace_s
            && times_seen >= min_sightings;
        match decision {
            Ok(GcAction::Delete) => prop_assert!(ours && settled, "deleted {port:?} with {facts:?}"),
            Ok(GcAction::Unbind) => prop_assert!(!ours && unbind && settled, "unbound {port:?} with {facts:?}"),
            Err(_) => prop_assert!(!(settled && (ours || unbind)), "skipped {port:?} with {facts:?}: {decision:?}"),
        }
        if in_vif_records {
            prop_assert!(matches!(decision, Err(SkipReason::Attached | SkipReason::Foreign)));
        }
    }

    /// The live re-read lets GC act only on the port it sighted, unchanged.
    #[test]
    fn recheck_passes_only_an_unchanged_port(
        sighted in arb_port(),
        live in proptest::option::of(arb_body()),
    ) {
        let live = live.map(|body| make(sighted.id.as_str()[1..].parse().unwrap(), &body));
        let sighting = sighting_of(&sighted);
        let decision = recheck(&sighting, live.as_ref(), &deployment());
        match &live {
            None => prop_assert_eq!(decision, Err(SkipReason::Gone)),
            Some(live) => {
                let unchanged = live.device_id == sighted.device_id
                    && live.revision_number == sighted.revision_number
                    && owner_of(live, &deployment()) == sighting.owner;
                prop_assert_eq!(decision.is_ok(), unchanged);
            }
        }
    }

    /// Invariant 3: an ambiguous create adopts only a port that carries its
    /// intent, the same one whatever order Neutron lists them in, and abandons
    /// only when none does.
    #[test]
    fn an_ambiguous_create_adopts_only_its_own_port(
        (ports, shuffled) in arb_ports().prop_flat_map(|ports| (Just(ports.clone()), Just(ports).prop_shuffle())),
    ) {
        let m = marker(DEPLOYMENT, 1);
        let carriers: Vec<&Port> = ports.iter().filter(|p| OwnershipMarker::read_intent(p) == Some(m.intent)).collect();
        let decision = resolve_ambiguous_create(&m, &ports);
        match &decision {
            Resolution::Adopt(adopted) => {
                prop_assert!(ports.contains(adopted));
                prop_assert_eq!(OwnershipMarker::read_intent(adopted), Some(m.intent));
                let lowest = carriers.iter().map(|p| &p.id).min();
                prop_assert_eq!(Some(&adopted.id), lowest);
            }
            Resolution::Abandon => prop_assert!(carriers.is_empty()),
        }
        prop_assert_eq!(resolve_ambiguous_create(&m, &shuffled), decision);
    }
}
