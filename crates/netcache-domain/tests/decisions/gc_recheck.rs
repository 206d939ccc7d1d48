//! `gc::recheck`: the live re-read just before acting.

use super::*;

struct RecheckCase {
    name: &'static str,
    /// The port as it was when sighted.
    sighted: Port,
    /// The port as Neutron shows it now (`None`: gone).
    live: Option<Port>,
    want: Result<(), SkipReason>,
}

pub(crate) fn sighting_of(port: &Port) -> GhostSighting {
    GhostSighting {
        port_id: port.id.clone(),
        device_id: port.device_id.clone(),
        owner: owner_of(port, &deployment()),
        first_seen: t0(),
        last_seen: t0(),
        times_seen: 2,
        revision_number: port.revision_number,
    }
}

impl Case for RecheckCase {
    type Decision = Result<(), SkipReason>;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        recheck(&sighting_of(&self.sighted), self.live.as_ref(), &deployment())
    }
    fn expected(&self) -> Self::Decision {
        self.want
    }
}

/// Rows that sighted the same port: (name, the port live now, the decision).
fn sighted_as(
    sighted: Port,
    rows: impl IntoIterator<Item = (&'static str, Option<Port>, Result<(), SkipReason>)>,
) -> impl Iterator<Item = RecheckCase> {
    rows.into_iter().map(move |(name, live, want)| RecheckCase {
        name,
        sighted: sighted.clone(),
        live,
        want,
    })
}

#[test]
fn gc_rechecks() {
    use SkipReason::{Changed, Gone};
    let ours = || port("g").tagged(DEPLOYMENT, 1).rev(3);
    let foreign = || port("g").with_name("user-port").rev(3);
    let ours_rows = sighted_as(
        ours(),
        [
            ("unchanged: go", Some(ours()), Ok(())),
            ("gone", None, Err(Gone)),
            ("revision moved on", Some(ours().rev(4)), Err(Changed)),
            ("an older revision is a change too", Some(ours().rev(2)), Err(Changed)),
            ("bound to another server", Some(ours().on(OTHER_SERVER)), Err(Changed)),
            ("device_id cleared", Some(ours().on("")), Err(Changed)),
            ("marker stripped", Some(ours().with_tags(&[])), Err(Changed)),
            (
                "marker names another intent",
                Some(ours().tagged(DEPLOYMENT, 2)),
                Err(Changed),
            ),
            (
                "marker names another deployment",
                Some(ours().tagged(OTHER_DEPLOYMENT, 1)),
                Err(Changed),
            ),
            (
                "same marker moved from tags to name: unchanged",
                Some(ours().with_tags(&[]).named(DEPLOYMENT, 1)),
                Ok(()),
            ),
            (
                "fields outside the check may differ at one revision",
                Some(Port {
                    status: "DOWN".into(),
                    ..ours().ip("10.0.0.7")
                }),
                Ok(()),
            ),
        ],
    );
    let foreign_rows = sighted_as(
        foreign(),
        [
            ("foreign, still foreign: go (unbind)", Some(foreign()), Ok(())),
            (
                "foreign that now carries our marker",
                Some(foreign().tagged(DEPLOYMENT, 1)),
                Err(Changed),
            ),
        ],
    );
    check(&ours_rows.chain(foreign_rows).collect::<Vec<_>>());
}
