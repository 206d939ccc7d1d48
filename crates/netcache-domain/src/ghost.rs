//! What is a ghost: a Neutron port that carries a server's `device_id` but is not
//! in that server's VIF records. Ghosts are reported, never attached (invariant 1).

use chrono::{DateTime, Utc};

use crate::marker::OwnershipMarker;
use crate::neutron::Port;
use crate::vif::VifRecord;
use crate::{DeploymentId, IntentId, PortId};

/// Who a ghost belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GhostOwner {
    /// It carries this deployment's marker (with the intent that created it, if known).
    Ours { intent: Option<IntentId> },
    /// Someone else's port: never deleted by netcache.
    Foreign,
}

impl GhostOwner {
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Ours { .. } => "ours",
            Self::Foreign => "foreign",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ghost {
    pub port_id: PortId,
    pub device_id: String,
    pub owner: GhostOwner,
    pub revision_number: u64,
}

/// A ghost as recorded across sweeps.
#[derive(Clone, Debug, PartialEq)]
pub struct GhostSighting {
    pub port_id: PortId,
    pub device_id: String,
    pub owner: GhostOwner,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub times_seen: u32,
    pub revision_number: u64,
}

/// Splits the Neutron ports that carry a server's `device_id` into the ones its VIF
/// records know (any state) and ghosts.
#[must_use]
pub fn classify_ports<'a>(
    device_id: &str,
    records: &[VifRecord],
    ports: impl IntoIterator<Item = &'a Port>,
    deployment: &DeploymentId,
) -> Vec<Ghost> {
    // A server has a few records: a scan, not a set built per server.
    let known = |port: &PortId| records.iter().any(|v| &v.port_id == port);
    ports
        .into_iter()
        .filter(|p| p.carries_device_id(device_id) && !known(&p.id))
        .map(|p| Ghost {
            port_id: p.id.clone(),
            device_id: p.device_id.clone(),
            owner: owner_of(p, deployment),
            revision_number: p.revision_number,
        })
        .collect()
}

/// Ours only when the owner marker names this deployment.
#[must_use]
pub fn owner_of(port: &Port, deployment: &DeploymentId) -> GhostOwner {
    if OwnershipMarker::is_ours(port, deployment) {
        GhostOwner::Ours {
            intent: OwnershipMarker::read_intent(port),
        }
    } else {
        GhostOwner::Foreign
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerId;
    use crate::fixtures::{port, vif};
    use crate::vif::VifOrigin;

    #[test]
    fn only_unrecorded_ports_with_the_device_id_are_ghosts() {
        let server = ServerId(crate::fixtures::uuid(1));
        let deployment = DeploymentId::from("dep");
        let marker = OwnershipMarker {
            deployment: deployment.clone(),
            intent: IntentId(crate::fixtures::uuid(2)),
        };
        let known = port("known", &server, "10.0.0.2");
        let mut ours = port("ours", &server, "10.0.0.3");
        ours.tags = marker.tags().into_iter().collect();
        let foreign = port("foreign", &server, "10.0.0.4");
        let mut elsewhere = port("elsewhere", &server, "10.0.0.5");
        elsewhere.device_id = "other".into();

        let records = [vif("known", server, 0, VifOrigin::Created)];
        let ghosts = classify_ports(
            &server.to_string(),
            &records,
            &[known, ours, foreign, elsewhere],
            &deployment,
        );
        assert_eq!(ghosts.len(), 2);
        assert_eq!(ghosts[0].port_id, PortId::from("ours"));
        assert_eq!(
            ghosts[0].owner,
            GhostOwner::Ours {
                intent: Some(marker.intent)
            }
        );
        assert_eq!(ghosts[1].owner, GhostOwner::Foreign);
    }
}
