//! `instance_info_caches.network_info`: the JSON list of VIFs Nova's network
//! model serializes, read as far as the audit needs it.

use std::net::IpAddr;

use netcache_domain::nova::CachedVif;
use netcache_domain::{InstanceUuid, NetworkId, PortId};
use serde::Deserialize;

use crate::{Error, Result};

#[derive(Deserialize)]
struct WireVif {
    id: String,
    #[serde(default)]
    network: Option<WireNetwork>,
    #[serde(default)]
    preserve_on_delete: Option<bool>,
}

#[derive(Deserialize)]
struct WireNetwork {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    subnets: Option<Vec<WireSubnet>>,
}

#[derive(Deserialize)]
struct WireSubnet {
    #[serde(default)]
    ips: Option<Vec<WireIp>>,
}

#[derive(Deserialize)]
struct WireIp {
    address: IpAddr,
}

/// The VIFs of `instance`'s cache: none for NULL, `""`, `null` or `[]`; a cache
/// that is not Nova's list of VIFs is an [`Error::Record`].
pub(super) fn parse(instance: &InstanceUuid, network_info: Option<&str>) -> Result<Vec<CachedVif>> {
    let text = network_info.map_or("", str::trim);
    if text.is_empty() || text == "null" {
        return Ok(Vec::new());
    }
    let vifs: Vec<WireVif> = serde_json::from_str(text).map_err(|e| Error::Record {
        instance: instance.clone(),
        reason: format!("its info cache (network_info) is not a list of VIFs: {e}"),
    })?;
    Ok(vifs.into_iter().map(CachedVif::from).collect())
}

impl From<WireVif> for CachedVif {
    fn from(vif: WireVif) -> Self {
        let (network_id, addresses) = match vif.network {
            Some(network) => (
                network.id.map(NetworkId),
                network
                    .subnets
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|subnet| subnet.ips.unwrap_or_default())
                    .map(|ip| ip.address)
                    .collect(),
            ),
            None => (None, Vec::new()),
        };
        CachedVif {
            port_id: PortId(vif.id),
            network_id,
            addresses,
            preserve_on_delete: vif.preserve_on_delete.unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uuid() -> InstanceUuid {
        InstanceUuid::from("6f1c7b0e-4b1a-4a39-9a51-0b7b3c1e2f10")
    }

    #[test]
    fn empty_caches_have_no_vifs() {
        for text in [None, Some(""), Some("  "), Some("[]"), Some("null")] {
            assert_eq!(parse(&uuid(), text).unwrap(), Vec::new(), "{text:?}");
        }
    }

    #[test]
    fn a_cache_gives_each_vifs_port_network_fixed_ips_and_preserve_on_delete() {
        let text = r#"[
          {"id": "p1", "address": "fa:16:3e:00:00:01", "type": "ovs", "active": true,
           "network": {"id": "n1", "label": "private", "bridge": "br-int",
             "subnets": [
               {"cidr": "10.0.0.0/24", "ips": [{"address": "10.0.0.5", "type": "fixed", "version": 4,
                 "floating_ips": [{"address": "172.24.4.9", "type": "floating"}]}]},
               {"cidr": "fd00::/64", "ips": [{"address": "fd00::5", "type": "fixed", "version": 6}]}]},
           "preserve_on_delete": true},
          {"id": "p2", "network": {"id": "n2", "subnets": []}},
          {"id": "p3", "network": null, "preserve_on_delete": null}
        ]"#;
        let vifs = parse(&uuid(), Some(text)).unwrap();
        assert_eq!(vifs.len(), 3);
        assert_eq!(vifs[0].port_id, PortId::from("p1"));
        assert_eq!(vifs[0].network_id, Some(NetworkId::from("n1")));
        assert_eq!(
            vifs[0].addresses,
            vec!["10.0.0.5".parse::<IpAddr>().unwrap(), "fd00::5".parse().unwrap()]
        );
        assert!(vifs[0].preserve_on_delete);
        assert_eq!(
            (vifs[1].network_id.clone(), vifs[1].preserve_on_delete),
            (Some(NetworkId::from("n2")), false)
        );
        assert_eq!((vifs[2].network_id.clone(), vifs[2].addresses.len()), (None, 0));
    }

    #[test]
    fn an_unreadable_cache_is_an_error_naming_the_instance() {
        for text in [
            "{",
            r#"{"id": "p1"}"#,
            r#"[{"network": {}}]"#,
            r#"[{"id": "p1", "network": {"subnets": [{"ips": [{"address": "nope"}]}]}}]"#,
        ] {
            let err = parse(&uuid(), Some(text)).unwrap_err();
            assert!(
                matches!(&err, Error::Record { instance, .. } if *instance == uuid()),
                "{text}: {err}"
            );
            assert!(err.to_string().contains("network_info"), "{err}");
        }
    }
}
