//! JSON text of the server columns that hold structured values. The domain types
//! carry no serde; the stored shapes are defined here and only here.

use std::collections::BTreeMap;
use std::net::IpAddr;

use netcache_domain::flavor::FlavorSnapshot;
use netcache_domain::server::{NetworkRequest, NetworkRequests};
use netcache_domain::server_attributes::ServerAttributes;
use netcache_domain::{HostName, NetworkId, PortId};
use serde::{Deserialize, Serialize};

/// `requested_networks`: `"auto"`, `"none"`, or a list of tagged requests.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StoredRequests {
    Keyword(Keyword),
    Explicit(Vec<StoredRequest>),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Keyword {
    Auto,
    None,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum StoredRequest {
    Network {
        network_id: Option<String>,
        fixed_ip: Option<IpAddr>,
        tag: Option<String>,
    },
    Port {
        port_id: String,
        tag: Option<String>,
    },
}

pub(crate) fn requests_to_json(requests: &NetworkRequests) -> String {
    let stored = match requests {
        NetworkRequests::Auto => StoredRequests::Keyword(Keyword::Auto),
        NetworkRequests::None => StoredRequests::Keyword(Keyword::None),
        NetworkRequests::Explicit(list) => StoredRequests::Explicit(
            list.iter()
                .map(|request| match request {
                    NetworkRequest::Network {
                        network_id,
                        fixed_ip,
                        tag,
                    } => StoredRequest::Network {
                        network_id: network_id.as_ref().map(|n| n.0.clone()),
                        fixed_ip: *fixed_ip,
                        tag: tag.clone(),
                    },
                    NetworkRequest::Port { port_id, tag } => StoredRequest::Port {
                        port_id: port_id.0.clone(),
                        tag: tag.clone(),
                    },
                })
                .collect(),
        ),
    };
    serde_json::to_string(&stored).expect("requested networks are always serialisable")
}

pub(crate) fn requests_from_json(text: &str) -> Result<NetworkRequests, serde_json::Error> {
    Ok(match serde_json::from_str(text)? {
        StoredRequests::Keyword(Keyword::Auto) => NetworkRequests::Auto,
        StoredRequests::Keyword(Keyword::None) => NetworkRequests::None,
        StoredRequests::Explicit(list) => NetworkRequests::Explicit(
            list.into_iter()
                .map(|request| match request {
                    StoredRequest::Network {
                        network_id,
                        fixed_ip,
                        tag,
                    } => NetworkRequest::Network {
                        network_id: network_id.map(NetworkId),
                        fixed_ip,
                        tag,
                    },
                    StoredRequest::Port { port_id, tag } => NetworkRequest::Port {
                        port_id: PortId(port_id),
                        tag,
                    },
                })
                .collect(),
        ),
    })
}

pub(crate) fn metadata_to_json(metadata: &BTreeMap<String, String>) -> String {
    serde_json::to_string(metadata).expect("string maps are always serialisable")
}

pub(crate) fn metadata_from_json(text: &str) -> Result<BTreeMap<String, String>, serde_json::Error> {
    serde_json::from_str(text)
}

pub(crate) fn hosts_to_json(hosts: &[HostName]) -> String {
    let names: Vec<&str> = hosts.iter().map(HostName::as_str).collect();
    serde_json::to_string(&names).expect("string lists are always serialisable")
}

pub(crate) fn hosts_from_json(text: &str) -> Result<Vec<HostName>, serde_json::Error> {
    let names: Vec<String> = serde_json::from_str(text)?;
    Ok(names.into_iter().map(HostName).collect())
}

pub(crate) fn strings_to_json(items: &[String]) -> String {
    serde_json::to_string(items).expect("string lists are always serialisable")
}

pub(crate) fn strings_from_json(text: &str) -> Result<Vec<String>, serde_json::Error> {
    serde_json::from_str(text)
}

pub(crate) fn attributes_to_json(attributes: &ServerAttributes) -> String {
    serde_json::to_string(attributes).expect("server attributes are always serialisable")
}

pub(crate) fn attributes_from_json(text: &str) -> Result<ServerAttributes, serde_json::Error> {
    serde_json::from_str(text)
}

/// `flavor`: the server's flavor snapshot.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredFlavor {
    name: String,
    vcpus: i64,
    ram_mb: i64,
    disk_gb: i64,
    ephemeral_gb: i64,
    swap_mb: i64,
    extra_specs: BTreeMap<String, String>,
}

pub(crate) fn flavor_to_json(flavor: &FlavorSnapshot) -> String {
    let stored = StoredFlavor {
        name: flavor.name.clone(),
        vcpus: flavor.vcpus,
        ram_mb: flavor.ram_mb,
        disk_gb: flavor.disk_gb,
        ephemeral_gb: flavor.ephemeral_gb,
        swap_mb: flavor.swap_mb,
        extra_specs: flavor.extra_specs.clone(),
    };
    serde_json::to_string(&stored).expect("a flavor snapshot is always serialisable")
}

pub(crate) fn flavor_from_json(text: &str) -> Result<FlavorSnapshot, serde_json::Error> {
    let s: StoredFlavor = serde_json::from_str(text)?;
    Ok(FlavorSnapshot {
        name: s.name,
        vcpus: s.vcpus,
        ram_mb: s.ram_mb,
        disk_gb: s.disk_gb,
        ephemeral_gb: s.ephemeral_gb,
        swap_mb: s.swap_mb,
        extra_specs: s.extra_specs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored text is read by operators and by older/newer netcache versions:
    /// pin its shape, not just the round trip.
    #[test]
    fn requested_networks_have_a_stable_shape() {
        assert_eq!(requests_to_json(&NetworkRequests::Auto), r#""auto""#);
        assert_eq!(requests_to_json(&NetworkRequests::None), r#""none""#);
        let explicit = NetworkRequests::Explicit(vec![
            NetworkRequest::Network {
                network_id: Some(NetworkId::from("net")),
                fixed_ip: Some("10.0.0.5".parse().unwrap()),
                tag: Some("nic1".into()),
            },
            NetworkRequest::Network {
                network_id: None,
                fixed_ip: None,
                tag: None,
            },
            NetworkRequest::Port {
                port_id: PortId::from("p1"),
                tag: None,
            },
        ]);
        let text = requests_to_json(&explicit);
        assert_eq!(
            text,
            r#"[{"kind":"network","network_id":"net","fixed_ip":"10.0.0.5","tag":"nic1"},{"kind":"network","network_id":null,"fixed_ip":null,"tag":null},{"kind":"port","port_id":"p1","tag":null}]"#
        );
        assert_eq!(requests_from_json(&text).unwrap(), explicit);
        assert!(requests_from_json(r#""sometimes""#).is_err());
    }
}
