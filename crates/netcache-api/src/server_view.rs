//! Nova's server views as typed, borrowing structs: a page of 1,000 detail
//! views serializes straight into the response body, with no `serde_json::Value`
//! tree (one allocation per key and value) built first.

use std::collections::BTreeMap;

use netcache_domain::network_info::{CacheAddresses, CachedIp};
use netcache_domain::server::{Server, TaskState, VmState};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::Caller;
use crate::microversion::Microversion;
use crate::wire::{Link, iso, iso_micro, links};

/// What a server view shows beyond 2.1's fields: the request's microversion
/// and what the caller's policy lets it see (Nova asks the policy per view;
/// every rule here is decided by the caller's roles alone).
#[derive(Clone, Copy, Debug)]
pub struct ViewOptions {
    pub version: Microversion,
    /// `OS-EXT-SRV-ATTR:*` (`os_compute_api:os-extended-server-attributes`).
    pub extended_attributes: bool,
    /// 2.16's `host_status` (`os_compute_api:servers:show:host_status`).
    pub host_status: bool,
    /// 2.47's flavor `extra_specs` (`os_compute_api:servers:show:flavor-extra-specs`).
    pub flavor_extra_specs: bool,
}

impl ViewOptions {
    /// Everything the policy can show (an admin's view) at `version`.
    #[must_use]
    pub const fn everything(version: Microversion) -> Self {
        Self {
            version,
            extended_attributes: true,
            host_status: true,
            flavor_extra_specs: true,
        }
    }

    #[must_use]
    pub fn of(caller: &Caller, version: Microversion) -> Self {
        Self {
            version,
            extended_attributes: caller.allows("os_compute_api:os-extended-server-attributes"),
            host_status: caller.allows("os_compute_api:servers:show:host_status"),
            flavor_extra_specs: caller.allows("os_compute_api:servers:show:flavor-extra-specs"),
        }
    }
}

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
    Image(ImageView<'a>),
}

/// The image's reference, with its properties from 2.98.
#[derive(Serialize)]
struct ImageView<'a> {
    #[serde(flatten)]
    reference: Reference<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<BTreeMap<String, String>>,
}

/// The flavor: a reference, or from 2.47 what the server was built with
/// (`{}` for a server that kept none, as Nova shows a flavor it lost).
#[derive(Serialize)]
#[serde(untagged)]
enum FlavorField<'a> {
    Reference(Reference<'a>),
    Embedded(EmbeddedFlavor<'a>),
    Lost(BTreeMap<String, String>),
}

#[derive(Serialize)]
struct EmbeddedFlavor<'a> {
    vcpus: i64,
    ram: i64,
    disk: i64,
    ephemeral: i64,
    swap: i64,
    original_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_specs: Option<&'a BTreeMap<String, String>>,
}

impl<'a> FlavorField<'a> {
    fn embedded(server: &'a Server, extra_specs: bool) -> Self {
        server.flavor.as_ref().map_or_else(
            || Self::Lost(BTreeMap::new()),
            |flavor| {
                Self::Embedded(EmbeddedFlavor {
                    vcpus: flavor.vcpus,
                    ram: flavor.ram_mb,
                    disk: flavor.disk_gb,
                    ephemeral: flavor.ephemeral_gb,
                    swap: flavor.swap_mb,
                    original_name: &flavor.name,
                    extra_specs: extra_specs.then_some(&flavor.extra_specs),
                })
            },
        )
    }
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
    flavor: FlavorField<'a>,
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
    #[serde(flatten)]
    extended: Option<Extended<'a>>,
    /// 2.90 shows the hostname to everyone.
    #[serde(rename = "OS-EXT-SRV-ATTR:hostname", skip_serializing_if = "Option::is_none")]
    hostname: Option<&'a Option<String>>,
    #[serde(rename = "OS-SRV-USG:launched_at")]
    launched_at: Option<String>,
    #[serde(rename = "OS-SRV-USG:terminated_at")]
    terminated_at: Option<String>,
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
    #[serde(flatten)]
    later: Later<'a>,
}

/// `OS-EXT-SRV-ATTR:*`, for callers the policy lets see them; 2.3 adds the
/// second group.
#[derive(Serialize)]
struct Extended<'a> {
    #[serde(rename = "OS-EXT-SRV-ATTR:host")]
    host: Option<&'a str>,
    #[serde(rename = "OS-EXT-SRV-ATTR:hypervisor_hostname")]
    hypervisor_hostname: Option<&'a str>,
    #[serde(rename = "OS-EXT-SRV-ATTR:instance_name")]
    instance_name: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    since_2_3: Option<Extended23<'a>>,
}

