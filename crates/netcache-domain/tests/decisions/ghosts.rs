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

impl GhostCase {
    /// SERVER has no VIF record and Neutron lists nothing: no ghost. Each row
    /// then says what differs.
    fn new(name: &'static str) -> Self {
        Self {
            name,
            records: &[],
            ports: vec![],
            want: &[],
        }
    }
    fn ports(self, ports: Vec<Port>) -> Self {
        Self { ports, ..self }
    }
    fn records(self, records: &'static [(&'static str, VifState)]) -> Self {
        Self { records, ..self }
    }
    fn ghosts(self, want: &'static [(&'static str, Owner, u64)]) -> Self {
        Self { want, ..self }
    }
}

impl Case for GhostCase {
    type Decision = Vec<(String, GhostOwner, u64)>;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let records = created(self.records.iter().map(|&(id, state)| (id, 0, state)));
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
        GhostCase::new("nothing listed, no ghost").records(&[("a", Attached)]),
        GhostCase::new("an attached record's port is no ghost")
            .records(&[("a", Attached)])
            .ports(vec![port("a")]),
        GhostCase::new("a releasing record's port is no ghost")
            .records(&[("a", Releasing)])
            .ports(vec![port("a").tagged(DEPLOYMENT, 1)]),
        GhostCase::new("a lost record's port that came back is no ghost")
            .records(&[("a", Lost)])
            .ports(vec![port("a")]),
        GhostCase::new("unrecorded, our tags: ours, with its intent")
            .records(&[("a", Attached)])
            .ports(vec![port("a"), port("b").tagged(DEPLOYMENT, 1)])
            .ghosts(&[("b", Ours(1), 1)]),
        GhostCase::new("unrecorded, our name marker: ours")
            .ports(vec![port("b").named(DEPLOYMENT, 2)])
            .ghosts(&[("b", Ours(2), 1)]),
        GhostCase::new("unrecorded, no marker: foreign")
            .ports(vec![port("b").with_name("my-port")])
            .ghosts(&[("b", Foreign, 1)]),
        GhostCase::new("another deployment's tags: foreign")
            .ports(vec![port("b").tagged(OTHER_DEPLOYMENT, 1)])
            .ghosts(&[("b", Foreign, 1)]),
        GhostCase::new("another deployment's name marker: foreign")
            .ports(vec![port("b").named(OTHER_DEPLOYMENT, 1)])
            .ghosts(&[("b", Foreign, 1)]),
        GhostCase::new("owner tag without intent tag proves nothing")
            .ports(vec![port("b").with_tags(&["netcache:owner=nc-test"])])
            .ghosts(&[("b", Foreign, 1)]),
        GhostCase::new("owner tag alone, name marker: the name decides")
            .ports(vec![
                port("b").with_tags(&["netcache:owner=nc-test"]).named(DEPLOYMENT, 3),
            ])
            .ghosts(&[("b", Ours(3), 1)]),
        GhostCase::new("name marker with a bad uuid is no marker")
            .ports(vec![port("b").with_name("netcache:nc-test:not-a-uuid")])
            .ghosts(&[("b", Foreign, 1)]),
        GhostCase::new("another server's port is not this server's ghost")
            .ports(vec![port("b").tagged(DEPLOYMENT, 1).on(OTHER_SERVER)]),
        GhostCase::new("an unbound port is nobody's ghost").ports(vec![port("b").tagged(DEPLOYMENT, 1).on("")]),
        GhostCase::new("device_id must match exactly").ports(vec![
            port("b").on(&SERVER.to_uppercase()),
            port("c").on(&format!("{SERVER} ")),
        ]),
        GhostCase::new("ghosts keep Neutron's order and revision")
            .records(&[("a", Attached)])
            .ports(vec![
                port("c").rev(7),
                port("a"),
                port("b").tagged(DEPLOYMENT, 1).rev(4),
            ])
            .ghosts(&[("c", Foreign, 7), ("b", Ours(1), 4)]),
    ]);
}
