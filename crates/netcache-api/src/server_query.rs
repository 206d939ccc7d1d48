//! The query of a server list, read as Nova reads it at 2.1: filters (`name` as
//! a regular expression, `status`, `flavor`, `image`, `changes-since`, `ip`;
//! for admins `ip6`, `host`, `deleted` and `tenant_id`/`project_id`), sorting (`sort_key`/`sort_dir`,
//! newest first by default) and paging (`limit`, at most `max_limit`, and
//! `marker`). Parameters a caller may not use or Nova does not know are ignored,
//! as Nova does at 2.1; values Nova's schema refuses are its 400s.

use chrono::{DateTime, NaiveDateTime, Utc};
use netcache_compute::{Sort, SortKey};
use netcache_domain::network_info::{CacheAddresses, VifAddresses};
use netcache_domain::server::Server;
use regex::Regex;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::schema;
use crate::wire::Paging;

/// Nova's default `max_limit`: the most items one page holds.
pub const MAX_LIMIT: usize = 1000;

/// The keys Nova sorts servers by. Those netcache has no column for hold the
/// same value on every server, so sorting by them leaves the order to the keys
/// after them, as it would in Nova (`column`).
const SORT_KEYS: &[&str] = &[
    "access_ip_v4",
    "access_ip_v6",
    "auto_disk_config",
    "availability_zone",
    "config_drive",
    "created_at",
    "display_description",
    "display_name",
    "host",
    "hostname",
    "image_ref",
    "instance_type_id",
    "kernel_id",
    "key_name",
    "launch_index",
    "launched_at",
    "locked_by",
    "node",
    "power_state",
    "progress",
    "project_id",
    "ramdisk_id",
    "root_device_name",
    "task_state",
    "terminated_at",
    "updated_at",
    "user_id",
    "uuid",
    "vm_state",
];

/// Sort keys only an admin may use (Nova ignores them for others).
const ADMIN_SORT_KEYS: &[&str] = &["host", "node"];

/// The column a sort key orders by, if netcache has one.
fn column(key: &str) -> Option<SortKey> {
    Some(match key {
        "created_at" => SortKey::CreatedAt,
        "updated_at" => SortKey::UpdatedAt,
        "launched_at" => SortKey::LaunchedAt,
        "terminated_at" => SortKey::DeletedAt,
        "display_name" => SortKey::Name,
        "uuid" => SortKey::Id,
        "vm_state" => SortKey::VmState,
        "task_state" => SortKey::TaskState,
        "power_state" => SortKey::PowerState,
        "host" | "node" => SortKey::Host,
        "image_ref" => SortKey::ImageRef,
        "instance_type_id" => SortKey::FlavorRef,
        "availability_zone" => SortKey::AvailabilityZone,
        "project_id" => SortKey::ProjectId,
        "user_id" => SortKey::UserId,
        _ => return None,
    })
}

/// The keys of Nova's list query schema: from 2.75 any other is a 400.
const KNOWN_KEYS: &[&str] = &[
    "user_id",
    "project_id",
    "tenant_id",
    "launch_index",
    "image_ref",
    "image",
    "kernel_id",
    "ramdisk_id",
    "hostname",
    "key_name",
    "power_state",
    "vm_state",
    "task_state",
    "host",
    "node",
    "flavor",
    "reservation_id",
    "launched_at",
    "terminated_at",
    "availability_zone",
    "name",
    "display_name",
    "description",
    "display_description",
    "locked_by",
    "uuid",
    "root_device_name",
    "config_drive",
    "access_ip_v4",
    "access_ip_v6",
    "auto_disk_config",
    "progress",
    "sort_key",
    "sort_dir",
    "all_tenants",
    "soft_deleted",
    "deleted",
    "status",
    "changes-since",
    "ip",
    "ip6",
    "created_at",
    "block_device_mapping",
    "services",
    "metadata",
    "system_metadata",
    "info_cache",
    "security_groups",
    "pci_devices",
    "limit",
    "marker",
    "tags",
    "tags-any",
    "not-tags",
    "not-tags-any",
    "changes-before",
    "locked",
];

/// Nova's server statuses: from 2.38 any other `status` is a 400.
const STATUSES: &[&str] = &[
    "ACTIVE",
    "BUILD",
    "DELETED",
    "ERROR",
    "HARD_REBOOT",
    "MIGRATING",
    "PASSWORD",
    "PAUSED",
    "REBOOT",
    "REBUILD",
    "RESCUE",
    "RESIZE",
    "REVERT_RESIZE",
    "SHELVED",
    "SHELVED_OFFLOADED",
    "SHUTOFF",
    "SOFT_DELETED",
    "SUSPENDED",
    "UNKNOWN",
    "VERIFY_RESIZE",
];

