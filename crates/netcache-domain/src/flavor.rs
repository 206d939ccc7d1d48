//! Flavors: server sizes an admin defines (Nova's `flavors`, with their extra
//! specs and, for a private one, the projects that may use it), which of them a
//! caller sees and how Nova lists them, and the snapshot of its flavor a server
//! keeps from its boot (quotas count it; a later change of the flavor does not).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::ProjectId;

/// A flavor as stored (Nova's flavor record).
#[derive(Clone, Debug, PartialEq)]
pub struct Flavor {
    /// Nova's `flavorid`: what the API calls the flavor's id.
    pub id: String,
    pub name: String,
    pub ram_mb: i64,
    pub vcpus: i64,
    pub disk_gb: i64,
    pub ephemeral_gb: i64,
    pub swap_mb: i64,
    pub rxtx_factor: f64,
    pub is_public: bool,
    pub description: Option<String>,
    pub extra_specs: BTreeMap<String, String>,
    /// The projects given access to a private flavor.
    pub projects: BTreeSet<String>,
}

impl Flavor {
    /// Whether a caller may see and use it (Nova: admin, a public flavor, or a
    /// project given access).
    #[must_use]
    pub fn visible_to(&self, project: &ProjectId, admin: bool) -> bool {
        admin || self.is_public || self.projects.contains(project.as_str())
    }

    /// What a server booted with it keeps.
    #[must_use]
    pub fn snapshot(&self) -> FlavorSnapshot {
        FlavorSnapshot {
            name: self.name.clone(),
            vcpus: self.vcpus,
            ram_mb: self.ram_mb,
            disk_gb: self.disk_gb,
            ephemeral_gb: self.ephemeral_gb,
            swap_mb: self.swap_mb,
            extra_specs: self.extra_specs.clone(),
        }
    }
}

/// A server's flavor as it was when the server booted (Nova's
/// `instance.flavor`): quotas count it, and deleting or changing the flavor
/// later leaves it as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlavorSnapshot {
    /// Nova's `original_name`.
    pub name: String,
    pub vcpus: i64,
    pub ram_mb: i64,
    pub disk_gb: i64,
    pub ephemeral_gb: i64,
    pub swap_mb: i64,
    pub extra_specs: BTreeMap<String, String>,
}

/// The five flavors every deployment starts with (migration `0012_flavors.sql`
/// seeds the same): id, name, RAM (MB), disk (GB), vcpus.
const BUILT_IN: [(&str, &str, i64, i64, i64); 5] = [
    ("1", "m1.tiny", 512, 1, 1),
    ("2", "m1.small", 2048, 20, 1),
    ("3", "m1.medium", 4096, 40, 2),
    ("4", "m1.large", 8192, 80, 4),
    ("5", "m1.xlarge", 16384, 160, 8),
];

/// The snapshot of a built-in flavor, for a server recorded before servers kept
/// one (every boot then named a built-in flavor).
#[must_use]
pub fn built_in_snapshot(id: &str) -> Option<FlavorSnapshot> {
    BUILT_IN
        .iter()
        .find(|(flavor_id, ..)| *flavor_id == id)
        .map(|&(_, name, ram_mb, disk_gb, vcpus)| FlavorSnapshot {
            name: name.to_owned(),
            vcpus,
            ram_mb,
            disk_gb,
            ephemeral_gb: 0,
            swap_mb: 0,
            extra_specs: BTreeMap::new(),
        })
}

/// Nova's flavor sort keys (`VALID_SORT_KEYS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Nova's own row id, `created_at`, `updated_at` and `vcpu_weight` (never
    /// set): the order flavors were created in.
    Created,
    Description,
    Disabled,
    Ephemeral,
    FlavorId,
    IsPublic,
    Ram,
    Name,
    Disk,
    RxtxFactor,
    Swap,
    Vcpus,
}

