//! Host aggregates (Nova's `os-aggregates`) and the zones they give hosts:
//! each change decided by the domain's rules from one read of every aggregate
//! (and of the hosts' servers), written only at that read's generation and
//! decided again from a fresh read if another change came first; and the
//! hosts a placement may choose — round robin over this process's hosts,
//! in the zone asked for if any —, with the zone each is in.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use netcache_domain::aggregate::{
    Aggregate, AggregateWrite, Aggregates, MetadataUpdate, NewAggregate, Refusal, ZoneAction,
};
use netcache_domain::server_attributes::ServerAttributes;
use netcache_domain::service::COMPUTE_BINARY;
use netcache_domain::{HostName, ServerId};
use tracing::info;

use crate::{Compute, Error, Result};

/// Reads and compare-and-swaps before a change gives up (each lost one means
/// another admin changed the aggregates in between).
const WRITE_ATTEMPTS: usize = 5;

/// Where a placement may go: the hosts it must skip (disabled, forced down,
/// or outside the zone asked for) and the zone of each host.
pub(crate) struct HostChoice {
    pub excluded: HashSet<HostName>,
    aggregates: Aggregates,
    default_zone: String,
}

impl HostChoice {
    /// The zone of `host`, which a server placed there is in.
    pub fn zone_of(&self, host: &HostName) -> String {
        self.aggregates.zone_of(host, &self.default_zone).to_owned()
    }
}

/// Nova's os-aggregates: host aggregates and their availability zones.
#[async_trait]
pub trait AggregateOps: Send + Sync {
    /// Every aggregate, by id: what gives each host its zone.
    async fn aggregates(&self) -> Result<Aggregates>;

    async fn aggregate(&self, id: i64) -> Result<Aggregate>;

    /// Nova's create: a name no other aggregate has (the store's index
    /// decides between racing creates), in `zone` if one is given.
    async fn create_aggregate(&self, name: String, zone: Option<String>) -> Result<Aggregate>;

    /// Nova's update (`action` [`ZoneAction::Update`]: a new name and/or
    /// zone) or `set_metadata` ([`ZoneAction::UpdateMetadata`]).
    async fn update_aggregate(
        &self,
        id: i64,
        name: Option<String>,
        metadata: MetadataUpdate,
        action: ZoneAction,
    ) -> Result<Aggregate>;

    /// Nova's `add_host`: the host must be a compute host (Nova's 404 first).
    async fn add_aggregate_host(&self, id: i64, host: &str) -> Result<Aggregate>;

    /// Nova's `remove_host`.
    async fn remove_aggregate_host(&self, id: i64, host: &str) -> Result<Aggregate>;

    /// Nova's delete: of an aggregate without hosts.
    async fn delete_aggregate(&self, id: i64) -> Result<()>;
}

#[async_trait]
impl AggregateOps for Compute {
    async fn aggregates(&self) -> Result<Aggregates> {
        Ok(self.store.aggregates().await?)
    }

    async fn aggregate(&self, id: i64) -> Result<Aggregate> {
        let aggregates = self.store.aggregates().await?;
        Ok(aggregates.find(id)?.clone())
    }

    async fn create_aggregate(&self, name: String, zone: Option<String>) -> Result<Aggregate> {
        let new = NewAggregate {
            uuid: uuid::Uuid::new_v4(),
            name,
            availability_zone: zone,
            created_at: self.clock.now(),
        };
        self.store.aggregates().await?.check_name(None, &new.name)?;
        match self.store.create_aggregate(&new).await {
            Ok(aggregate) => {
                info!(
                    aggregate.id = aggregate.id,
                    "Created aggregate {} ({})", aggregate.id, aggregate.name
                );
                Ok(aggregate)
            }
            Err(e) if e.is_conflict() => Err(Refusal::NameExists(new.name).into()),
            Err(e) => Err(e.into()),
        }
    }

    async fn update_aggregate(
        &self,
        id: i64,
        name: Option<String>,
        metadata: MetadataUpdate,
        action: ZoneAction,
    ) -> Result<Aggregate> {
        let at = self.clock.now();
        let write = AggregateWrite::Update {
            id,
            name: name.clone(),
            metadata: metadata.clone(),
            at,
        };
        let busy: HashSet<HostName> = (self.store.server_counts_by_host().await?)
            .into_iter()
            .map(|c| c.host)
            .collect();
        self.write_aggregates(&write, |aggregates| {
            aggregates.check_update(id, name.as_deref(), &metadata, action, &busy)
        })
        .await
        .map_err(|e| match e {
            Error::Store(s) if s.is_conflict() => Refusal::NameExists(name.clone().unwrap_or_default()).into(),
            other => other,
        })?;
        self.aggregate(id).await
    }