/// 2.26's tag filters: each a comma-separated list.
#[derive(Debug, Default)]
struct TagFilters {
    all: Vec<String>,
    any: Vec<String>,
    not_all: Vec<String>,
    not_any: Vec<String>,
}

impl TagFilters {
    fn matches(&self, server: &Server) -> bool {
        let has = |t: &String| server.attributes.tags.contains(t);
        self.all.iter().all(has)
            && (self.any.is_empty() || self.any.iter().any(has))
            && (self.not_all.is_empty() || !self.not_all.iter().all(has))
            && !self.not_any.iter().any(has)
    }
}

fn tag_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

#[derive(Debug, Default)]
pub struct ServerQuery {
    name: Option<Regex>,
    status: Option<String>,
    flavor: Option<String>,
    image: Option<String>,
    pub changes_since: Option<DateTime<Utc>>,
    /// 2.66: changed before this time (deletions included).
    changes_before: Option<DateTime<Utc>>,
    tags: TagFilters,
    /// 2.73.
    locked: Option<bool>,
    /// The servers of one multiple create (everyone's filter, as in Nova).
    reservation_id: Option<String>,
    /// 2.83's filters for everyone (admins always had them).
    user_id: Option<String>,
    key_name: Option<Regex>,
    availability_zone: Option<Regex>,
    vm_state: Option<String>,
    task_state: Option<String>,
    ip: Option<Regex>,
    ip6: Option<Regex>,
    host: Option<String>,
    /// Admins: list deleted servers instead of live ones.
    pub deleted: bool,
    /// Admins: `tenant_id` or its alias `project_id`, the one project an
    /// `all_tenants` list shows (Nova ignores it without `all_tenants`).
    pub project: Option<String>,
    order: Vec<Sort>,
    pub paging: Paging,
}

pub(crate) fn invalid(key: &str, value: &str, why: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "Invalid input for query parameters {key}. Value: {value}. {why}"
    ))
}

/// Nova's `format: regex` of a query parameter: a pattern that compiles, and
/// not empty (Nova's validator refuses ''), else its schema's 400. (Rust's
/// dialect, not Python's: lookaround and backreferences are refused.)
fn regex_param(key: &str, value: &str) -> ApiResult<Regex> {
    let not_a_regex = || {
        let repr = schema::python_repr(&Value::String(value.to_owned()));
        invalid(key, value, &format!("{repr} is not a 'regex'"))
    };
    if value.is_empty() {
        return Err(not_a_regex());
    }
    Regex::new(value).map_err(|_| not_a_regex())
}

/// Nova's `changes-since`: ISO 8601, a missing zone meaning UTC.
fn parse_time(key: &str, value: &str) -> ApiResult<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    let naive = value.strip_suffix('Z').unwrap_or(value);
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(naive, format) {
            return Ok(t.and_utc());
        }
    }
    Err(invalid(key, value, &format!("'{value}' is not a 'date-time'")))
}

fn truthy(value: &str) -> bool {
    matches!(value.to_lowercase().as_str(), "1" | "true" | "t" | "yes" | "y" | "on")
}

