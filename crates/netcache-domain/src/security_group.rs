//! Which security group a user means: Nova's rule for a name or an id among the
//! groups a project may use.

use crate::neutron::SecurityGroup;

/// Nova's name for the group Neutron gives every port when none is asked for.
pub const DEFAULT: &str = "default";

/// Why a requested group names none of the groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// No group has that id or name.
    Missing,
    /// Several groups have that name (Neutron does not keep names unique).
    Ambiguous,
}

/// The group `wanted` names among `groups`: its id first (ids are unique), else
/// its name, which must then be one group's only.
pub fn resolve<'a>(groups: &'a [SecurityGroup], wanted: &str) -> Result<&'a SecurityGroup, Unresolved> {
    if let Some(by_id) = groups.iter().find(|g| g.id == wanted) {
        return Ok(by_id);
    }
    let mut named = groups.iter().filter(|g| g.name == wanted);
    match (named.next(), named.next()) {
        (Some(only), None) => Ok(only),
        (Some(_), Some(_)) => Err(Unresolved::Ambiguous),
        (None, _) => Err(Unresolved::Missing),
    }
}

/// Whether a boot's groups leave the ports to Neutron's default: none asked
/// for, or `default` alone (Nova sends no groups then).
#[must_use]
pub fn neutron_default(requested: &[String]) -> bool {
    matches!(requested, [] | [_]) && requested.iter().all(|g| g == DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProjectId;

    fn group(id: &str, name: &str) -> SecurityGroup {
        SecurityGroup {
            id: id.into(),
            name: name.into(),
            project_id: ProjectId::from("p"),
            description: String::new(),
            rules: vec![],
        }
    }

    #[test]
    fn an_id_wins_over_a_name_and_a_shared_name_is_ambiguous() {
        let groups = [group("a", "web"), group("b", "web"), group("c", "a"), group("d", "db")];
        assert_eq!(resolve(&groups, "a").map(|g| &g.id), Ok(&"a".to_string()));
        assert_eq!(resolve(&groups, "db").map(|g| &g.id), Ok(&"d".to_string()));
        assert_eq!(resolve(&groups, "web"), Err(Unresolved::Ambiguous));
        assert_eq!(resolve(&groups, "nope"), Err(Unresolved::Missing));
    }

    #[test]
    fn only_default_alone_leaves_the_ports_to_neutron() {
        let names = |n: &[&str]| n.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert!(neutron_default(&[]));
        assert!(neutron_default(&names(&["default"])));
        assert!(!neutron_default(&names(&["default", "web"])));
        assert!(!neutron_default(&names(&["web"])));
    }
}
