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

impl CacheCase {
    /// A refresh of no VIF record that saw nothing, over no previous cache,
    /// lost VIFs dropped: an empty cache, nothing lost. Each row then says
    /// what differs.
    fn new(name: &'static str) -> Self {
        Self {
            name,
            vifs: &[],
            previous: &[],
            observed: &[],
            on_lost: OnLost::Drop,
            cache: &[],
            lost: &[],
        }
    }
    fn vifs(self, vifs: &'static [(&'static str, i64, VifState)]) -> Self {
        Self { vifs, ..self }
    }
    fn observed(self, observed: &'static [(&'static str, Seen)]) -> Self {
        Self { observed, ..self }
    }
    fn previous(self, previous: &'static [&'static str]) -> Self {
        Self { previous, ..self }
    }
    fn keeping_lost(self) -> Self {
        Self {
            on_lost: OnLost::Keep,
            ..self
        }
    }
    fn cache(self, cache: &'static [(&'static str, &'static str)]) -> Self {
        Self { cache, ..self }
    }
    fn lost(self, lost: &'static [(&'static str, Lost)]) -> Self {
        Self { lost, ..self }
    }
}

impl Case for CacheCase {
    type Decision = (Vec<(String, String)>, Vec<LostVif>);
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let vifs = created(self.vifs.iter().copied());
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
    use VifState::{Attached, Lost as LostState, Releasing};
    check(&[
        CacheCase::new("no records: empty, whatever Neutron lists").observed(&[("a", Seen::Here), ("b", Seen::Here)]),
        CacheCase::new("an attached record, refreshed: fresh entry")
            .vifs(&[("a", 0, Attached)])
            .previous(&["a"])
            .observed(&[("a", Seen::Here)])
            .cache(&[("a", FRESH)]),
        CacheCase::new("a port with our device_id but no record never enters")
            .vifs(&[("a", 0, Attached)])
            .observed(&[("a", Seen::Here), ("ghost", Seen::Here)])
            .cache(&[("a", FRESH)]),
        CacheCase::new("a releasing record is not shown")
            .vifs(&[("a", 0, Releasing), ("b", 1, Attached)])
            .previous(&["a", "b"])
            .observed(&[("a", Seen::Here), ("b", Seen::Here)])
            .keeping_lost()
            .cache(&[("b", FRESH)]),
        CacheCase::new("a lost record is not shown even if its port is back")
            .vifs(&[("a", 0, LostState)])
            .previous(&["a"])
            .observed(&[("a", Seen::Here)])
            .keeping_lost(),
        CacheCase::new("order follows position, not record order")
            .vifs(&[("c", 2, Attached), ("a", 0, Attached), ("b", 1, Attached)])
            .observed(&[("a", Seen::Here), ("b", Seen::Here), ("c", Seen::Here)])
            .cache(&[("a", FRESH), ("b", FRESH), ("c", FRESH)]),
        CacheCase::new("not refreshed: the previous entry stays as it was")
            .vifs(&[("a", 0, Attached), ("b", 1, Attached)])
            .previous(&["a", "b"])
            .observed(&[("b", Seen::Here)])
            .cache(&[("a", STALE), ("b", FRESH)]),
        CacheCase::new("not refreshed and never cached: absent, not lost").vifs(&[("a", 0, Attached)]),
        CacheCase::new("a previous entry without a record is dropped")
            .vifs(&[("a", 0, Attached)])
            .previous(&["old", "a"])
            .cache(&[("a", STALE)]),
        CacheCase::new("gone: lost and dropped")
            .vifs(&[("a", 0, Attached), ("b", 1, Attached)])
            .previous(&["a", "b"])
            .observed(&[("a", Seen::Gone), ("b", Seen::Here)])
            .cache(&[("b", FRESH)])
            .lost(&[("a", Lost::Gone)]),
        CacheCase::new("gone, keep policy: lost, last entry kept")
            .vifs(&[("a", 0, Attached), ("b", 1, Attached)])
            .previous(&["a", "b"])
            .observed(&[("a", Seen::Gone), ("b", Seen::Here)])
            .keeping_lost()
            .cache(&[("a", STALE), ("b", FRESH)])
            .lost(&[("a", Lost::Gone)]),
        CacheCase::new("gone, keep policy, never cached: lost, absent")
            .vifs(&[("a", 0, Attached)])
            .observed(&[("a", Seen::Gone)])
            .keeping_lost()
            .lost(&[("a", Lost::Gone)]),
        CacheCase::new("given to another server: lost as reassigned")
            .vifs(&[("a", 0, Attached)])
            .previous(&["a"])
            .observed(&[("a", Seen::At(OTHER_SERVER))])
            .lost(&[("a", Lost::To(OTHER_SERVER))]),
        CacheCase::new("device_id cleared: lost as reassigned to nobody")
            .vifs(&[("a", 0, Attached)])
            .previous(&["a"])
            .observed(&[("a", Seen::At(""))])
            .keeping_lost()
            .cache(&[("a", STALE)])
            .lost(&[("a", Lost::To(""))]),
        CacheCase::new("lost VIFs are reported in position order")
            .vifs(&[("b", 1, Attached), ("a", 0, Attached), ("c", 2, Attached)])
            .observed(&[("b", Seen::Gone), ("a", Seen::At(OTHER_SERVER)), ("c", Seen::Here)])
            .cache(&[("c", FRESH)])
            .lost(&[("a", Lost::To(OTHER_SERVER)), ("b", Lost::Gone)]),
    ]);
}
