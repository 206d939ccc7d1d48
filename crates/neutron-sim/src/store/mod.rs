//! In-memory Neutron data model, one module per resource, with the IP allocator in
//! [`ipam`]. Synchronous; the HTTP layer holds the lock only around calls.

mod floating_ips;
mod input;
mod ipam;
mod networks;
mod ports;
pub(crate) mod query;
mod routers;
mod security_groups;
mod sg_rules;
mod subnets;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use floating_ips::FloatingIp;
pub(crate) use input::{check_tag, parse_bool, parse_tags};
use networks::Network;
use ports::Port;
use routers::Router;
use security_groups::SecurityGroup;
use sg_rules::SecurityGroupRule;
use subnets::Subnet;

pub(crate) type Obj = Map<String, Value>;

/// Who is calling (noauth headers).
#[derive(Debug, Clone)]
pub struct Caller {
    pub project_id: String,
    pub is_admin: bool,
    pub is_service: bool,
}

impl Caller {
    #[must_use]
    pub fn admin() -> Self {
        Caller {
            project_id: "fake_project_id".into(),
            is_admin: true,
            is_service: false,
        }
    }
    fn sees(&self, project_id: &str) -> bool {
        self.is_admin || self.is_service || self.project_id == project_id
    }
}

/// An event for Nova's `os-server-external-events`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NovaEvent {
    pub name: String,
    pub server_uuid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub tag: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Network,
    Subnet,
    Port,
    Router,
    FloatingIp,
    SecurityGroup,
    SecurityGroupRule,
}

impl Kind {
    pub fn not_found(self) -> &'static str {
        match self {
            Kind::Network => "NetworkNotFound",
            Kind::Subnet => "SubnetNotFound",
            Kind::Port => "PortNotFound",
            Kind::Router => "RouterNotFound",
            Kind::FloatingIp => "FloatingIPNotFound",
            Kind::SecurityGroup => "SecurityGroupNotFound",
            Kind::SecurityGroupRule => "SecurityGroupRuleNotFound",
        }
    }
}

/// Neutron's standard attributes, which every resource has (and every view
/// shows, flattened into it).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct StdAttrs {
    created_at: String,
    updated_at: String,
    #[serde(rename = "revision_number")]
    revision: u64,
    tags: BTreeSet<String>,
    description: String,
}

impl StdAttrs {
    fn new(description: String, tags: BTreeSet<String>, revision: u64) -> Self {
        let now = now();
        StdAttrs {
            created_at: now.clone(),
            updated_at: now,
            revision,
            tags,
            description,
        }
    }
    fn bump(&mut self) {
        self.revision += 1;
        self.updated_at = now();
    }
    /// The standard part of an update: the new description, if any, and a new revision
    /// (Neutron bumps it even when nothing changed).
    fn update(&mut self, description: Option<String>) {
        update_field(&mut self.description, description);
        self.bump();
    }
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Sets `field` when the body gave a value for it.
fn update_field<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// `Some(item)`, or `kind`'s 404 for `id`.
fn found<T>(item: Option<T>, kind: Kind, id: &str) -> Result<T> {
    item.ok_or_else(|| Error::not_found(kind.not_found(), id))
}

/// Port ids by a key (device, network or tag).
type PortIndex = HashMap<String, BTreeSet<String>>;

fn index_insert(index: &mut PortIndex, key: &str, port_id: &str) {
    index.entry(key.to_string()).or_default().insert(port_id.to_string());
}

/// Removes `port_id` under `key`, and the key with its last port.
fn index_remove(index: &mut PortIndex, key: &str, port_id: &str) {
    if let Some(ids) = index.get_mut(key) {
        ids.remove(port_id);
        if ids.is_empty() {
            index.remove(key);
        }
    }
}

/// The whole in-memory state.
pub(crate) struct Store {
    networks: BTreeMap<String, Network>,
    subnets: BTreeMap<String, Subnet>,
    ports: BTreeMap<String, Port>,
    routers: BTreeMap<String, Router>,
    fips: BTreeMap<String, FloatingIp>,
    security_groups: BTreeMap<String, SecurityGroup>,
    sg_rules: BTreeMap<String, SecurityGroupRule>,
    by_device: PortIndex,
    by_network: PortIndex,
    by_tag: PortIndex,
    macs: HashSet<(String, String)>,
    /// Each project's `default` security group.
    default_sgs: HashMap<String, String>,
    rng: ChaCha8Rng,
    pub bind_activates: bool,
    pub tags_on_post: bool,
    pub notify: bool,
    pub events: Vec<NovaEvent>,
}

impl Store {
    pub fn new(seed: u64, bind_activates: bool, tags_on_post: bool) -> Self {
        Store {
            networks: BTreeMap::new(),
            subnets: BTreeMap::new(),
            ports: BTreeMap::new(),
            routers: BTreeMap::new(),
            fips: BTreeMap::new(),
            security_groups: BTreeMap::new(),
            sg_rules: BTreeMap::new(),
            by_device: HashMap::new(),
            by_network: HashMap::new(),
            by_tag: HashMap::new(),
            macs: HashSet::new(),
            default_sgs: HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            bind_activates,
            tags_on_post,
            notify: false,
            events: Vec::new(),
        }
    }

