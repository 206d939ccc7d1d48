//! Nova's server views as typed, borrowing structs: a page of 1,000 detail
//! views serializes straight into the response body, with no `serde_json::Value`
//! tree (one allocation per key and value) built first.

use std::collections::BTreeMap;

use netcache_domain::network_info::{CacheAddresses, CachedIp};
use netcache_domain::server::{Server, TaskState, VmState};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use sha2::{Digest, Sha224};

use crate::wire::{Link, iso, iso_micro, links};

/// An image or flavor reference: its id and a bookmark link.
#[derive(Serialize)]
struct Reference<'a> {
    id: &'a str,
    links: [Link; 1],
}

impl<'a> Reference<'a> {
    fn new(base: &str, kind: &str, id: &'a str) -> Self {
        Self {
            id,
            links: [Link::bookmark(base, kind, id)],
        }
    }
}

/// A server booted from a volume has `"image": ""`, as in Nova.
#[derive(Serialize)]
#[serde(untagged)]
enum ImageField<'a> {
    None(&'static str),
    Image(Reference<'a>),
}

/// One address of `addresses`; the OS-EXT-IPS keys only in the extended form.
#[derive(Serialize)]
pub struct Address<'a> {
    version: Option<u8>,
    addr: &'a Option<String>,
    #[serde(rename = "OS-EXT-IPS:type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(rename = "OS-EXT-IPS-MAC:mac_addr", skip_serializing_if = "Option::is_none")]
    mac_addr: Option<&'a str>,
}

/// Addresses grouped by network label in VIF order: per label, every fixed IP,
/// then every floating IP. Empty while building, as in Nova.
pub struct Addresses<'a>(Vec<(&'a str, Vec<Address<'a>>)>);

impl<'a> Addresses<'a> {
    #[must_use]
    pub fn of(server: &Server, info: &'a CacheAddresses, extended: bool) -> Self {
        if server.vm_state == VmState::Building {
            return Self(Vec::new());
        }
        let mut fixed: Vec<(&str, Vec<Address>)> = Vec::new();
        let mut floating: Vec<Vec<Address>> = Vec::new();
        for vif in &info.0 {
            let label = vif.network.label.as_deref().unwrap_or_default();
            let at = fixed.iter().position(|(l, _)| *l == label).unwrap_or_else(|| {
                fixed.push((label, Vec::new()));
                floating.push(Vec::new());
                fixed.len() - 1
            });
            let entry = |ip: &'a CachedIp, kind: &'static str| Address {
                version: ip.version,
                addr: &ip.address,
                kind: extended.then_some(kind),
                mac_addr: extended.then_some(vif.address.as_str()),
            };
            fixed[at].1.extend(vif.fixed_ips().map(|ip| entry(ip, "fixed")));
            floating[at].extend(
                vif.fixed_ips()
                    .flat_map(|ip| &ip.floating_ips)
                    .map(|ip| entry(ip, "floating")),
            );
        }
        for ((_, list), floating) in fixed.iter_mut().zip(floating) {
            list.extend(floating);
        }
        Self(fixed)
    }

    /// One network's addresses (`GET /servers/{id}/ips/{label}`).
    #[must_use]
    pub fn of_network(self, label: &str) -> Option<Vec<Address<'a>>> {
        self.0.into_iter().find(|(l, _)| *l == label).map(|(_, list)| list)
    }
}

impl Serialize for Addresses<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (label, list) in &self.0 {
            map.serialize_entry(label, list)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct FaultView<'a> {
    code: u16,
    created: String,
    message: &'a str,
}

