//! Which networks and ports a caller may use, as Neutron would show them to the
//! user and as Nova would then decide: a project sees its own networks, shared
//! ones and external ones; it may put a port on its own or a shared network, never
//! on an external one that is not shared (Nova's `ExternalNetworkAttachForbidden`);
//! it sees only its own ports. Admins may use everything.
//!
//! Decided from the fields netcache reads with its own credentials (a network's
//! `project_id`, `shared` and `router:external`; a port's `project_id`), so no
//! user token is needed (docs/ARCHITECTURE.md, "Network visibility").

use crate::ProjectId;
use crate::neutron::{Network, Port};

/// Who wants a port: for which project, and whether as an admin.
#[derive(Clone, Copy, Debug)]
pub struct User<'a> {
    /// The project the port is for (the server's).
    pub project: &'a ProjectId,
    /// An admin keeps every network and port usable (Nova's admin).
    pub admin: bool,
}

/// What a user may do with a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkAccess {
    /// A port may be put on it.
    Usable,
    /// Neutron would not show it to the user: answered as a network that does not exist.
    Unseen,
    /// Shown (external networks are), but a non-admin may not put a port on it.
    ExternalForbidden,
}

/// What a user may do with a requested port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortAccess {
    /// The port belongs to the project.
    Usable,
    /// Neutron would not show it to the user: answered as a port that does not exist.
    Unseen,
    /// An admin sees it, but it belongs to another project than the server's.
    OtherProject,
}

/// Decides whether `user` may put a port on `network`.
#[must_use]
pub fn network_access(network: &Network, user: User<'_>) -> NetworkAccess {
    if user.admin {
        NetworkAccess::Usable
    } else if network.external && !network.shared {
        NetworkAccess::ExternalForbidden
    } else if network.shared || &network.project_id == user.project {
        NetworkAccess::Usable
    } else {
        NetworkAccess::Unseen
    }
}

/// Decides whether `user` may give `port` to a server of its project.
#[must_use]
pub fn port_access(port: &Port, user: User<'_>) -> PortAccess {
    match (&port.project_id == user.project, user.admin) {
        (true, _) => PortAccess::Usable,
        (false, true) => PortAccess::OtherProject,
        (false, false) => PortAccess::Unseen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::port;
    use crate::{NetworkId, ServerId};

    fn network(owner: &str, shared: bool, external: bool) -> Network {
        Network {
            id: NetworkId::from("net"),
            name: "net".into(),
            project_id: ProjectId::from(owner),
            shared,
            external,
            mtu: None,
            subnet_ids: vec![],
        }
    }

    #[test]
    fn networks_as_neutron_and_nova_would_decide() {
        use NetworkAccess::*;
        let a = ProjectId::from("a");
        // (owner, shared, external, admin, expected)
        let cases = [
            ("a", false, false, false, Usable),
            ("b", false, false, false, Unseen),
            ("b", true, false, false, Usable),
            ("b", false, true, false, ExternalForbidden),
            ("a", false, true, false, ExternalForbidden),
            ("b", true, true, false, Usable),
            ("a", false, false, true, Usable),
            ("b", false, false, true, Usable),
            ("b", true, false, true, Usable),
            ("b", false, true, true, Usable),
            ("b", true, true, true, Usable),
        ];
        for (owner, shared, external, admin, expected) in cases {
            let net = network(owner, shared, external);
            let user = User { project: &a, admin };
            assert_eq!(
                network_access(&net, user),
                expected,
                "owner {owner}, shared {shared}, external {external}, admin {admin}"
            );
        }
    }

    #[test]
    fn ports_of_other_projects_are_unseen_by_members() {
        use PortAccess::*;
        let a = ProjectId::from("a");
        let mut p = port("p", &ServerId(crate::fixtures::uuid(1)), "10.0.0.3");
        // (owner, admin, expected)
        let cases = [
            ("a", false, Usable),
            ("a", true, Usable),
            ("b", false, Unseen),
            ("b", true, OtherProject),
        ];
        for (owner, admin, expected) in cases {
            p.project_id = ProjectId::from(owner);
            let user = User { project: &a, admin };
            assert_eq!(port_access(&p, user), expected, "owner {owner}, admin {admin}");
        }
    }
}