#[derive(Serialize)]
struct Extended23<'a> {
    #[serde(rename = "OS-EXT-SRV-ATTR:hostname")]
    hostname: &'a Option<String>,
    #[serde(rename = "OS-EXT-SRV-ATTR:reservation_id")]
    reservation_id: &'a Option<String>,
    #[serde(rename = "OS-EXT-SRV-ATTR:launch_index")]
    launch_index: u32,
    #[serde(rename = "OS-EXT-SRV-ATTR:kernel_id")]
    kernel_id: &'static str,
    #[serde(rename = "OS-EXT-SRV-ATTR:ramdisk_id")]
    ramdisk_id: &'static str,
    /// The fake guest's root disk, once it has booted.
    #[serde(rename = "OS-EXT-SRV-ATTR:root_device_name")]
    root_device_name: Option<&'static str>,
    #[serde(rename = "OS-EXT-SRV-ATTR:user_data")]
    user_data: &'a Option<String>,
}

/// The fields later microversions add, each from its version on (`None`:
/// not shown; `Some(None)`: shown as null).
#[derive(Default, Serialize)]
struct Later<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    locked: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<Vec<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted_image_certificates: Option<&'a Option<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    locked_reason: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned_availability_zone: Option<&'a Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler_hints: Option<&'a BTreeMap<String, serde_json::Value>>,
}

impl<'a> Later<'a> {
    fn of(server: &'a Server, options: ViewOptions) -> Self {
        let at = |minor| options.version.at_least(minor);
        let attributes = &server.attributes;
        Self {
            locked: at(9).then_some(server.locked_by.is_some()),
            host_status: (at(16) && options.host_status).then(|| host_status(server)),
            description: at(19).then_some(&attributes.description),
            tags: at(26).then(|| attributes.tags.iter().map(String::as_str).collect()),
            trusted_image_certificates: at(63).then_some(&attributes.trusted_image_certificates),
            locked_reason: at(73).then(|| {
                attributes
                    .locked_reason
                    .as_deref()
                    .filter(|_| server.locked_by.is_some())
            }),
            pinned_availability_zone: at(96).then_some(&attributes.pinned_availability_zone),
            scheduler_hints: at(100).then_some(&attributes.scheduler_hints),
        }
    }
}

/// Nova's `host_status` of the server's host: none before it has one; netcache's
/// hosts run in the process that builds on them, so a host that has the server is up.
fn host_status(server: &Server) -> &'static str {
    if server.host.is_some() { "UP" } else { "" }
}

impl<'a> ServerDetail<'a> {
    /// `security_groups` are the names of the server's ports' groups.
    #[must_use]
    pub fn new(
        base: &str,
        server: &'a Server,
        info: &'a CacheAddresses,
        security_groups: &'a [String],
        options: ViewOptions,
    ) -> Self {
        let id = server.id.to_string();
        let status = server.api_status();
        let at = |minor| options.version.at_least(minor);
        let image = if server.image_ref.is_empty() {
            ImageField::None("")
        } else {
            ImageField::Image(ImageView {
                reference: Reference::new(base, "images", &server.image_ref),
                // The images netcache serves carry none of Nova's image properties.
                properties: at(98).then(BTreeMap::new),
            })
        };
        let flavor = if at(47) {
            FlavorField::embedded(server, options.flavor_extra_specs)
        } else {
            FlavorField::Reference(Reference::new(base, "flavors", &server.flavor_ref))
        };
        let host = server.host.as_ref().map(netcache_domain::HostName::as_str);
        let attributes = &server.attributes;
        let extended = options.extended_attributes.then(|| Extended {
            host,
            hypervisor_hostname: host,
            instance_name: format!("instance-{}", &id[..8]),
            since_2_3: at(3).then(|| Extended23 {
                hostname: &attributes.hostname,
                reservation_id: &attributes.reservation_id,
                launch_index: attributes.launch_index,
                kernel_id: "",
                ramdisk_id: "",
                root_device_name: server.launched_at.map(|_| "/dev/vda"),
                user_data: &attributes.user_data,
            }),
        });
        Self {
            name: &server.name,
            status,
            tenant_id: server.project_id.as_str(),
            user_id: &server.user_id,
            metadata: &server.metadata,
            host_id: crate::wire::host_id(
                server.project_id.as_str(),
                server.host.as_ref().map(netcache_domain::HostName::as_str),
            ),
            image,
            flavor,
            created: iso(server.created_at),
            updated: iso(server.updated_at),
            addresses: Addresses::of(server, info, true),
            access_ip_v4: server.access_ip_v4.map_or_else(String::new, |ip| ip.to_string()),
            access_ip_v6: server.access_ip_v6.map_or_else(String::new, |ip| ip.to_string()),
            links: links(base, "servers", &id),
            disk_config: crate::wire::disk_config(server),
            availability_zone: &server.availability_zone,
            config_drive: "",
            key_name: server.key_name.as_deref(),
            extended,
            hostname: (at(90) && !options.extended_attributes).then_some(&attributes.hostname),
            launched_at: server.launched_at.map(iso_micro),
            terminated_at: server.deleted_at.map(iso_micro),
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
            later: Later::of(server, options),
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