    async fn add_aggregate_host(&self, id: i64, host: &str) -> Result<Aggregate> {
        let host = self.compute_host(host).await?;
        let write = AggregateWrite::AddHost { id, host: host.clone() };
        let servers = self.store.servers_on_host(&host).await?.len();
        self.write_aggregates(&write, |aggregates| aggregates.check_add_host(id, &host, servers))
            .await
            .map_err(|e| match e {
                Error::Store(s) if s.is_conflict() => Refusal::HostExists { id, host: host.clone() }.into(),
                other => other,
            })?;
        info!(aggregate.id = id, host = %host, "Added host {host} to aggregate {id}");
        self.aggregate(id).await
    }

    async fn remove_aggregate_host(&self, id: i64, host: &str) -> Result<Aggregate> {
        let host = self.compute_host(host).await?;
        let write = AggregateWrite::RemoveHost { id, host: host.clone() };
        let servers = self.store.servers_on_host(&host).await?.len();
        self.write_aggregates(&write, |aggregates| aggregates.check_remove_host(id, &host, servers))
            .await?;
        info!(aggregate.id = id, host = %host, "Removed host {host} from aggregate {id}");
        self.aggregate(id).await
    }

    async fn delete_aggregate(&self, id: i64) -> Result<()> {
        let write = AggregateWrite::Delete { id };
        self.write_aggregates(&write, |aggregates| aggregates.check_delete(id))
            .await?;
        info!(aggregate.id = id, "Deleted aggregate {id}");
        Ok(())
    }
}

impl Compute {
    /// Writes `write` once `check` allows it at a fresh read, at that read's
    /// generation; decided again if another change came first. (The hosts'
    /// servers `check` counts are read before: a boot is no change of
    /// aggregates, and Nova's own check is no less apart from its write.)
    async fn write_aggregates(
        &self,
        write: &AggregateWrite,
        check: impl Fn(&Aggregates) -> std::result::Result<(), Refusal>,
    ) -> Result<()> {
        for _ in 0..WRITE_ATTEMPTS {
            let aggregates = self.store.aggregates().await?;
            check(&aggregates)?;
            match self.store.write_aggregate(aggregates.generation, write).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                // Deleted between the read and the write's own check.
                Err(netcache_store::Error::NotFound(_)) => return Err(Refusal::NotFound(write.id()).into()),
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Store(netcache_store::Error::Conflict(
            "the aggregates kept changing; retry".into(),
        )))
    }

    /// The compute host named `host` (Nova's `ComputeHostNotFound` else).
    async fn compute_host(&self, host: &str) -> Result<HostName> {
        self.store
            .services()
            .await?
            .into_iter()
            .find(|s| s.service.host.as_str() == host && s.service.binary == COMPUTE_BINARY)
            .map(|s| s.service.host)
            .ok_or_else(|| Error::ComputeHostNotFound(host.to_owned()))
    }

    /// Where a server of these `attributes` may be placed now — in the zone it
    /// pinned, if any, on a host of its `same_host` servers and none of its
    /// `different_host` ones — read for each placement, so a change made by
    /// any process applies to the next.
    pub(crate) async fn host_choice(&self, attributes: &ServerAttributes) -> Result<HostChoice> {
        let zone = attributes.pinned_availability_zone.as_deref();
        let mut excluded = self.unschedulable_hosts().await?;
        let same_host = attributes.same_host();
        if !same_host.is_empty() {
            let same = self.hosts_of(&same_host).await?;
            excluded.extend(self.config.hosts.iter().filter(|h| !same.contains(*h)).cloned());
        }
        excluded.extend(self.hosts_of(&attributes.different_host()).await?);
        let choice = HostChoice {
            excluded: HashSet::new(),
            aggregates: self.store.aggregates().await?,
            default_zone: self.config.availability_zone.clone(),
        };
        if let Some(zone) = zone {
            excluded.extend(self.config.hosts.iter().filter(|h| choice.zone_of(h) != zone).cloned());
        }
        Ok(HostChoice { excluded, ..choice })
    }

    /// The hosts these servers are on (those not found or not placed: none).
    async fn hosts_of(&self, servers: &[ServerId]) -> Result<HashSet<HostName>> {
        let mut hosts = HashSet::new();
        for id in servers {
            if let Some(host) = self.store.server(*id).await?.and_then(|s| s.host) {
                hosts.insert(host);
            }
        }
        Ok(hosts)
    }

    /// Round-robin over the hosts not tried yet and not `excluded` (disabled,
    /// forced down, outside the zone asked for).
    pub(crate) fn pick_host(&self, tried: &[HostName], excluded: &HashSet<HostName>) -> Option<HostName> {
        self.candidate_hosts(tried, excluded).into_iter().next()
    }

    /// This process's hosts not tried yet nor `excluded`, in the order
    /// round-robin tries them.
    pub(crate) fn candidate_hosts(&self, tried: &[HostName], excluded: &HashSet<HostName>) -> Vec<HostName> {
        let hosts = &self.config.hosts;
        let start = self.next_host.fetch_add(1, Ordering::Relaxed);
        (0..hosts.len())
            .map(|i| &hosts[(start + i) % hosts.len()])
            .filter(|h| !tried.contains(h) && !excluded.contains(*h))
            .cloned()
            .collect()
    }
}