impl ServerQuery {
    /// Reads the query string's pairs for a caller (`admin` unlocks the admin
    /// filters); a page holds `max_limit` servers, or `limit` if fewer.
    pub fn parse(pairs: &[(String, String)], admin: bool, max_limit: usize, version: Microversion) -> ApiResult<Self> {
        let mut query = Self::default();
        let mut keys: Vec<String> = Vec::new();
        let mut descending: Vec<bool> = Vec::new();
        let at = |minor| version.at_least(minor);
        // Nova's `_get_server_search_options`: what others may filter by.
        let everyone = |minor| admin || at(minor);
        for (key, value) in pairs {
            if at(75) && !KNOWN_KEYS.contains(&key.as_str()) {
                return Err(ApiError::BadRequest(format!(
                    "Invalid input for query parameters {key}. Value: {value}. Additional properties are not allowed ('{key}' was unexpected)"
                )));
            }
            match key.as_str() {
                "limit" => {
                    let limit = value
                        .parse::<usize>()
                        .map_err(|_| invalid(key, value, &format!("'{value}' does not match '^[0-9]*$'")))?;
                    query.paging.limit = Some(limit.min(max_limit));
                }
                "marker" => query.paging.marker = Some(value.clone()),
                "name" => query.name = Some(regex_param(key, value)?),
                "status" if at(38) && !STATUSES.contains(&value.as_str()) => {
                    return Err(ApiError::BadRequest("Invalid status value".into()));
                }
                "status" => query.status = Some(value.to_uppercase()),
                "reservation_id" => query.reservation_id = Some(value.clone()),
                "tags" if at(26) => query.tags.all = tag_list(value),
                "tags-any" if at(26) => query.tags.any = tag_list(value),
                "not-tags" if at(26) => query.tags.not_all = tag_list(value),
                "not-tags-any" if at(26) => query.tags.not_any = tag_list(value),
                "changes-before" if at(66) => query.changes_before = Some(parse_time(key, value)?),
                "locked" if at(73) => {
                    query.locked = Some(schema::boolean("locked", &Value::String(value.clone()))?);
                }
                "user_id" if everyone(83) => query.user_id = Some(value.clone()),
                "key_name" if everyone(83) => query.key_name = Some(regex_param(key, value)?),
                "availability_zone" if everyone(83) => query.availability_zone = Some(regex_param(key, value)?),
                "vm_state" if everyone(83) => query.vm_state = Some(value.to_lowercase()),
                "task_state" if everyone(83) => query.task_state = Some(value.to_lowercase()),
                "flavor" => query.flavor = Some(value.clone()),
                // An image reference may be its URL: the id is its last segment.
                "image" => query.image = value.rsplit('/').next().map(str::to_owned),
                "changes-since" => query.changes_since = Some(parse_time(key, value)?),
                "ip" => query.ip = Some(regex_param(key, value)?),
                // Nova allows others `ip6` from 2.5 only; admins any filter.
                "ip6" if everyone(5) => query.ip6 = Some(regex_param(key, value)?),
                "host" if admin => query.host = Some(value.clone()),
                "deleted" if admin => query.deleted = truthy(value),
                // Nova maps both to one filter; the last one given is kept.
                "tenant_id" | "project_id" if admin => query.project = Some(value.clone()),
                "sort_key" => {
                    if !SORT_KEYS.contains(&value.as_str()) {
                        return Err(invalid(key, value, &format!("'{value}' is not one of the sort keys")));
                    }
                    keys.push(value.clone());
                }
                "sort_dir" => descending.push(match value.as_str() {
                    "asc" => false,
                    "desc" => true,
                    _ => return Err(invalid(key, value, &format!("'{value}' is not one of ['asc', 'desc']"))),
                }),
                _ => {}
            }
        }
        // Each key takes the direction given in its place, else the first one
        // given, else descending (Nova's pairing).
        let fallback = descending.first().copied().unwrap_or(true);
        query.order = keys
            .into_iter()
            .enumerate()
            .filter(|(_, k)| admin || !ADMIN_SORT_KEYS.contains(&k.as_str()))
            .filter_map(|(i, k)| {
                Some(Sort {
                    key: column(&k)?,
                    descending: descending.get(i).copied().unwrap_or(fallback),
                })
            })
            .collect();
        // Nova's default keys follow, in the first direction: created_at here,
        // the id in the store.
        if !query.order.iter().any(|s| s.key == SortKey::CreatedAt) {
            query.order.push(Sort {
                key: SortKey::CreatedAt,
                descending: fallback,
            });
        }
        if let (Some(since), Some(before)) = (query.changes_since, query.changes_before)
            && before < since
        {
            return Err(ApiError::BadRequest(
                "The value of changes-since must be less than or equal to changes-before.".into(),
            ));
        }
        query.paging.limit.get_or_insert(max_limit);
        Ok(query)
    }

    /// The order of the list, for the store's keyset pages.
    #[must_use]
    pub fn order(&self) -> &[Sort] {
        &self.order
    }

    /// Whether deleted servers are candidates (`deleted`, or `changes-since`,
    /// which lists deletions too).
    #[must_use]
    pub fn with_deleted(&self) -> bool {
        self.deleted || self.changes_since.is_some() || self.changes_before.is_some()
    }

    /// Whether the query looks at IP addresses (the servers' caches are needed).
    #[must_use]
    pub fn needs_addresses(&self) -> bool {
        self.ip.is_some() || self.ip6.is_some()
    }

