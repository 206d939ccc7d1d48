//! Floating IPs on the wire: Neutron's view of one, and the bodies that make,
//! associate and dissociate one.

use std::net::IpAddr;

use netcache_domain::neutron::FloatingIp;
use netcache_domain::{NetworkId, PortId};
use serde::{Deserialize, Serialize};

use super::{InvalidField, non_empty, nullable, owner, parse_ip};
use crate::{FloatingIpCreate, FloatingIpTarget};

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct FloatingIpBody {
    pub id: String,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub tenant_id: Option<String>,
    pub floating_ip_address: String,
    #[serde(default)]
    pub fixed_ip_address: Option<String>,
    #[serde(default)]
    pub port_id: Option<String>,
    #[serde(default)]
    pub floating_network_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_id: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub status: String,
    /// The `fip-port-details` extension's summary of the associated port.
    #[serde(default)]
    pub port_details: Option<PortDetailsBody>,
}

/// The part of `port_details` netcache reads.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PortDetailsBody {
    #[serde(default, deserialize_with = "nullable")]
    pub device_id: String,
}

impl TryFrom<FloatingIpBody> for FloatingIp {
    type Error = InvalidField;

    fn try_from(f: FloatingIpBody) -> Result<Self, Self::Error> {
        let floating_ip_address = parse_ip("floatingip", &f.id, "floating_ip_address", &f.floating_ip_address)?;
        let fixed_ip_address = non_empty(f.fixed_ip_address)
            .map(|ip| parse_ip("floatingip", &f.id, "fixed_ip_address", &ip))
            .transpose()?;
        let project_id = owner("floatingip", &f.id, f.project_id, f.tenant_id)?;
        Ok(FloatingIp {
            id: f.id,
            project_id,
            floating_network_id: NetworkId::from(f.floating_network_id),
            floating_ip_address,
            fixed_ip_address,
            port_id: non_empty(f.port_id).map(PortId::from),
            device_id: f.port_details.and_then(|details| non_empty(Some(details.device_id))),
        })
    }
}

/// `GET`, `POST` and `PUT /v2.0/floatingips[/{id}]`'s answer.
#[derive(Debug, Deserialize)]
pub struct FloatingIpEnvelope {
    pub floatingip: FloatingIpBody,
}

/// `POST /v2.0/floatingips`: an address of the external network, owned by the project.
#[derive(Debug, Serialize)]
pub struct FloatingIpCreateEnvelope<'a> {
    floatingip: FloatingIpCreateBody<'a>,
}

#[derive(Debug, Serialize)]
struct FloatingIpCreateBody<'a> {
    floating_network_id: &'a str,
    project_id: &'a str,
}

impl<'a> From<&'a FloatingIpCreate> for FloatingIpCreateEnvelope<'a> {
    fn from(create: &'a FloatingIpCreate) -> Self {
        Self {
            floatingip: FloatingIpCreateBody {
                floating_network_id: create.floating_network_id.as_str(),
                project_id: create.project_id.as_str(),
            },
        }
    }
}

/// `PUT /v2.0/floatingips/{id}`: associated with a port's fixed IP, or (a
/// `null` port) with none.
#[derive(Debug, Serialize)]
pub struct FloatingIpAssociationEnvelope<'a> {
    floatingip: FloatingIpAssociationBody<'a>,
}

#[derive(Debug, Serialize)]
struct FloatingIpAssociationBody<'a> {
    port_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fixed_ip_address: Option<IpAddr>,
}

impl<'a> From<Option<&'a FloatingIpTarget>> for FloatingIpAssociationEnvelope<'a> {
    fn from(target: Option<&'a FloatingIpTarget>) -> Self {
        Self {
            floatingip: FloatingIpAssociationBody {
                port_id: target.map(|t| t.port_id.as_str()),
                fixed_ip_address: target.map(|t| t.fixed_ip_address),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use netcache_domain::ProjectId;
    use serde_json::json;

    use super::*;

    /// A real Neutron 29's answer (`fip-port-details` on).
    const FIP_EXAMPLE: &str = r#"{
 "floatingip": {
  "id": "0203eb9a-aeee-4c30-b42c-9e408d19dbb2",
  "tenant_id": "fake_project_id",
  "project_id": "fake_project_id",
  "floating_ip_address": "172.24.4.18",
  "floating_network_id": "61c1730c-95bb-419d-9e7e-6559b122e228",
  "router_id": "8fb629a1-6cb8-4160-a01d-d16bef13b1d3",
  "port_id": "0036f079-1c76-4790-9f29-fa87f2aa3116",
  "fixed_ip_address": "10.0.0.11",
  "status": "DOWN",
  "description": "",
  "port_details": {"name": "p1", "status": "ACTIVE", "device_id": "11111111-1111-1111-1111-111111111111"},
  "tags": [],
  "revision_number": 0
 }
}"#;

    #[test]
    fn real_neutron_fip_converts() {
        let env: FloatingIpEnvelope = serde_json::from_str(FIP_EXAMPLE).unwrap();
        let fip = FloatingIp::try_from(env.floatingip).unwrap();
        assert_eq!(fip.floating_ip_address, "172.24.4.18".parse::<IpAddr>().unwrap());
        assert_eq!(fip.fixed_ip_address, Some("10.0.0.11".parse().unwrap()));
        assert_eq!(fip.port_id.unwrap().as_str(), "0036f079-1c76-4790-9f29-fa87f2aa3116");
        assert_eq!(fip.project_id.as_str(), "fake_project_id");
        assert_eq!(fip.floating_network_id.as_str(), "61c1730c-95bb-419d-9e7e-6559b122e228");
        assert_eq!(fip.device_id.as_deref(), Some("11111111-1111-1111-1111-111111111111"));

        let unassociated: FloatingIpBody = serde_json::from_value(json!({
            "id": "f", "tenant_id": "t", "floating_ip_address": "2001:db8::5", "floating_network_id": "n",
            "fixed_ip_address": null, "port_id": null, "port_details": null
        }))
        .unwrap();
        let fip = FloatingIp::try_from(unassociated).unwrap();
        assert_eq!(fip.port_id, None);
        assert_eq!(fip.fixed_ip_address, None);
        assert_eq!(fip.device_id, None);
        assert_eq!(fip.project_id.as_str(), "t");
    }

    #[test]
    fn fip_without_owner_is_invalid() {
        let body: FloatingIpBody =
            serde_json::from_value(json!({"id": "f", "floating_ip_address": "172.24.4.3"})).unwrap();
        assert_eq!(FloatingIp::try_from(body).unwrap_err().field, "project_id");
    }

    #[test]
    fn bodies_carry_what_neutron_takes() {
        let create = FloatingIpCreate {
            floating_network_id: NetworkId::from("ext"),
            project_id: ProjectId::from("demo"),
        };
        assert_eq!(
            serde_json::to_value(FloatingIpCreateEnvelope::from(&create)).unwrap(),
            json!({"floatingip": {"floating_network_id": "ext", "project_id": "demo"}})
        );
        let target = FloatingIpTarget {
            port_id: PortId::from("p"),
            fixed_ip_address: "10.0.0.5".parse().unwrap(),
        };
        assert_eq!(
            serde_json::to_value(FloatingIpAssociationEnvelope::from(Some(&target))).unwrap(),
            json!({"floatingip": {"port_id": "p", "fixed_ip_address": "10.0.0.5"}})
        );
        assert_eq!(
            serde_json::to_value(FloatingIpAssociationEnvelope::from(None)).unwrap(),
            json!({"floatingip": {"port_id": null}})
        );
    }
}
