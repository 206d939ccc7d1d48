//! `cache::build_network_info`: membership and lost VIFs.

use super::*;

/// What Neutron says of a port in a refresh.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seen {
    /// Present, with SERVER's device_id.
    Here,
    /// Present, with this other device_id.
    At(&'static str),
    Gone,
}

#[derive(Clone, Copy, Debug)]
enum Lost {
    Gone,
    To(&'static str),
}

struct CacheCase {
    name: &'static str,
    /// SERVER's VIF records: (port id, position, state).
    vifs: &'static [(&'static str, i64, VifState)],
    /// Port ids in the previous cache (with the STALE address).
    previous: &'static [&'static str],
    /// What this refresh saw (FRESH address); unlisted ports were not refreshed.
    observed: &'static [(&'static str, Seen)],
    on_lost: OnLost,
    /// The cache: (port id, FRESH or STALE), in order.
    cache: &'static [(&'static str, &'static str)],
    lost: &'static [(&'static str, Lost)],
}

pub(crate) fn observe(seen: &[(&str, Seen)]) -> HashMap<PortId, Observed> {
    seen.iter()
        .map(|(id, seen)| match seen {
            Seen::Here => present(port(id)),
            Seen::At(device) => present(port(id).on(device)),
            Seen::Gone => (PortId::from(*id), Observed::Gone),
        })
        .collect()
}

impl Case for CacheCase {
    type Decision = (Vec<(String, String)>, Vec<LostVif>);
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let vifs: Vec<VifRecord> = self
            .vifs
            .iter()
            .map(|(id, position, state)| vif(id, *position, *state, VifOrigin::Created))
            .collect();
        let out = build(&vifs, &previous(self.previous), &observe(self.observed), self.on_lost);
        (entries(&out.info), out.lost)
    }
    fn expected(&self) -> Self::Decision {
        let cache = self
            .cache
            .iter()
            .map(|(id, ip)| ((*id).to_owned(), (*ip).to_owned()))
            .collect();
        let lost = self
            .lost
            .iter()
            .map(|(id, lost)| LostVif {
                port_id: PortId::from(*id),
                reason: match lost {
                    Lost::Gone => LostReason::Gone,
                    Lost::To(device) => LostReason::Reassigned {
                        device_id: (*device).to_owned(),
                    },
                },
            })
            .collect();
        (cache, lost)
    }
}

#[test]
fn cache_membership() {
    use OnLost::{Drop, Keep};
    use VifState::{Attached, Lost as LostState, Releasing};
    check(&[
        CacheCase {
            name: "no records: empty, whatever Neutron lists",
            vifs: &[],
            previous: &[],
            observed: &[("a", Seen::Here), ("b", Seen::Here)],
            on_lost: Drop,
            cache: &[],
            lost: &[],
        },
        CacheCase {
            name: "an attached record, refreshed: fresh entry",
            vifs: &[("a", 0, Attached)],
            previous: &["a"],
            observed: &[("a", Seen::Here)],
            on_lost: Drop,
            cache: &[("a", FRESH)],
            lost: &[],
        },
        CacheCase {
            name: "a port with our device_id but no record never enters",
            vifs: &[("a", 0, Attached)],
            previous: &[],
            observed: &[("a", Seen::Here), ("ghost", Seen::Here)],
            on_lost: Drop,
            cache: &[("a", FRESH)],
            lost: &[],
        },
        CacheCase {
            name: "a releasing record is not shown",
            vifs: &[("a", 0, Releasing), ("b", 1, Attached)],
            previous: &["a", "b"],
            observed: &[("a", Seen::Here), ("b", Seen::Here)],
            on_lost: Keep,
            cache: &[("b", FRESH)],
            lost: &[],
        },
        CacheCase {
            name: "a lost record is not shown even if its port is back",
            vifs: &[("a", 0, LostState)],
            previous: &["a"],
            observed: &[("a", Seen::Here)],
            on_lost: Keep,
            cache: &[],
            lost: &[],
        },
        CacheCase {
            name: "order follows position, not record order",
            vifs: &[("c", 2, Attached), ("a", 0, Attached), ("b", 1, Attached)],
            previous: &[],
            observed: &[("a", Seen::Here), ("b", Seen::Here), ("c", Seen::Here)],
            on_lost: Drop,
            cache: &[("a", FRESH), ("b", FRESH), ("c", FRESH)],
            lost: &[],
        },
        CacheCase {
            name: "not refreshed: the previous entry stays as it was",
            vifs: &[("a", 0, Attached), ("b", 1, Attached)],
            previous: &["a", "b"],
            observed: &[("b", Seen::Here)],
            on_lost: Drop,
            cache: &[("a", STALE), ("b", FRESH)],
            lost: &[],
        },
        CacheCase {
            name: "not refreshed and never cached: absent, not lost",
            vifs: &[("a", 0, Attached)],
            previous: &[],
            observed: &[],
            on_lost: Drop,
            cache: &[],
            lost: &[],
        },
        CacheCase {
            name: "a previous entry without a record is dropped",
            vifs: &[("a", 0, Attached)],
            previous: &["old", "a"],
            observed: &[],
            on_lost: Drop,
            cache: &[("a", STALE)],
            lost: &[],
        },
        CacheCase {
            name: "gone: lost and dropped",
            vifs: &[("a", 0, Attached), ("b", 1, Attached)],
            previous: &["a", "b"],
            observed: &[("a", Seen::Gone), ("b", Seen::Here)],
            on_lost: Drop,
            cache: &[("b", FRESH)],
            lost: &[("a", Lost::Gone)],
        },
        CacheCase {
            name: "gone, keep policy: lost, last entry kept",
            vifs: &[("a", 0, Attached), ("b", 1, Attached)],
            previous: &["a", "b"],
            observed: &[("a", Seen::Gone), ("b", Seen::Here)],
            on_lost: Keep,
            cache: &[("a", STALE), ("b", FRESH)],
            lost: &[("a", Lost::Gone)],
        },
        CacheCase {
            name: "gone, keep policy, never cached: lost, absent",
            vifs: &[("a", 0, Attached)],
            previous: &[],
            observed: &[("a", Seen::Gone)],
            on_lost: Keep,
            cache: &[],
            lost: &[("a", Lost::Gone)],
        },
        CacheCase {
            name: "given to another server: lost as reassigned",
            vifs: &[("a", 0, Attached)],
            previous: &["a"],
            observed: &[("a", Seen::At(OTHER_SERVER))],
            on_lost: Drop,
            cache: &[],
            lost: &[("a", Lost::To(OTHER_SERVER))],
        },
        CacheCase {
            name: "device_id cleared: lost as reassigned to nobody",
            vifs: &[("a", 0, Attached)],
            previous: &["a"],
            observed: &[("a", Seen::At(""))],
            on_lost: Keep,
            cache: &[("a", STALE)],
            lost: &[("a", Lost::To(""))],
        },
        CacheCase {
            name: "lost VIFs are reported in position order",
            vifs: &[("b", 1, Attached), ("a", 0, Attached), ("c", 2, Attached)],
            previous: &[],
            observed: &[("b", Seen::Gone), ("a", Seen::At(OTHER_SERVER)), ("c", Seen::Here)],
            on_lost: Drop,
            cache: &[("c", FRESH)],
            lost: &[("a", Lost::To(OTHER_SERVER)), ("b", Lost::Gone)],
        },
    ]);
}
