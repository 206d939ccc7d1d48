//! Nova's host aggregates (`os-aggregates`) and the availability zones they
//! make: an aggregate's `availability_zone` metadata puts its hosts in that
//! zone, a host in none is in the deployment's default zone. The decisions are
//! Nova's: which zone a host is in, and the refusals of a change that would put
//! a host in two zones or move a host's servers to another zone (Nova never
//! moves a server between zones), in Nova's order and words.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::HostName;

/// The metadata key that holds an aggregate's zone.
pub const ZONE_KEY: &str = "availability_zone";

/// An aggregate as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate {
    /// Nova's integer id.
    pub id: i64,
    /// Shown from 2.41.
    pub uuid: Uuid,
    pub name: String,
    /// In the order they were added.
    pub hosts: Vec<HostName>,
    pub metadata: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl Aggregate {
    /// The zone it puts its hosts in, if any.
    #[must_use]
    pub fn availability_zone(&self) -> Option<&str> {
        self.metadata.get(ZONE_KEY).map(String::as_str)
    }

    fn has_host(&self, host: &HostName) -> bool {
        self.hosts.contains(host)
    }
}

/// A new aggregate (Nova's create: a name, and a zone or none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewAggregate {
    pub uuid: Uuid,
    pub name: String,
    pub availability_zone: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A metadata change: a value sets its key, `None` removes it.
pub type MetadataUpdate = BTreeMap<String, Option<String>>;

/// A write of an existing aggregate, applied by the store only at the
/// generation of [`Aggregates`] it was decided from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AggregateWrite {
    Update {
        id: i64,
        name: Option<String>,
        metadata: MetadataUpdate,
        at: DateTime<Utc>,
    },
    AddHost {
        id: i64,
        host: HostName,
    },
    RemoveHost {
        id: i64,
        host: HostName,
    },
    Delete {
        id: i64,
    },
}

impl AggregateWrite {
    /// The aggregate written.
    #[must_use]
    pub fn id(&self) -> i64 {
        match self {
            Self::Update { id, .. } | Self::AddHost { id, .. } | Self::RemoveHost { id, .. } | Self::Delete { id } => {
                *id
            }
        }
    }
}

/// Which of Nova's aggregate actions a zone rule refused (its words and,
/// in the API, its status differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneAction {
    AddHost,
    RemoveHost,
    Update,
    UpdateMetadata,
}

