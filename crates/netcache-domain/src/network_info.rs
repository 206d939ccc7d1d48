//! The network info model, serialised exactly as Nova's `instance_info_caches.network_info`
//! JSON (key order included), so operators who know Nova can read it.
//!
//! This is netcache's persisted cache format, hence serde lives here rather than at an
//! API boundary.

use std::hash::{DefaultHasher, Hasher};
use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An ordered list of VIFs: one server's cache.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NetworkInfo(pub Vec<Vif>);

impl NetworkInfo {
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("network info is always serialisable")
    }

    /// The digest of what [`NetworkInfo::to_json`] writes, taken while serialising.
    #[must_use]
    pub fn text_digest(&self) -> TextDigest {
        self.digest_written(None).expect("network info is always serialisable")
    }

    /// The digest of `text` if it is what [`NetworkInfo::to_json`] writes, byte
    /// for byte: compared while serialising, so no string is built, and a
    /// difference stops it.
    #[must_use]
    pub fn digest_if_written_as(&self, text: &str) -> Option<TextDigest> {
        self.digest_written(Some(text.as_bytes()))
    }

    /// Serialises into a [`Digesting`] writer, through a buffer: serde writes a
    /// few bytes at a time, and hashing each piece cost heal more than reading
    /// the texts it spares.
    fn digest_written(&self, expected: Option<&[u8]>) -> Option<TextDigest> {
        let mut writer = io::BufWriter::with_capacity(
            DIGEST_BLOCK,
            Digesting {
                hasher: DefaultHasher::new(),
                expected,
            },
        );
        serde_json::to_writer(&mut writer, self).ok()?;
        let Digesting { hasher, expected } = writer.into_inner().ok()?;
        expected
            .is_none_or(<[u8]>::is_empty)
            .then(|| TextDigest(hasher.finish()))
    }

    /// Reads a stored cache, tolerating keys missing from older blobs.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    pub fn port_ids(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|v| v.id.as_str())
    }
}

/// A digest of a cache's text as [`NetworkInfo::to_json`] writes it. Heal
/// records it of a cache it found right (with the cache, at its generation),
/// and compares a later rebuild's with it rather than read the text again: the
/// text is the same while the generation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextDigest(pub(crate) u64);

/// A writer that hashes what it is written and, given a text, consumes it as
/// long as it is written the same bytes, failing at the first difference.
struct Digesting<'a> {
    hasher: DefaultHasher,
    expected: Option<&'a [u8]>,
}

const DIGEST_BLOCK: usize = 4096;

impl io::Write for Digesting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(rest) = &mut self.expected {
            *rest = rest.strip_prefix(buf).ok_or(io::ErrorKind::InvalidData)?;
        }
        self.hasher.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the compute API shows of a stored cache: each VIF's MAC, network label
/// and IPs. Read from the cache's text without the rest, which serde skips
/// unbuilt (a detail page reads a thousand caches).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct CacheAddresses(pub Vec<VifAddresses>);

impl CacheAddresses {
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// A [`Vif`]'s MAC address, network label and IPs.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct VifAddresses {
    /// The MAC address.
    pub address: String,
    pub network: NetworkAddresses,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct NetworkAddresses {
    pub label: Option<String>,
    pub subnets: Vec<SubnetAddresses>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct SubnetAddresses {
    pub ips: Vec<CachedIp>,
}

/// A fixed IP with its floating IPs, or a floating IP (which has none).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct CachedIp {
    pub address: Option<String>,
    pub version: Option<u8>,
    #[serde(default)]
    pub floating_ips: Vec<CachedIp>,
}

impl VifAddresses {
    /// Fixed IPs, in subnet order.
    pub fn fixed_ips(&self) -> impl Iterator<Item = &CachedIp> {
        self.network.subnets.iter().flat_map(|s| s.ips.iter())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vif {
    pub id: String,
    pub address: String,
    pub network: Network,
    #[serde(rename = "type")]
    pub vif_type: Option<String>,
    #[serde(default)]
    pub details: Map<String, Value>,
    pub devname: String,
    pub ovs_interfaceid: Option<String>,
    #[serde(default)]
    pub qbh_params: Option<Value>,
    #[serde(default)]
    pub qbg_params: Option<Value>,
    pub active: bool,
    #[serde(default = "normal")]
    pub vnic_type: String,
    #[serde(default)]
    pub profile: Map<String, Value>,
    #[serde(default)]
    pub preserve_on_delete: bool,
    #[serde(default)]
    pub delegate_create: bool,
    #[serde(default)]
    pub meta: Map<String, Value>,
}

fn normal() -> String {
    "normal".to_owned()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Network {
    pub id: String,
    pub bridge: Option<String>,
    pub label: Option<String>,
    pub subnets: Vec<Subnet>,
    pub meta: NetworkMeta,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkMeta {
    #[serde(default)]
    pub injected: bool,
    pub tenant_id: Option<String>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub physical_network: Option<String>,
    #[serde(default)]
    pub tunneled: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Subnet {
    pub cidr: String,
    pub dns: Vec<Ip>,
    pub gateway: Ip,
    pub ips: Vec<FixedIp>,
    pub routes: Vec<Route>,
    pub version: Option<u8>,
    pub meta: SubnetMeta,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubnetMeta {
    #[serde(default)]
    pub enable_dhcp: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_address_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhcp_server: Option<String>,
}

/// Nova's `IP`: an address with its type (`fixed`, `floating`, `gateway`, `dns`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ip {
    pub address: Option<String>,
    #[serde(rename = "type")]
    pub ip_type: String,
    pub version: Option<u8>,
    #[serde(default)]
    pub meta: Map<String, Value>,
}

impl Ip {
    pub fn new(address: Option<std::net::IpAddr>, ip_type: &str) -> Self {
        Self {
            address: address.map(|a| a.to_string()),
            ip_type: ip_type.to_owned(),
            version: address.map(ip_version),
            meta: Map::new(),
        }
    }
}

/// Nova's `FixedIP`: an `IP` of type `fixed` plus its floating IPs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FixedIp {
    #[serde(flatten)]
    pub ip: Ip,
    #[serde(default)]
    pub floating_ips: Vec<Ip>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub cidr: String,
    pub gateway: Ip,
    pub interface: Option<String>,
    #[serde(default)]
    pub meta: Map<String, Value>,
}

#[must_use]
pub fn ip_version(ip: std::net::IpAddr) -> u8 {
    if ip.is_ipv4() { 4 } else { 6 }
}

impl Vif {
    /// Fixed IPs, in subnet order.
    pub fn fixed_ips(&self) -> impl Iterator<Item = &FixedIp> {
        self.network.subnets.iter().flat_map(|s| s.ips.iter())
    }
}
