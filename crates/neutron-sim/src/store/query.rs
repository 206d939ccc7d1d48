//! Neutron list semantics: filters (repeated = OR), tag filters, `fields`, sorting and
//! `limit`/`marker`/`page_reverse` pagination with `<collection>_links`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Kind, parse_bool};
use crate::error::{Error, Result};

const RESERVED: &[&str] = &[
    "fields",
    "limit",
    "marker",
    "page_reverse",
    "sort_key",
    "sort_dir",
    "tags",
    "tags-any",
    "not-tags",
    "not-tags-any",
];

fn valid_filters(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Port => &[
            "id",
            "name",
            "network_id",
            "project_id",
            "tenant_id",
            "mac_address",
            "admin_state_up",
            "status",
            "device_id",
            "device_owner",
            "fixed_ips",
            "security_groups",
            "description",
            "binding:vnic_type",
            "binding:profile",
            "binding:host_id",
            "binding:vif_type",
            "binding:vif_details",
            "port_security_enabled",
            "created_at",
            "updated_at",
            "revision_number",
            "ip_allocation",
            "allowed_address_pairs",
            "extra_dhcp_opts",
        ],
        Kind::Network => &[
            "id",
            "name",
            "project_id",
            "tenant_id",
            "admin_state_up",
            "mtu",
            "status",
            "subnets",
            "shared",
            "port_security_enabled",
            "router:external",
            "provider:network_type",
            "provider:physical_network",
            "provider:segmentation_id",
            "description",
            "created_at",
            "updated_at",
            "revision_number",
            "is_default",
        ],
        Kind::Subnet => &[
            "id",
            "name",
            "project_id",
            "tenant_id",
            "network_id",
            "ip_version",
            "subnetpool_id",
            "enable_dhcp",
            "ipv6_ra_mode",
            "ipv6_address_mode",
            "gateway_ip",
            "cidr",
            "description",
            "router:external",
            "created_at",
            "updated_at",
            "revision_number",
            "segment_id",
        ],
        Kind::Router => &[
            "id",
            "name",
            "project_id",
            "tenant_id",
            "admin_state_up",
            "status",
            "description",
            "distributed",
            "ha",
            "created_at",
            "updated_at",
            "revision_number",
            "flavor_id",
        ],
        Kind::FloatingIp => &[
            "id",
            "project_id",
            "tenant_id",
            "floating_ip_address",
            "floating_network_id",
            "router_id",
            "port_id",
            "fixed_ip_address",
            "status",
            "description",
            "created_at",
            "updated_at",
            "revision_number",
        ],
        Kind::SecurityGroup => &[
            "id",
            "name",
            "project_id",
            "tenant_id",
            "description",
            "stateful",
            "shared",
            "created_at",
            "updated_at",
            "revision_number",
        ],
        Kind::SecurityGroupRule => &[
            "id",
            "project_id",
            "tenant_id",
            "security_group_id",
            "remote_group_id",
            "direction",
            "protocol",
            "port_range_min",
            "port_range_max",
            "ethertype",
            "remote_ip_prefix",
            "remote_address_group_id",
            "normalized_cidr",
            "belongs_to_default_sg",
            "description",
            "created_at",
            "updated_at",
            "revision_number",
        ],
    }
}

/// The key of a collection in list bodies, e.g. `security_groups`.
pub(crate) fn collection(kind: Kind) -> &'static str {
    match kind {
        Kind::Network => "networks",
        Kind::Subnet => "subnets",
        Kind::Port => "ports",
        Kind::Router => "routers",
        Kind::FloatingIp => "floatingips",
        Kind::SecurityGroup => "security_groups",
        Kind::SecurityGroupRule => "security_group_rules",
    }
}

/// A collection's path under `/v2.0/`, e.g. `security-groups`.
pub(crate) fn path(kind: Kind) -> String {
    collection(kind).replace('_', "-")
}

pub(crate) fn fields_of(params: &[(String, String)]) -> Vec<String> {
    params
        .iter()
        .filter(|(k, _)| k == "fields")
        .flat_map(|(_, v)| v.split(','))
        .map(str::to_string)
        .collect()
}