impl SortKey {
    /// Nova's name of a key (`None`: not one of them).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "id" | "created_at" | "updated_at" | "vcpu_weight" => Self::Created,
            "description" => Self::Description,
            "disabled" => Self::Disabled,
            "ephemeral_gb" => Self::Ephemeral,
            "flavorid" => Self::FlavorId,
            "is_public" => Self::IsPublic,
            "memory_mb" => Self::Ram,
            "name" => Self::Name,
            "root_gb" => Self::Disk,
            "rxtx_factor" => Self::RxtxFactor,
            "swap" => Self::Swap,
            "vcpus" => Self::Vcpus,
            _ => return None,
        })
    }

    fn compare(self, a: &Flavor, b: &Flavor) -> Ordering {
        match self {
            Self::Created | Self::Disabled => Ordering::Equal,
            Self::Description => a.description.cmp(&b.description),
            Self::Ephemeral => a.ephemeral_gb.cmp(&b.ephemeral_gb),
            Self::FlavorId => a.id.cmp(&b.id),
            Self::IsPublic => a.is_public.cmp(&b.is_public),
            Self::Ram => a.ram_mb.cmp(&b.ram_mb),
            Self::Name => a.name.cmp(&b.name),
            Self::Disk => a.disk_gb.cmp(&b.disk_gb),
            Self::RxtxFactor => a.rxtx_factor.total_cmp(&b.rxtx_factor),
            Self::Swap => a.swap_mb.cmp(&b.swap_mb),
            Self::Vcpus => a.vcpus.cmp(&b.vcpus),
        }
    }
}

/// A flavor list query, as Nova's `FlavorList.get_all` reads it.
#[derive(Clone)]
pub struct ListQuery<'a> {
    pub project: &'a ProjectId,
    pub admin: bool,
    /// `Some(true)`: public ones and those the caller's project may use;
    /// `Some(false)`: private ones; `None`: all (Nova lets only an admin choose).
    pub is_public: Option<bool>,
    pub min_ram: Option<i64>,
    pub min_disk: Option<i64>,
    /// 2.102's `name`: a regular expression the caller's matcher applies.
    pub name: Option<&'a (dyn Fn(&str) -> bool + Sync)>,
    pub sort_key: SortKey,
    pub descending: bool,
    /// The flavor id the page starts after.
    pub marker: Option<&'a str>,
    pub limit: Option<usize>,
}

impl<'a> ListQuery<'a> {
    /// Nova's list with no query parameter: the flavors the caller may use
    /// (public ones and its project's), by flavor id ascending, all of them.
    #[must_use]
    pub fn new(project: &'a ProjectId, admin: bool) -> Self {
        Self {
            project,
            admin,
            is_public: Some(true),
            min_ram: None,
            min_disk: None,
            name: None,
            sort_key: SortKey::FlavorId,
            descending: false,
            marker: None,
            limit: None,
        }
    }
}

/// The marker of a list names no flavor the caller sees.
#[derive(Debug, PartialEq, Eq)]
pub struct MarkerNotFound;

/// A page of `flavors` (given in the order they were created) as Nova lists it:
/// visible to the caller, filtered, sorted by the key then creation order (both
/// in the one direction), after the marker, at most `limit`.
pub fn list(flavors: Vec<Flavor>, query: &ListQuery<'_>) -> Result<Vec<Flavor>, MarkerNotFound> {
    let visible: Vec<(usize, Flavor)> = flavors
        .into_iter()
        .enumerate()
        .filter(|(_, f)| f.visible_to(query.project, query.admin))
        .collect();
    let order = |a: &(usize, Flavor), b: &(usize, Flavor)| {
        let ordering = query.sort_key.compare(&a.1, &b.1).then(a.0.cmp(&b.0));
        if query.descending { ordering.reverse() } else { ordering }
    };
    let marker = match query.marker {
        None => None,
        Some(id) => Some(
            visible
                .iter()
                .find(|(_, f)| f.id == id)
                .cloned()
                .ok_or(MarkerNotFound)?,
        ),
    };
    let mut page: Vec<(usize, Flavor)> = visible
        .into_iter()
        .filter(|(_, f)| query.min_ram.is_none_or(|min| f.ram_mb >= min))
        .filter(|(_, f)| query.min_disk.is_none_or(|min| f.disk_gb >= min))
        .filter(|(_, f)| query.name.is_none_or(|matches| matches(&f.name)))
        .filter(|(_, f)| match query.is_public {
            None => true,
            Some(true) => f.is_public || f.projects.contains(query.project.as_str()),
            Some(false) => !f.is_public,
        })
        .filter(|row| marker.as_ref().is_none_or(|m| order(row, m) == Ordering::Greater))
        .collect();
    page.sort_by(order);
    if let Some(limit) = query.limit {
        page.truncate(limit);
    }
    Ok(page.into_iter().map(|(_, f)| f).collect())
}
