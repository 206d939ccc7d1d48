//! `ghost::classify_ports`: what is a ghost, and whose.

use super::*;

struct GhostCase {
    name: &'static str,
    /// SERVER's VIF records: (port id, state).
    records: &'static [(&'static str, VifState)],
    /// What Neutron lists.
    ports: Vec<Port>,
    /// The ghosts: (port id, owner, revision), in Neutron's order.
    want: &'static [(&'static str, Owner, u64)],
}

impl Case for GhostCase {
    type Decision = Vec<(String, GhostOwner, u64)>;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let records: Vec<VifRecord> = self
            .records
            .iter()
            .map(|(id, state)| vif(id, 0, *state, VifOrigin::Created))
            .collect();
        classify_ports(SERVER, &records, &self.ports, &deployment())
            .into_iter()
            .map(|g| (g.port_id.0, g.owner, g.revision_number))
            .collect()
    }
    fn expected(&self) -> Self::Decision {
        self.want
            .iter()
            .map(|(id, owner, rev)| ((*id).to_owned(), owner.ghost_owner(), *rev))
            .collect()
    }
}

#[test]
fn ghosts() {
    use Owner::{Foreign, Ours};
    use VifState::{Attached, Lost, Releasing};
    check(&[
        GhostCase {
            name: "nothing listed, no ghost",
            records: &[("a", Attached)],
            ports: vec![],
            want: &[],
        },
        GhostCase {
            name: "an attached record's port is no ghost",
            records: &[("a", Attached)],
            ports: vec![port("a")],
            want: &[],
        },
        GhostCase {
            name: "a releasing record's port is no ghost",
            records: &[("a", Releasing)],
            ports: vec![port("a").tagged(DEPLOYMENT, 1)],
            want: &[],
        },
        GhostCase {
            name: "a lost record's port that came back is no ghost",
            records: &[("a", Lost)],
            ports: vec![port("a")],
            want: &[],
        },
        GhostCase {
            name: "unrecorded, our tags: ours, with its intent",
            records: &[("a", Attached)],
            ports: vec![port("a"), port("b").tagged(DEPLOYMENT, 1)],
            want: &[("b", Ours(1), 1)],
        },
        GhostCase {
            name: "unrecorded, our name marker: ours",
            records: &[],
            ports: vec![port("b").named(DEPLOYMENT, 2)],
            want: &[("b", Ours(2), 1)],
        },
        GhostCase {
            name: "unrecorded, no marker: foreign",
            records: &[],
            ports: vec![port("b").with_name("my-port")],
            want: &[("b", Foreign, 1)],
        },
        GhostCase {
            name: "another deployment's tags: foreign",
            records: &[],
            ports: vec![port("b").tagged(OTHER_DEPLOYMENT, 1)],
            want: &[("b", Foreign, 1)],
        },
        GhostCase {
            name: "another deployment's name marker: foreign",
            records: &[],
            ports: vec![port("b").named(OTHER_DEPLOYMENT, 1)],
            want: &[("b", Foreign, 1)],
        },
        GhostCase {
            name: "owner tag without intent tag proves nothing",
            records: &[],
            ports: vec![port("b").with_tags(&["netcache:owner=nc-test"])],
            want: &[("b", Foreign, 1)],
        },
        GhostCase {
            name: "owner tag alone, name marker: the name decides",
            records: &[],
            ports: vec![port("b").with_tags(&["netcache:owner=nc-test"]).named(DEPLOYMENT, 3)],
            want: &[("b", Ours(3), 1)],
        },
        GhostCase {
            name: "name marker with a bad uuid is no marker",
            records: &[],
            ports: vec![port("b").with_name("netcache:nc-test:not-a-uuid")],
            want: &[("b", Foreign, 1)],
        },
        GhostCase {
            name: "another server's port is not this server's ghost",
            records: &[],
            ports: vec![port("b").tagged(DEPLOYMENT, 1).on(OTHER_SERVER)],
            want: &[],
        },
        GhostCase {
            name: "an unbound port is nobody's ghost",
            records: &[],
            ports: vec![port("b").tagged(DEPLOYMENT, 1).on("")],
            want: &[],
        },
        GhostCase {
            name: "device_id must match exactly",
            records: &[],
            ports: vec![
                port("b").on(&SERVER.to_uppercase()),
                port("c").on(&format!("{SERVER} ")),
            ],
            want: &[],
        },
        GhostCase {
            name: "ghosts keep Neutron's order and revision",
            records: &[("a", Attached)],
            ports: vec![port("c").rev(7), port("a"), port("b").tagged(DEPLOYMENT, 1).rev(4)],
            want: &[("c", Foreign, 7), ("b", Ours(1), 4)],
        },
    ]);
}