/// Keeps only `fields` (if any) in a rendered resource.
pub(crate) fn project(v: Value, fields: &[String]) -> Value {
    match v {
        Value::Object(o) if !fields.is_empty() => {
            Value::Object(o.into_iter().filter(|(k, _)| fields.contains(k)).collect::<Map<_, _>>())
        }
        other => other,
    }
}

pub(crate) struct ListQuery {
    filters: BTreeMap<String, Vec<String>>,
    pub tags_all: Vec<String>,
    pub tags_any: Vec<String>,
    not_tags: Vec<String>,
    not_tags_any: Vec<String>,
    fields: Vec<String>,
    limit: Option<usize>,
    marker: Option<String>,
    page_reverse: bool,
    sort_key: Option<String>,
    sort_desc: bool,
}

impl ListQuery {
    pub fn parse(kind: Kind, params: &[(String, String)]) -> Result<Self> {
        let mut filters: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut invalid = Vec::new();
        let list = |key: &str| -> Vec<String> {
            params
                .iter()
                .filter(|(k, _)| k == key)
                .flat_map(|(_, v)| v.split(','))
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        for (k, v) in params {
            if RESERVED.contains(&k.as_str()) {
                continue;
            }
            if !valid_filters(kind).contains(&k.as_str()) {
                if !invalid.contains(k) {
                    invalid.push(k.clone());
                }
                continue;
            }
            filters.entry(k.clone()).or_default().push(v.clone());
        }
        if !invalid.is_empty() {
            let names: Vec<String> = invalid.iter().map(|k| format!("'{k}'")).collect();
            return Err(Error::bad(format!(
                "[{}] is invalid attribute for filtering",
                names.join(", ")
            )));
        }
        let last = |key: &str| params.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let limit = match last("limit") {
            None => None,
            Some(l) => match l.parse::<i64>() {
                Ok(n) if n >= 0 => Some(n as usize).filter(|n| *n > 0),
                _ => {
                    return Err(Error::BadRequest(
                        "BadRequest",
                        format!("Bad limit request: Limit must be an integer 0 or greater and not '{l}'."),
                    ));
                }
            },
        };
        Ok(ListQuery {
            filters,
            tags_all: list("tags"),
            tags_any: list("tags-any"),
            not_tags: list("not-tags"),
            not_tags_any: list("not-tags-any"),
            fields: fields_of(params),
            limit,
            marker: last("marker"),
            page_reverse: last("page_reverse").is_some_and(|v| v.eq_ignore_ascii_case("true")),
            sort_key: last("sort_key"),
            sort_desc: last("sort_dir").is_some_and(|d| d == "desc"),
        })
    }

    pub fn filter(&self, key: &str) -> Option<&[String]> {
        self.filters.get(key).map(Vec::as_slice)
    }

    /// Does a rendered resource pass every filter?
    pub fn matches(&self, v: &Value) -> Result<bool> {
        for (key, wanted) in &self.filters {
            let have = v.get(key).unwrap_or(&Value::Null);
            let ok = if key == "fixed_ips" {
                fixed_ips_match(have, wanted)
            } else {
                let mut any = false;
                for w in wanted {
                    if value_matches(have, w)? {
                        any = true;
                        break;
                    }
                }
                any
            };
            if !ok {
                return Ok(false);
            }
        }
        if !(self.tags_all.is_empty()
            && self.tags_any.is_empty()
            && self.not_tags.is_empty()
            && self.not_tags_any.is_empty())
        {
            let tags: Vec<&str> = v
                .get("tags")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let has = |t: &String| tags.contains(&t.as_str());
            if !self.tags_all.iter().all(has)
                || (!self.tags_any.is_empty() && !self.tags_any.iter().any(has))
                || (!self.not_tags.is_empty() && self.not_tags.iter().all(has))
                || self.not_tags_any.iter().any(has)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sorts, paginates and projects the matching items into `{collection: [...], collection_links}`.
    pub fn finish(
        &self,
        kind: Kind,
        mut items: Vec<Value>,
        params: &[(String, String)],
        base_url: &str,
    ) -> Result<Value> {
        let id_of = |v: &Value| v.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(key) = self.sort_key.as_deref().filter(|k| *k != "id") {
            items.sort_by(|a, b| sort_cmp(a.get(key), b.get(key)).then_with(|| id_of(a).cmp(&id_of(b))));
        }
        if self.sort_desc {
            items.reverse();
        }
        let coll = collection(kind);
        let mut out = Map::new();
        let mut links = Vec::new();
        if let Some(limit) = self.limit {
            let pos = match &self.marker {
                Some(m) => Some(
                    items
                        .iter()
                        .position(|v| id_of(v) == *m)
                        .ok_or_else(|| Error::not_found(kind.not_found(), m))?,
                ),
                None => None,
            };
            let page: Vec<Value> = if self.page_reverse {
                let end = pos.unwrap_or(items.len());
                items.drain(end.saturating_sub(limit)..end).collect()
            } else {
                let start = pos.map_or(0, |p| p + 1);
                items.drain(start.min(items.len())..).take(limit).collect()
            };
            let short = page.len() < limit;
            let href = |marker: Option<String>, reverse: bool| {
                let mut q: Vec<(String, String)> = params
                    .iter()
                    .filter(|(k, _)| k != "marker" && k != "page_reverse")
                    .cloned()
                    .collect();
                if let Some(m) = marker {
                    q.push(("marker".into(), m));
                }
                if reverse {
                    q.push(("page_reverse".into(), "True".into()));
                }
                let qs = serde_urlencoded::to_string(&q).unwrap_or_default();
                serde_json::json!({"rel": if reverse { "previous" } else { "next" }, "href": format!("{base_url}?{qs}")})
            };
            if !short || self.page_reverse {
                links.push(href(page.last().map(id_of), false));
            }
            if !short || !self.page_reverse {
                links.push(href(page.first().map(id_of), true));
            }
            items = page;
        }
        let items: Vec<Value> = items.into_iter().map(|v| project(v, &self.fields)).collect();
        out.insert(coll.into(), Value::Array(items));
        if !links.is_empty() {
            out.insert(format!("{coll}_links"), Value::Array(links));
        }
        Ok(Value::Object(out))
    }
}

fn sort_cmp(a: Option<&Value>, b: Option<&Value>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            x.as_f64().unwrap_or(0.0).total_cmp(&y.as_f64().unwrap_or(0.0))
        }
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (x, y) => x
            .map(std::string::ToString::to_string)
            .cmp(&y.map(std::string::ToString::to_string)),
    }
}

fn value_matches(have: &Value, wanted: &str) -> Result<bool> {
    Ok(match have {
        Value::String(s) => s == wanted,
        Value::Bool(b) => *b == parse_bool(&Value::String(wanted.to_string()))?,
        Value::Number(n) => n.to_string() == wanted,
        Value::Null => wanted.is_empty() || wanted == "None",
        Value::Array(a) => a.iter().any(|x| x.as_str() == Some(wanted)),
        Value::Object(_) => serde_json::to_string(have).is_ok_and(|s| s == wanted),
    })
}

/// `fixed_ips=ip_address=X`, `fixed_ips=subnet_id=Y`, `fixed_ips=ip_address_substr=Z`: values of
/// one key are OR'd, keys are AND'd, all on the same allocation.
fn fixed_ips_match(have: &Value, wanted: &[String]) -> bool {
    let mut by_key: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for w in wanted {
        if let Some((k, v)) = w.split_once('=') {
            by_key.entry(k).or_default().push(v);
        }
    }
    have.as_array().is_some_and(|ips| {
        ips.iter().any(|ip| {
            by_key.iter().all(|(k, vals)| match *k {
                "ip_address_substr" => {
                    let a = ip.get("ip_address").and_then(Value::as_str).unwrap_or_default();
                    vals.iter().any(|v| a.contains(v))
                }
                key => {
                    let a = ip.get(key).and_then(Value::as_str).unwrap_or_default();
                    vals.contains(&a)
                }
            })
        })
    })
}