    /// Whether `server` (with its cache, if the query needs it) passes the filters.
    #[must_use]
    pub fn matches(&self, server: &Server, info: Option<&CacheAddresses>) -> bool {
        let changes = self.changes_since.is_some() || self.changes_before.is_some();
        let listed = if self.deleted {
            server.is_deleted()
        } else if changes {
            // changes-since/-before show what changed, deletions included.
            self.changes_since.is_none_or(|since| server.updated_at >= since)
                && self.changes_before.is_none_or(|before| server.updated_at <= before)
        } else {
            !server.is_deleted()
        };
        listed
            && self.tags.matches(server)
            && self.locked.is_none_or(|locked| server.locked_by.is_some() == locked)
            && self
                .reservation_id
                .as_ref()
                .is_none_or(|r| server.attributes.reservation_id.as_ref() == Some(r))
            && self.user_id.as_ref().is_none_or(|u| server.user_id == *u)
            && self
                .key_name
                .as_ref()
                .is_none_or(|r| server.key_name.as_ref().is_some_and(|k| r.is_match(k)))
            && self
                .availability_zone
                .as_ref()
                .is_none_or(|r| r.is_match(&server.availability_zone))
            && self.vm_state.as_ref().is_none_or(|v| server.vm_state.as_str() == v)
            && self
                .task_state
                .as_ref()
                .is_none_or(|t| server.task_state.is_some_and(|st| st.as_str() == t))
            && self.name.as_ref().is_none_or(|r| r.is_match(&server.name))
            && self.status.as_ref().is_none_or(|s| server.api_status() == s)
            && self.flavor.as_ref().is_none_or(|f| server.flavor_ref == *f)
            && self.image.as_ref().is_none_or(|i| server.image_ref == *i)
            && self
                .host
                .as_ref()
                .is_none_or(|h| server.host.as_ref().is_some_and(|sh| sh.as_str() == h))
            && (!self.needs_addresses() || self.has_ip(info))
    }

