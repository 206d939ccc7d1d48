//! The ownership marker stamped on every port netcache creates, in the same
//! request that creates it, so an ambiguous create can be resolved by lookup and
//! a leaked port can be proven ours.

use std::collections::BTreeSet;

use crate::neutron::Port;
use crate::{DeploymentId, IntentId};

const OWNER_TAG_PREFIX: &str = "netcache:owner=";
const INTENT_TAG_PREFIX: &str = "netcache:intent=";
/// Port name prefix used when Neutron cannot take tags in the create request:
/// `netcache:<deployment>:<intent>` (a deployment id never contains ':').
const NAME_PREFIX: &str = "netcache:";

/// How the marker rides in the create-port request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerMode {
    /// `tags` in the POST body (Neutron lists `tag-ports-during-bulk-creation`).
    Tags,
    /// The port `name`, a filterable attribute, set in the same POST; tags are added
    /// afterwards for visibility only.
    Name,
}

impl MarkerMode {
    /// Chooses the mode from the extensions Neutron lists; never assumes.
    #[must_use]
    pub fn for_extensions(extensions: &BTreeSet<String>) -> Self {
        if extensions.contains(crate::neutron::extension::TAG_PORTS_DURING_BULK_CREATION) {
            Self::Tags
        } else {
            Self::Name
        }
    }
}

/// "This port was created by deployment D for intent I."
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnershipMarker {
    pub deployment: DeploymentId,
    pub intent: IntentId,
}

impl OwnershipMarker {
    #[must_use]
    pub fn owner_tag(&self) -> String {
        format!("{OWNER_TAG_PREFIX}{}", self.deployment)
    }

    #[must_use]
    pub fn intent_tag(&self) -> String {
        format!("{INTENT_TAG_PREFIX}{}", self.intent)
    }

    #[must_use]
    pub fn tags(&self) -> Vec<String> {
        vec![self.owner_tag(), self.intent_tag()]
    }

    /// The port name that carries the marker when tags cannot ride in the POST.
    #[must_use]
    pub fn port_name(&self) -> String {
        format!("{NAME_PREFIX}{}:{}", self.deployment, self.intent)
    }

    /// Reads the marker off a port: from its tags, else from its name.
    #[must_use]
    pub fn read(port: &Port) -> Option<Self> {
        let from_tags = || {
            let owner = port.tags.iter().find_map(|t| t.strip_prefix(OWNER_TAG_PREFIX))?;
            let intent = port.tags.iter().find_map(|t| t.strip_prefix(INTENT_TAG_PREFIX))?;
            Some(Self {
                deployment: DeploymentId::from(owner),
                intent: intent.parse().ok()?,
            })
        };
        from_tags().or_else(|| Self::from_name(&port.name))
    }

    fn from_name(name: &str) -> Option<Self> {
        let (deployment, intent) = name.strip_prefix(NAME_PREFIX)?.split_once(':')?;
        Some(Self {
            deployment: DeploymentId::from(deployment),
            intent: intent.parse().ok()?,
        })
    }

    /// The intent id a port claims, whoever the owner.
    #[must_use]
    pub fn read_intent(port: &Port) -> Option<IntentId> {
        Self::read(port).map(|m| m.intent)
    }

    /// Whether the port carries this deployment's owner marker.
    #[must_use]
    pub fn is_ours(port: &Port, deployment: &DeploymentId) -> bool {
        Self::read(port).is_some_and(|m| &m.deployment == deployment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neutron::Port;
    use crate::{NetworkId, PortId, ProjectId};

    fn port(name: &str, tags: &[String]) -> Port {
        Port {
            id: PortId::from("p"),
            name: name.into(),
            network_id: NetworkId::from("n"),
            project_id: ProjectId::from("proj"),
            mac_address: "fa:16:3e:00:00:01".into(),
            fixed_ips: vec![],
            status: "DOWN".into(),
            admin_state_up: true,
            device_id: String::new(),
            device_owner: String::new(),
            binding_host_id: None,
            vif_type: None,
            vnic_type: None,
            vif_details: serde_json::Value::Null,
            profile: serde_json::Value::Null,
            tags: tags.iter().cloned().collect(),
            revision_number: 1,
            security_groups: Vec::new(),
            port_security_enabled: true,
            created_at: None,
        }
    }

    #[test]
    fn marker_round_trips_through_tags_and_fits_neutron_limit() {
        let m = OwnershipMarker {
            deployment: DeploymentId::from("nc-0123456789ab"),
            intent: IntentId(crate::fixtures::uuid(1)),
        };
        // Older Neutron releases cap a tag at 60 characters (29.0.0: 255).
        assert!(m.tags().iter().all(|t| t.len() <= 60));
        let p = port("", &m.tags());
        assert_eq!(OwnershipMarker::read(&p), Some(m.clone()));
        assert!(OwnershipMarker::is_ours(&p, &m.deployment));
        assert!(!OwnershipMarker::is_ours(&p, &DeploymentId::from("other")));
    }

    #[test]
    fn the_name_marker_alone_proves_ownership() {
        let m = OwnershipMarker {
            deployment: DeploymentId::from("nc-0123456789ab"),
            intent: IntentId(crate::fixtures::uuid(2)),
        };
        let p = port(&m.port_name(), &[]);
        assert_eq!(OwnershipMarker::read(&p), Some(m.clone()));
        assert!(OwnershipMarker::is_ours(&p, &m.deployment));
        assert!(!OwnershipMarker::is_ours(&port("my-port", &[]), &m.deployment));
        assert_eq!(OwnershipMarker::read(&port("netcache:x:not-a-uuid", &[])), None);
    }
}