    pub fn clear(&mut self) {
        let fresh = Store::new(self.rng.random(), self.bind_activates, self.tags_on_post);
        let notify = self.notify;
        *self = fresh;
        self.notify = notify;
    }

    fn new_id(&mut self) -> String {
        uuid::Builder::from_random_bytes(self.rng.random())
            .into_uuid()
            .to_string()
    }

    fn emit(&mut self, name: &str, server: &str, tag: &str) {
        if self.notify {
            // Only the vif plugged/unplugged events carry a status.
            let status = name.ends_with("plugged").then(|| "completed".to_string());
            self.events.push(NovaEvent {
                name: name.into(),
                server_uuid: server.into(),
                status,
                tag: tag.into(),
            });
        }
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The project a create body asks for: admins may name another one.
    fn project_for(caller: &Caller, project: Option<String>) -> String {
        match project {
            Some(p) if caller.is_admin => p,
            _ => caller.project_id.clone(),
        }
    }

    fn std_of(&mut self, kind: Kind, id: &str) -> Option<&mut StdAttrs> {
        match kind {
            Kind::Network => self.networks.get_mut(id).map(|x| &mut x.std),
            Kind::Subnet => self.subnets.get_mut(id).map(|x| &mut x.std),
            Kind::Port => self.ports.get_mut(id).map(|x| &mut x.std),
            Kind::Router => self.routers.get_mut(id).map(|x| &mut x.std),
            Kind::FloatingIp => self.fips.get_mut(id).map(|x| &mut x.std),
            Kind::SecurityGroup => self.security_groups.get_mut(id).map(|x| &mut x.std),
            Kind::SecurityGroupRule => self.sg_rules.get_mut(id).map(|x| &mut x.std),
        }
    }

    /// The owning project of a resource, and whether every project sees it.
    fn owner_of(&self, kind: Kind, id: &str) -> Option<(&str, bool)> {
        match kind {
            Kind::Network => self
                .networks
                .get(id)
                .map(|x| (x.project_id.as_str(), x.shared || x.external)),
            Kind::Subnet => self.subnets.get(id).map(|x| {
                let shared = self.networks.get(&x.network_id).is_some_and(|n| n.shared || n.external);
                (x.project_id.as_str(), shared)
            }),
            Kind::Port => self.ports.get(id).map(|x| (x.project_id.as_str(), false)),
            Kind::Router => self.routers.get(id).map(|x| (x.project_id.as_str(), false)),
            Kind::FloatingIp => self.fips.get(id).map(|x| (x.project_id.as_str(), false)),
            Kind::SecurityGroup => self.security_groups.get(id).map(|x| (x.project_id.as_str(), false)),
            // A group's owner sees every rule of it, whoever made the rule.
            Kind::SecurityGroupRule => self.sg_rules.get(id).map(|r| {
                let group = self.security_groups.get(&r.security_group_id);
                (group.map_or(r.project_id.as_str(), |g| g.project_id.as_str()), false)
            }),
        }
    }

    /// 404 unless `id` exists and the caller may see it.
    pub fn check_visible(&self, caller: &Caller, kind: Kind, id: &str) -> Result<()> {
        match self.owner_of(kind, id) {
            Some((p, shared)) if shared || caller.sees(p) => Ok(()),
            _ => Err(Error::not_found(kind.not_found(), id)),
        }
    }

    /// Checks `If-Match: revision_number=N`.
    pub fn check_revision(&mut self, kind: Kind, id: &str, if_match: Option<&str>) -> Result<()> {
        let Some(expected) = if_match.and_then(|h| {
            h.split(',').find_map(|p| {
                p.trim()
                    .strip_prefix("revision_number=")
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
        }) else {
            return Ok(());
        };
        let current = self.std_of(kind, id).map_or(0, |s| s.revision);
        if current != expected {
            return Err(Error::RevisionMismatch { expected, current });
        }
        Ok(())
    }

    /// A resource as `caller` sees it: only admins see `provider:*`, and only admins and
    /// services see `binding:*` but `binding:vnic_type`.
    pub fn render(&self, caller: &Caller, kind: Kind, id: &str) -> Option<Value> {
        let mut v = match kind {
            Kind::Network => self.networks.get(id).map(|n| self.network_json(n)),
            Kind::Subnet => self.subnets.get(id).map(|s| self.subnet_json(s)),
            Kind::Port => self.ports.get(id).map(ports::port_json),
            Kind::Router => self.routers.get(id).map(|r| self.router_json(r)),
            Kind::FloatingIp => self.fips.get(id).map(|f| self.fip_json(f)),
            Kind::SecurityGroup => self.security_groups.get(id).map(|g| self.security_group_json(g)),
            Kind::SecurityGroupRule => self.sg_rules.get(id).map(|r| self.rule_json(r)),
        }?;
        if !caller.is_admin
            && let Some(o) = v.as_object_mut()
        {
            o.retain(|k, _| {
                !k.starts_with("provider:")
                    && (caller.is_service || !k.starts_with("binding:") || k == "binding:vnic_type")
            });
        }
        Some(v)
    }

    /// Lists `kind` with Neutron's filters, sorting, pagination and `fields`.
    pub fn list(&self, caller: &Caller, kind: Kind, params: &[(String, String)], base_url: &str) -> Result<Value> {
        let q = query::ListQuery::parse(kind, params)?;
        let ids: Vec<String> = match kind {
            Kind::Port => self.port_candidates(&q),
            Kind::Network => self.networks.keys().cloned().collect(),
            Kind::Subnet => self.subnets.keys().cloned().collect(),
            Kind::Router => self.routers.keys().cloned().collect(),
            Kind::FloatingIp => self.fips.keys().cloned().collect(),
            Kind::SecurityGroup => self.security_groups.keys().cloned().collect(),
            Kind::SecurityGroupRule => self.sg_rules.keys().cloned().collect(),
        };
        let mut items = Vec::new();
        for id in ids {
            let Some((p, shared)) = self.owner_of(kind, &id) else {
                continue;
            };
            if !(shared || caller.sees(p)) {
                continue;
            }
            if let Some(v) = self.render(caller, kind, &id)
                && q.matches(&v)?
            {
                items.push(v);
            }
        }
        q.finish(kind, items, params, base_url)
    }

    pub fn tags(&mut self, kind: Kind, id: &str) -> Result<Vec<String>> {
        let std = found(self.std_of(kind, id), kind, id)?;
        Ok(std.tags.iter().cloned().collect())
    }

    /// Replaces all tags of a resource.
    pub fn set_tags(&mut self, kind: Kind, id: &str, new: BTreeSet<String>) -> Result<()> {
        let old = self.tags(kind, id)?;
        if kind == Kind::Port {
            for t in &old {
                index_remove(&mut self.by_tag, t, id);
            }
            for t in &new {
                index_insert(&mut self.by_tag, t, id);
            }
        }
        let changed = old.iter().cloned().collect::<BTreeSet<_>>() != new;
        let std = found(self.std_of(kind, id), kind, id)?;
        std.tags = new;
        if changed {
            std.bump();
        }
        Ok(())
    }
}