/// Why Nova refuses a change of aggregates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    NotFound(i64),
    NameExists(String),
    HostExists {
        id: i64,
        host: HostName,
    },
    HostAbsent {
        id: i64,
        host: HostName,
    },
    NotEmpty(i64),
    Zone {
        action: ZoneAction,
        id: i64,
        reason: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound(id) => write!(f, "Aggregate {id} could not be found."),
            Self::NameExists(name) => write!(f, "Aggregate {name} already exists."),
            Self::HostExists { id, host } => write!(f, "Aggregate {id} already has host {host}."),
            Self::HostAbsent { id, host } => write!(f, "Aggregate {id} has no host {host}."),
            Self::NotEmpty(id) => write!(
                f,
                "Cannot remove host from aggregate {id}. Reason: Host aggregate is not empty."
            ),
            Self::Zone { action, id, reason } => {
                let what = match action {
                    ZoneAction::AddHost => "add host to aggregate",
                    ZoneAction::RemoveHost => "remove host from aggregate",
                    ZoneAction::Update => "update aggregate",
                    ZoneAction::UpdateMetadata => "update metadata of aggregate",
                };
                write!(f, "Cannot {what} {id}. Reason: {reason}.")
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// Every aggregate as read (by id), with the generation every write of an
/// existing one compare-and-swaps, so a decision is made on what is written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aggregates {
    pub generation: i64,
    pub list: Vec<Aggregate>,
}

impl Aggregates {
    pub fn find(&self, id: i64) -> Result<&Aggregate, Refusal> {
        self.list.iter().find(|a| a.id == id).ok_or(Refusal::NotFound(id))
    }

    /// The host's zone: its first aggregate's with one (Nova's
    /// `get_host_availability_zone`), else `default`.
    #[must_use]
    pub fn zone_of<'a>(&'a self, host: &HostName, default: &'a str) -> &'a str {
        self.zone_aggregate(host, None).unwrap_or(default)
    }

    /// The zone the host's aggregates but `except` give it, if any.
    fn zone_aggregate(&self, host: &HostName, except: Option<i64>) -> Option<&str> {
        self.list
            .iter()
            .filter(|a| Some(a.id) != except && a.has_host(host))
            .find_map(Aggregate::availability_zone)
    }

    /// Nova's check of a new name (the name unique among aggregates).
    pub fn check_name(&self, id: Option<i64>, name: &str) -> Result<(), Refusal> {
        if self.list.iter().any(|a| a.name == name && Some(a.id) != id) {
            return Err(Refusal::NameExists(name.to_owned()));
        }
        Ok(())
    }

    /// Nova's `is_safe_to_update_az`: a zone set by `metadata` must be named,
    /// and no host of `hosts` (the aggregate's if `None`) may be in another
    /// aggregate of another zone; with `busy` (the hosts that have servers),
    /// a zone that changes must leave no server in another zone.
    fn check_zone(
        &self,
        aggregate: &Aggregate,
        metadata: &MetadataUpdate,
        hosts: Option<&[HostName]>,
        action: ZoneAction,
        busy: Option<&HashSet<HostName>>,
    ) -> Result<(), Refusal> {
        let Some(zone) = metadata.get(ZONE_KEY) else {
            return Ok(());
        };
        let refuse = |reason: String| Refusal::Zone {
            action,
            id: aggregate.id,
            reason,
        };
        let Some(zone) = zone.as_deref().filter(|z| !z.is_empty()) else {
            return Err(refuse(format!(
                "Aggregate {} does not support empty named availability zone",
                aggregate.name
            )));
        };
        let hosts = hosts.unwrap_or(&aggregate.hosts);
        let conflicting: Vec<String> = self
            .list
            .iter()
            .filter(|a| a.id != aggregate.id && hosts.iter().any(|h| a.has_host(h)))
            .filter_map(Aggregate::availability_zone)
            .filter(|z| *z != zone)
            .map(|z| format!("'{z}'"))
            .collect();
        if !conflicting.is_empty() {
            return Err(refuse(format!(
                "One or more hosts already in availability zone(s) [{}]",
                conflicting.join(", ")
            )));
        }
        let moved = aggregate.availability_zone() != Some(zone);
        if let Some(busy) = busy
            && moved
            && hosts.iter().any(|h| busy.contains(h))
        {
            return Err(refuse("One or more hosts contain instances in this zone".into()));
        }
        Ok(())
    }

    /// Nova's checks of a rename and a metadata change (`PUT` when `action`
    /// is [`ZoneAction::Update`], `set_metadata` otherwise), `busy` the hosts
    /// with servers.
    pub fn check_update(
        &self,
        id: i64,
        name: Option<&str>,
        metadata: &MetadataUpdate,
        action: ZoneAction,
        busy: &HashSet<HostName>,
    ) -> Result<(), Refusal> {
        let aggregate = self.find(id)?;
        if let Some(name) = name {
            self.check_name(Some(id), name)?;
        }
        self.check_zone(aggregate, metadata, None, action, Some(busy))
    }

    /// Nova's checks of adding `host` (one of the hosts, with `servers` live
    /// servers): the zone rules, then the host not already there.
    pub fn check_add_host(&self, id: i64, host: &HostName, servers: usize) -> Result<(), Refusal> {
        let aggregate = self.find(id)?;
        let own: MetadataUpdate = aggregate
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        self.check_zone(
            aggregate,
            &own,
            Some(std::slice::from_ref(host)),
            ZoneAction::AddHost,
            None,
        )?;
        if let Some(new) = aggregate.availability_zone()
            && servers > 0
        {
            let old = self.zone_aggregate(host, None);
            if old != Some(new) {
                return Err(zone_move(
                    ZoneAction::AddHost,
                    id,
                    ("added to", servers),
                    old,
                    Some(new),
                ));
            }
        }
        if aggregate.has_host(host) {
            return Err(Refusal::HostExists { id, host: host.clone() });
        }
        Ok(())
    }

    /// Nova's checks of removing `host` (with `servers` live servers): their
    /// zone must not change, then the host must be there.
    pub fn check_remove_host(&self, id: i64, host: &HostName, servers: usize) -> Result<(), Refusal> {
        let aggregate = self.find(id)?;
        if let Some(current) = aggregate.availability_zone()
            && servers > 0
        {
            let new = self.zone_aggregate(host, Some(id));
            if new != Some(current) {
                return Err(zone_move(
                    ZoneAction::RemoveHost,
                    id,
                    ("removed from", servers),
                    Some(current),
                    new,
                ));
            }
        }
        if !aggregate.has_host(host) {
            return Err(Refusal::HostAbsent { id, host: host.clone() });
        }
        Ok(())
    }

    /// Nova deletes only an aggregate without hosts.
    pub fn check_delete(&self, id: i64) -> Result<(), Refusal> {
        if self.find(id)?.hosts.is_empty() {
            Ok(())
        } else {
            Err(Refusal::NotEmpty(id))
        }
    }
}

/// Nova's refusal of a host move (`verb`, and the host's server count) that
/// would take its servers to another zone (Python prints no zone as `None`;
/// Nova's reason ends with a full stop before the one its format adds).
fn zone_move(
    action: ZoneAction,
    id: i64,
    (verb, servers): (&str, usize),
    from: Option<&str>,
    to: Option<&str>,
) -> Refusal {
    let name = |z: Option<&str>| z.unwrap_or("None").to_owned();
    Refusal::Zone {
        action,
        id,
        reason: format!(
            "The host cannot be {verb} the aggregate as the availability zone of the host would change from '{}' to '{}' but the host already has {servers} instance(s). Changing the AZ of an existing instance is not supported by this action. Move the instances away from this host then try again. If you need to move the instances between AZs then you can use shelve_offload and unshelve to achieve this.",
            name(from),
            name(to)
        ),
    }
}

#[cfg(test)]
mod tests;
