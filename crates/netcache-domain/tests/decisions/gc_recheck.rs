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

#[test]
fn gc_rechecks() {
    use SkipReason::{Changed, Gone};
    let ours = || port("g").tagged(DEPLOYMENT, 1).rev(3);
    let foreign = || port("g").with_name("user-port").rev(3);
    check(&[
        RecheckCase {
            name: "unchanged: go",
            sighted: ours(),
            live: Some(ours()),
            want: Ok(()),
        },
        RecheckCase {
            name: "gone",
            sighted: ours(),
            live: None,
            want: Err(Gone),
        },
        RecheckCase {
            name: "revision moved on",
            sighted: ours(),
            live: Some(ours().rev(4)),
            want: Err(Changed),
        },
        RecheckCase {
            name: "an older revision is a change too",
            sighted: ours(),
            live: Some(ours().rev(2)),
            want: Err(Changed),
        },
        RecheckCase {
            name: "bound to another server",
            sighted: ours(),
            live: Some(ours().on(OTHER_SERVER)),
            want: Err(Changed),
        },
        RecheckCase {
            name: "device_id cleared",
            sighted: ours(),
            live: Some(ours().on("")),
            want: Err(Changed),
        },
        RecheckCase {
            name: "marker stripped",
            sighted: ours(),
            live: Some(ours().with_tags(&[])),
            want: Err(Changed),
        },
        RecheckCase {
            name: "marker names another intent",
            sighted: ours(),
            live: Some(ours().tagged(DEPLOYMENT, 2)),
            want: Err(Changed),
        },
        RecheckCase {
            name: "marker names another deployment",
            sighted: ours(),
            live: Some(ours().tagged(OTHER_DEPLOYMENT, 1)),
            want: Err(Changed),
        },
        RecheckCase {
            name: "same marker moved from tags to name: unchanged",
            sighted: ours(),
            live: Some(ours().with_tags(&[]).named(DEPLOYMENT, 1)),
            want: Ok(()),
        },
        RecheckCase {
            name: "fields outside the check may differ at one revision",
            sighted: ours(),
            live: Some(Port {
                status: "DOWN".into(),
                ..ours().ip("10.0.0.7")
            }),
            want: Ok(()),
        },
        RecheckCase {
            name: "foreign, still foreign: go (unbind)",
            sighted: foreign(),
            live: Some(foreign()),
            want: Ok(()),
        },
        RecheckCase {
            name: "foreign that now carries our marker",
            sighted: foreign(),
            live: Some(foreign().tagged(DEPLOYMENT, 1)),
            want: Err(Changed),
        },
    ]);
}