    /// Nova's `ip`/`ip6` (`compute/api.py` `_ip_filter`) over the cache's fixed
    /// addresses — netcache's records, never Neutron's device_id view: each
    /// pattern is Python's `re.match` of an address of its version, anchored at
    /// the address's start but not its end (`ip=10.0.0.2` finds 10.0.0.24,
    /// `ip=3.0.51` never 10.3.0.51), and a server passes if an IPv4 address
    /// matches `ip` or an IPv6 one `ip6`. (Nova asks Neutron for a substring
    /// instead where Neutron has `ip-substring-filtering`, which would take
    /// Neutron's view of a port's device.)
    fn has_ip(&self, info: Option<&CacheAddresses>) -> bool {
        let pattern = |version| match version {
            Some(4) => self.ip.as_ref(),
            Some(6) => self.ip6.as_ref(),
            _ => None,
        };
        info.is_some_and(|info| {
            info.0.iter().flat_map(VifAddresses::fixed_ips).any(|ip| {
                pattern(ip.version)
                    .zip(ip.address.as_deref())
                    // The leftmost match starts at 0 if any match does.
                    .is_some_and(|(p, a)| p.find(a).is_some_and(|m| m.start() == 0))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    /// The query of `items` at 2.1, as an admin or not, with the default limit.
    fn parse_at_2_1(items: &[(&str, &str)], admin: bool) -> ApiResult<ServerQuery> {
        ServerQuery::parse(&pairs(items), admin, MAX_LIMIT, Microversion::MIN)
    }

    #[test]
    fn bad_values_are_novas_400s_and_unknown_keys_are_ignored() {
        for bad in [
            [("limit", "-1")],
            [("limit", "testing")],
            [("changes-since", "2011/01/01")],
            [("sort_key", "shoe_size")],
            [("sort_dir", "sideways")],
            [("name", "(")],
            [("ip", "(")],
            [("ip", "")],
        ] {
            assert!(parse_at_2_1(&bad, false).is_err(), "{bad:?}");
        }
        let q = parse_at_2_1(&[("flavor_id", "x"), ("limit", "5000")], false).unwrap();
        assert_eq!(q.paging.limit, Some(MAX_LIMIT));
    }

    #[test]
    fn a_page_holds_max_limit_servers_without_a_limit_and_at_most_max_limit_with_one() {
        assert_eq!(
            ServerQuery::parse(&[], false, 7, Microversion::MIN)
                .unwrap()
                .paging
                .limit,
            Some(7)
        );
        let limited = |limit: &str| {
            ServerQuery::parse(&pairs(&[("limit", limit)]), false, 7, Microversion::MIN)
                .unwrap()
                .paging
                .limit
        };
        assert_eq!(limited("3"), Some(3));
        assert_eq!(limited("30"), Some(7));
    }

    fn sort(key: SortKey, descending: bool) -> Sort {
        Sort { key, descending }
    }

    #[test]
    fn sort_keys_pair_with_directions_as_novas_do_and_created_at_follows() {
        let order = |items: &[(&str, &str)]| {
            ServerQuery::parse(&pairs(items), false, 7, Microversion::MIN)
                .unwrap()
                .order
        };
        assert_eq!(order(&[]), [sort(SortKey::CreatedAt, true)]);
        assert_eq!(order(&[("sort_dir", "asc")]), [sort(SortKey::CreatedAt, false)]);
        assert_eq!(
            order(&[
                ("sort_key", "display_name"),
                ("sort_key", "locked_by"),
                ("sort_key", "uuid"),
                ("sort_dir", "asc")
            ]),
            [
                sort(SortKey::Name, false),
                sort(SortKey::Id, false),
                sort(SortKey::CreatedAt, false)
            ]
        );
        assert_eq!(
            order(&[
                ("sort_key", "created_at"),
                ("sort_dir", "asc"),
                ("sort_key", "launched_at"),
                ("sort_dir", "desc")
            ]),
            [sort(SortKey::CreatedAt, false), sort(SortKey::LaunchedAt, true)]
        );
    }

    #[test]
    fn changes_since_reads_novas_forms() {
        for text in [
            "2011-01-24T17:08Z",
            "2011-01-24T17:08:00Z",
            "2011-01-24T17:08:00",
            "2011-01-24T17:08",
            "2011-01-24T18:08:00+01:00",
        ] {
            let q = parse_at_2_1(&[("changes-since", text)], false).unwrap();
            assert_eq!(
                q.changes_since.unwrap(),
                "2011-01-24T17:08:00Z".parse::<DateTime<Utc>>().unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn admin_filters_are_ignored_for_others() {
        let q = parse_at_2_1(
            &[
                ("deleted", "true"),
                ("host", "h1"),
                ("ip6", "fd"),
                ("tenant_id", "p"),
                ("sort_key", "host"),
            ],
            false,
        )
        .unwrap();
        assert!(!q.deleted);
        assert!(q.host.is_none());
        assert!(q.ip6.is_none());
        assert!(q.project.is_none());
        assert_eq!(q.order, [sort(SortKey::CreatedAt, true)]);
        let q = parse_at_2_1(&[("deleted", "true"), ("sort_key", "host")], true).unwrap();
        assert!(q.deleted);
        assert_eq!(q.order, [sort(SortKey::Host, true), sort(SortKey::CreatedAt, true)]);
    }

    #[test]
    fn later_microversions_add_filters_and_refuse_unknown_keys_and_statuses() {
        let at = |minor, items: &[(&str, &str)]| {
            ServerQuery::parse(&pairs(items), false, MAX_LIMIT, Microversion::new(minor))
        };
        // Unknown keys: ignored until 2.75, then a 400.
        assert!(at(74, &[("shoe_size", "9")]).is_ok());
        assert!(at(75, &[("shoe_size", "9")]).is_err());
        assert!(at(75, &[("locked", "true"), ("tags", "a")]).is_ok());
        // An unknown status: ignored (nothing matches) until 2.38.
        assert!(at(37, &[("status", "SLEEPY")]).is_ok());
        assert!(at(38, &[("status", "SLEEPY")]).is_err());
        // ip6 for everyone from 2.5; 2.83's filters for everyone.
        assert!(at(4, &[("ip6", "fd")]).unwrap().ip6.is_none());
        assert!(at(5, &[("ip6", "fd")]).unwrap().ip6.is_some());
        assert!(at(82, &[("user_id", "u")]).unwrap().user_id.is_none());
        assert_eq!(at(83, &[("user_id", "u")]).unwrap().user_id.as_deref(), Some("u"));
        // changes-before from 2.66, never before changes-since.
        assert!(
            at(65, &[("changes-before", "2026-01-01T00:00:00Z")])
                .unwrap()
                .changes_before
                .is_none()
        );
        assert!(
            at(66, &[("changes-before", "2026-01-01T00:00:00Z")])
                .unwrap()
                .changes_before
                .is_some()
        );
        let backwards = [
            ("changes-since", "2026-02-01T00:00:00Z"),
            ("changes-before", "2026-01-01T00:00:00Z"),
        ];
        assert!(at(66, &backwards).is_err());
    }
}
