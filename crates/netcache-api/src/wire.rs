//! Nova v2.1 JSON: request bodies and response views. Domain types never derive
//! serde for the API; they are converted here.

use std::net::IpAddr;

use chrono::SecondsFormat;
use netcache_compute::Interface;
use netcache_domain::server::Server;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::schema;

/// `POST /servers` body.
#[derive(Debug, Deserialize)]
pub struct CreateServerBody {
    pub server: CreateServerFields,
    /// Read for its `group` (`server_create::group_hint`).
    #[serde(rename = "os:scheduler_hints")]
    pub scheduler_hints: Option<Value>,
    #[serde(rename = "OS-SCH-HNT:scheduler_hints")]
    pub legacy_scheduler_hints: Option<Value>,
}

impl CreateServerBody {
    /// The boot's scheduler hints, under either of Nova's keys.
    #[must_use]
    pub fn scheduler_hints(&self) -> Option<&Value> {
        self.scheduler_hints.as_ref().or(self.legacy_scheduler_hints.as_ref())
    }
}

#[derive(Debug, Deserialize)]
pub struct CreateServerFields {
    /// Checked by `schema::name`, as the metadata and access addresses are.
    pub name: Option<Value>,
    #[serde(rename = "imageRef", default)]
    pub image_ref: Option<String>,
    #[serde(rename = "flavorRef")]
    pub flavor_ref: Option<Value>,
    pub metadata: Option<Value>,
    #[serde(rename = "accessIPv4")]
    pub access_ip_v4: Option<Value>,
    #[serde(rename = "accessIPv6")]
    pub access_ip_v6: Option<Value>,
    pub networks: Option<NetworksField>,
    pub key_name: Option<String>,
    /// The password the caller asks for (Nova answers it back; a fake guest
    /// has no use for it).
    #[serde(rename = "adminPass")]
    pub admin_pass: Option<Value>,
    pub min_count: Option<Value>,
    pub max_count: Option<Value>,
    pub return_reservation_id: Option<Value>,
    /// `[{"name": …}, …]`, checked by `server_create`.
    pub security_groups: Option<Value>,
    /// The fields of later microversions and of Nova's boot extensions, kept
    /// and shown back (the request's version decides which may appear).
    pub description: Option<Value>,
    pub tags: Option<Value>,
    pub hostname: Option<Value>,
    pub trusted_image_certificates: Option<Value>,
    pub user_data: Option<Value>,
    pub availability_zone: Option<Value>,
    #[serde(rename = "OS-DCF:diskConfig")]
    pub disk_config: Option<Value>,
    /// Before 2.57 (`server_create::versioned_fields` refuses it from there).
    pub personality: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum NetworksField {
    Keyword(String),
    List(Vec<NetworkEntry>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkEntry {
    pub uuid: Option<String>,
    pub port: Option<String>,
    pub fixed_ip: Option<String>,
    pub tag: Option<String>,
}

/// `POST /servers/{id}/os-interface` body.
#[derive(Debug, Deserialize)]
pub struct AttachBody {
    #[serde(rename = "interfaceAttachment")]
    pub interface_attachment: AttachFields,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachFields {
    pub net_id: Option<String>,
    pub port_id: Option<String>,
    pub fixed_ips: Option<Vec<FixedIpField>>,
    pub tag: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedIpField {
    pub ip_address: String,
}

/// Nova's timestamp format for servers (`2013-10-02T10:31:31Z`). RFC 3339's
/// writer, not a format string parsed per call: a detail page writes thousands.
pub(crate) fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Nova's timestamp format for actions and usage (`2013-10-02T10:31:31.000000`):
/// RFC 3339 to the microsecond, without its `Z`.
pub(crate) fn iso_micro(t: chrono::DateTime<chrono::Utc>) -> String {
    let mut text = t.to_rfc3339_opts(SecondsFormat::Micros, true);
    text.pop();
    text
}

/// A link of a resource view: `{"rel": …, "href": …}`.
#[derive(Serialize)]
pub(crate) struct Link {
    rel: &'static str,
    href: String,
}

impl Link {
    /// The version-less link to a resource (Nova's `bookmark`).
    pub(crate) fn bookmark(base: &str, kind: &str, id: &str) -> Self {
        Self {
            rel: "bookmark",
            href: format!("{base}/{kind}/{id}"),
        }
    }
}

/// A `self` and a `bookmark` link to one resource.
#[must_use]
pub(crate) fn links(base: &str, kind: &str, id: &str) -> [Link; 2] {
    [
        Link {
            rel: "self",
            href: format!("{base}/v2.1/{kind}/{id}"),
        },
        Link::bookmark(base, kind, id),
    ]
}

/// Parses a JSON body; any problem is a Nova 400 in its words, never a 500.
pub fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    if bytes.is_empty() {
        return Err(ApiError::BadRequest(
            "The request body is empty; a JSON object is required.".into(),
        ));
    }
    let body: Value =
        serde_json::from_slice(bytes).map_err(|_| ApiError::BadRequest("Malformed request body".into()))?;
    serde_path_to_error::deserialize(&body).map_err(|e| schema::refused(&body, &e))
}

pub fn parse_ip(text: &str) -> ApiResult<IpAddr> {
    text.parse()
        .map_err(|_| ApiError::BadRequest(format!("Invalid fixed IP address ({text})")))
}

#[must_use]
pub fn server_summary(base: &str, server: &Server) -> Value {
    json!({"id": server.id.to_string(), "name": server.name, "links": links(base, "servers", &server.id.to_string())})
}

/// Nova's `OS-DCF:diskConfig` of a server.
#[must_use]
pub fn disk_config(server: &Server) -> &'static str {
    if server.attributes.auto_disk_config {
        "AUTO"
    } else {
        "MANUAL"
    }
}

/// The `POST /servers` 202 body: the new server's id and links (Nova's schema
/// allows no name), its disk config, security groups (Nova echoes the request's,
/// or `default`) and admin password.
#[must_use]
pub fn server_created(base: &str, server: &Server, security_groups: &Value, admin_pass: &str) -> Value {
    json!({
        "id": server.id.to_string(),
        "links": links(base, "servers", &server.id.to_string()),
        "OS-DCF:diskConfig": disk_config(server),
        "security_groups": security_groups,
        "adminPass": admin_pass,
    })
}

/// Nova's os-interface view.
/// os-interface's view, from netcache's record of the port (no Neutron call).
#[must_use]
pub fn interface_view(interface: &Interface) -> Value {
    let details = interface.vif.details.as_ref();
    let fixed_ips: Vec<Value> = details
        .map(|d| {
            d.fixed_ips
                .iter()
                .map(|f| json!({"ip_address": f.ip_address.to_string(), "subnet_id": f.subnet_id.to_string()}))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "net_id": interface.vif.network_id.to_string(),
        "port_id": interface.vif.port_id.to_string(),
        "mac_addr": details.map(|d| d.mac_address.clone()),
        "port_state": details.map(|d| d.status.clone()),
        "fixed_ips": fixed_ips,
    })
}

/// Nova's `hostId` of a host for a project: an opaque per-project digest
/// (SHA-224 of the project id and the host name, hex); empty without a host.
#[must_use]
pub fn host_id(project_id: &str, host: Option<&str>) -> String {
    use sha2::{Digest, Sha224};
    host.map_or_else(String::new, |host| {
        format!("{:x}", Sha224::digest(format!("{project_id}{host}").as_bytes()))
    })
}

/// The drift report as JSON (API and `netcache audit --json`).
#[must_use]
pub fn audit_view(report: &netcache_compute::AuditReport) -> Value {
    let t = &report.totals;
    let servers: Vec<Value> = report
        .servers
        .iter()
        .map(|s| {
            json!({
                "id": s.id.to_string(),
                "name": s.name,
                "deleted": s.deleted,
                "drift": s.has_drift(),
                "cached_ports": s.cached_ports,
                "neutron_ports": s.neutron_ports.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "stale_cache": s.stale_cache,
                "ghosts": s.ghosts.iter().map(|g| json!({
                    "port_id": g.port_id.to_string(),
                    "owner": g.owner,
                    "intent": g.intent.map(|i| i.to_string()),
                    "first_seen": g.first_seen.map(iso),
                    "times_seen": g.times_seen,
                })).collect::<Vec<_>>(),
                "lost": s.lost.iter().map(|l| json!({"port_id": l.port_id.to_string(), "reason": l.reason})).collect::<Vec<_>>(),
                "recorded_lost": s.recorded_lost.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "releasing": s.releasing.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "pending_intents": s.pending_intents.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "abandoned_intents": s.abandoned_intents.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({"audit": {
        "clean": report.is_clean(),
        "totals": {
            "servers": t.servers,
            "drift": t.drift(),
            "ghosts_ours": t.ghosts_ours,
            "ghosts_foreign": t.ghosts_foreign,
            "deleted_server_ghosts": t.deleted_server_ghosts,
            "lost": t.lost,
            "stale_caches": t.stale_caches,
            "pending_intents": t.pending_intents,
            "releasing": t.releasing,
            "stuck_operations": t.stuck_operations,
            "orphaned_operations": t.orphaned_operations,
            "leaked_vifs": t.leaked_vifs,
        },
        "servers": servers,
        "operations": report.operations.iter().map(|o| json!({
            "server_id": o.server_id.to_string(),
            "kind": o.kind,
            "owner": o.owner,
            "started": iso(o.started),
            "lease_until": iso(o.lease_until),
            "stuck": o.stuck,
            "orphaned": o.orphaned,
            "step": o.step,
            "attempts": o.attempts,
            "last_error": o.last_error,
        })).collect::<Vec<_>>(),
        "leaked_vifs": report.leaked_vifs.iter().map(|(s, p)| json!({"server_id": s.to_string(), "port_id": p.to_string()})).collect::<Vec<_>>(),
    }})
}

/// Paging of a list request (`?limit=N&marker=ID`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Paging {
    pub limit: Option<usize>,
    pub marker: Option<String>,
}

/// Nova's `*_links` of a page: a `next` link when the page is full.
#[must_use]
pub fn next_links(base: &str, path: &str, limit: Option<usize>, page: &[Value]) -> Option<Value> {
    let last = page.last().map(|view| view["id"].as_str().unwrap_or_default());
    next_link(base, path, limit, page.len(), last)
}

/// The `next` link of a page of `len` views ending with `last`, if it is full.
pub(crate) fn next_link(base: &str, path: &str, limit: Option<usize>, len: usize, last: Option<&str>) -> Option<Value> {
    let (limit, marker) = (limit?, last?);
    (len == limit)
        .then(|| json!([{"rel": "next", "href": format!("{base}/v2.1/{path}?limit={limit}&marker={marker}")}]))
}

/// `{"<collection>": [...]}` plus Nova's `<collection>_links` when the page is full.
#[must_use]
pub fn page(collection: &str, base: &str, path: &str, views: Vec<Value>, limit: Option<usize>) -> Value {
    let mut body = Map::new();
    if let Some(links) = next_links(base, path, limit, &views) {
        body.insert(format!("{collection}_links"), links);
    }
    body.insert(collection.to_owned(), Value::Array(views));
    Value::Object(body)
}

/// An image of the fixed catalog (`GET /image/v2/images`).
#[derive(Debug, Clone, Copy)]
pub struct Image {
    pub id: &'static str,
    pub name: &'static str,
    pub disk_format: &'static str,
    pub size: u64,
    pub created_at: &'static str,
}

/// Glance v2's image view (the fields `openstack image show` and the SDK read).
#[must_use]
pub fn image_view(image: &Image) -> Value {
    json!({
        "id": image.id,
        "name": image.name,
        "status": "active",
        "visibility": "public",
        "protected": false,
        "os_hidden": false,
        "disk_format": image.disk_format,
        "container_format": "bare",
        "size": image.size,
        "virtual_size": null,
        "min_disk": 0,
        "min_ram": 0,
        "checksum": null,
        "os_hash_algo": null,
        "os_hash_value": null,
        "owner": null,
        "tags": [],
        "created_at": image.created_at,
        "updated_at": image.created_at,
        "self": format!("/v2/images/{}", image.id),
        "file": format!("/v2/images/{}/file", image.id),
        "schema": "/v2/schemas/image",
    })
}

/// Glance's version document, served at `/image`.
#[must_use]
pub fn image_versions(base: &str) -> Value {
    json!({"versions": [{
        "id": "v2.16",
        "status": "CURRENT",
        "links": [{"rel": "self", "href": format!("{base}/image/v2/")}],
    }]})
}

/// A host in the admin's zone view: its `nova-compute` service up or not,
/// enabled or not, and its last heartbeat.
#[derive(Clone, Debug)]
pub struct ZoneHost {
    pub host: String,
    pub available: bool,
    pub active: bool,
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A zone as Nova's `os-availability-zone` shows it: available if one of its
/// compute services is enabled; in the admin's `detail` view an available
/// zone lists its hosts.
#[derive(Clone, Debug)]
pub struct Zone {
    pub name: String,
    pub available: bool,
    pub hosts: Option<Vec<ZoneHost>>,
}

/// Nova's `os-availability-zone` view of `zones`.
#[must_use]
pub fn availability_zones(zones: &[Zone]) -> Value {
    let info: Vec<Value> = zones
        .iter()
        .map(|zone| {
            let hosts = zone.hosts.as_ref().map(|hosts| {
                let services: Map<String, Value> = hosts
                    .iter()
                    .map(|h| {
                        let service = json!({
                            "available": h.available,
                            "active": h.active,
                            "updated_at": h.updated_at.map(iso_micro),
                        });
                        (h.host.clone(), json!({"nova-compute": service}))
                    })
                    .collect();
                Value::Object(services)
            });
            json!({"zoneName": zone.name, "zoneState": {"available": zone.available}, "hosts": hosts})
        })
        .collect();
    json!({ "availabilityZoneInfo": info })
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::{iso, iso_micro};

    #[test]
    fn timestamps_are_written_as_nova_writes_them() {
        let second = Utc.with_ymd_and_hms(2013, 10, 2, 10, 31, 31).unwrap();
        let later = second + chrono::Duration::nanoseconds(123_456_789);
        assert_eq!(iso(second), "2013-10-02T10:31:31Z");
        assert_eq!(iso(later), "2013-10-02T10:31:31Z");
        assert_eq!(iso_micro(second), "2013-10-02T10:31:31.000000");
        assert_eq!(iso_micro(later), "2013-10-02T10:31:31.123456");
    }
}