/// Nova's detail view of a server (`GET /servers/{id}`, `/servers/detail`).
#[derive(Serialize)]
pub struct ServerDetail<'a> {
    id: String,
    name: &'a str,
    status: &'static str,
    tenant_id: &'a str,
    user_id: &'a str,
    metadata: &'a BTreeMap<String, String>,
    #[serde(rename = "hostId")]
    host_id: String,
    image: ImageField<'a>,
    flavor: Reference<'a>,
    created: String,
    updated: String,
    addresses: Addresses<'a>,
    #[serde(rename = "accessIPv4")]
    access_ip_v4: String,
    #[serde(rename = "accessIPv6")]
    access_ip_v6: String,
    links: [Link; 2],
    #[serde(rename = "OS-DCF:diskConfig")]
    disk_config: &'static str,
    #[serde(rename = "OS-EXT-AZ:availability_zone")]
    availability_zone: &'a str,
    config_drive: &'static str,
    key_name: Option<&'a str>,
    #[serde(rename = "OS-SRV-USG:launched_at")]
    launched_at: Option<String>,
    #[serde(rename = "OS-SRV-USG:terminated_at")]
    terminated_at: Option<String>,
    #[serde(rename = "OS-EXT-SRV-ATTR:host")]
    host: Option<&'a str>,
    #[serde(rename = "OS-EXT-SRV-ATTR:hypervisor_hostname")]
    hypervisor_hostname: Option<&'a str>,
    #[serde(rename = "OS-EXT-SRV-ATTR:instance_name")]
    instance_name: String,
    #[serde(rename = "OS-EXT-STS:task_state")]
    task_state: Option<&'static str>,
    #[serde(rename = "OS-EXT-STS:vm_state")]
    vm_state: &'static str,
    #[serde(rename = "OS-EXT-STS:power_state")]
    power_state: u8,
    #[serde(rename = "os-extended-volumes:volumes_attached")]
    volumes_attached: [(); 0],
    /// Left out when the server's ports have none, as Nova leaves it out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    security_groups: Vec<Named<'a>>,
    /// Nova shows progress only where a task can make it move…
    #[serde(skip_serializing_if = "Option::is_none")]
    progress: Option<u8>,
    /// …and a fault only on a server that failed or is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    fault: Option<FaultView<'a>>,
    /// The server's group ids, on show only, from 2.71.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_groups: Option<Vec<String>>,
}

impl<'a> ServerDetail<'a> {
    /// `security_groups` are the names of the server's ports' groups.
    #[must_use]
    pub fn new(base: &str, server: &'a Server, info: &'a CacheAddresses, security_groups: &'a [String]) -> Self {
        let id = server.id.to_string();
        let status = server.api_status();
        let image = if server.image_ref.is_empty() {
            ImageField::None("")
        } else {
            ImageField::Image(Reference::new(base, "images", &server.image_ref))
        };
        let host = server.host.as_ref().map(netcache_domain::HostName::as_str);
        Self {
            name: &server.name,
            status,
            tenant_id: server.project_id.as_str(),
            user_id: &server.user_id,
            metadata: &server.metadata,
            host_id: host_id(server),
            image,
            flavor: Reference::new(base, "flavors", &server.flavor_ref),
            created: iso(server.created_at),
            updated: iso(server.updated_at),
            addresses: Addresses::of(server, info, true),
            access_ip_v4: server.access_ip_v4.map_or_else(String::new, |ip| ip.to_string()),
            access_ip_v6: server.access_ip_v6.map_or_else(String::new, |ip| ip.to_string()),
            links: links(base, "servers", &id),
            disk_config: "MANUAL",
            availability_zone: &server.availability_zone,
            config_drive: "",
            key_name: server.key_name.as_deref(),
            launched_at: server.launched_at.map(iso_micro),
            terminated_at: server.deleted_at.map(iso_micro),
            host,
            hypervisor_hostname: host,
            instance_name: format!("instance-{}", &id[..8]),
            task_state: server.task_state.map(TaskState::as_str),
            vm_state: server.vm_state.as_str(),
            power_state: server.power_state(),
            volumes_attached: [],
            security_groups: security_groups.iter().map(|name| Named { name }).collect(),
            progress: matches!(
                status,
                "ACTIVE" | "BUILD" | "REBUILD" | "RESIZE" | "VERIFY_RESIZE" | "MIGRATING"
            )
            .then_some(0),
            fault: server
                .fault
                .as_ref()
                .filter(|_| matches!(status, "ERROR" | "DELETED"))
                .map(|fault| FaultView {
                    code: fault.code,
                    created: iso(fault.created),
                    message: &fault.message,
                }),
            server_groups: None,
            id,
        }
    }

    /// With 2.71's `server_groups` (see `server_groups::of_server`).
    #[must_use]
    pub fn with_server_groups(self, server_groups: Option<Vec<String>>) -> Self {
        Self { server_groups, ..self }
    }
}

/// `GET /servers/detail`'s body: the views and, when the page is full, its
/// `next` link (the same body `wire::page` builds).
#[derive(Serialize)]
pub struct DetailPage<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    servers_links: Option<serde_json::Value>,
    servers: Vec<ServerDetail<'a>>,
}

impl<'a> DetailPage<'a> {
    #[must_use]
    pub fn new(base: &str, servers: Vec<ServerDetail<'a>>, limit: Option<usize>) -> Self {
        let last = servers.last().map(|view| view.id.as_str());
        Self {
            servers_links: crate::wire::next_link(base, "servers/detail", limit, servers.len(), last),
            servers,
        }
    }
}

/// Nova's `hostId`: an opaque per-project digest of the host.
fn host_id(server: &Server) -> String {
    server.host.as_ref().map_or_else(String::new, |host| {
        format!(
            "{:x}",
            Sha224::digest(format!("{}{}", server.project_id, host).as_bytes())
        )
    })
}
