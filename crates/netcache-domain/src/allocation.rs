//! Decisions of the allocation protocol.

use crate::marker::OwnershipMarker;
use crate::neutron::Port;

/// What to do with an intent whose create-port call had an ambiguous outcome (or
/// that a crash left pending), given the ports Neutron lists with its marker.
// Short-lived, one per lookup: the size of `Adopt` does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// Neutron committed the create: adopt exactly this port.
    Adopt(Port),
    /// No port carries the marker: the intent is abandoned. If the create commits
    /// later, the port carries an abandoned intent's marker: provably ours, garbage.
    Abandon,
}

/// Decides an ambiguous create from a marker lookup. Only ports that really carry
/// the intent are considered, so an over-broad lookup can never adopt a stranger.
/// One intent is sent at most once, so more than one match cannot come from
/// netcache; if it happens anyway the port with the lowest id wins (any fixed
/// choice will do: every process picks the same one) and the others stay ghosts.
pub fn resolve_ambiguous_create(marker: &OwnershipMarker, found: &[Port]) -> Resolution {
    found
        .iter()
        .filter(|p| OwnershipMarker::read_intent(p) == Some(marker.intent))
        .min_by(|a, b| a.id.cmp(&b.id))
        .cloned()
        .map_or(Resolution::Abandon, Resolution::Adopt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::port;
    use crate::{DeploymentId, IntentId, ServerId};

    #[test]
    fn adopts_only_a_port_carrying_the_intent() {
        let server = ServerId(crate::fixtures::uuid(1));
        let marker = OwnershipMarker {
            deployment: DeploymentId::from("d"),
            intent: IntentId(crate::fixtures::uuid(2)),
        };
        let stranger = port("stranger", &server, "10.0.0.9");
        assert_eq!(
            resolve_ambiguous_create(&marker, std::slice::from_ref(&stranger)),
            Resolution::Abandon
        );

        let mut ours = port("ours", &server, "10.0.0.3");
        ours.tags = marker.tags().into_iter().collect();
        assert_eq!(
            resolve_ambiguous_create(&marker, &[stranger, ours.clone()]),
            Resolution::Adopt(ours)
        );

        let mut by_name = port("by-name", &server, "10.0.0.4");
        by_name.name = marker.port_name();
        assert_eq!(
            resolve_ambiguous_create(&marker, &[by_name.clone()]),
            Resolution::Adopt(by_name)
        );
    }
}
