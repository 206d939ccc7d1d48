//! Compute services (Nova's `os-services`): a `nova-compute` service per host
//! of this process, registered at start (insert if absent, so any number of
//! processes may start at once) and kept up by a heartbeat each lease tick on
//! the database's clock; an admin's changes as compare-and-swaps retried from
//! a fresh read; and the hosts the scheduler skips, read once per placement.

use std::collections::HashSet;

use async_trait::async_trait;
use netcache_domain::HostName;
use netcache_domain::service::{COMPUTE_BINARY, Service, ServiceUpdate};
use netcache_store::StoredService;
use tracing::{info, warn};

use crate::{Compute, Error, Result};

/// Reads and compare-and-swaps before a change of a service gives up (each
/// lost one means another admin changed the row in between).
const UPDATE_ATTEMPTS: usize = 5;

/// Which service an admin names: by id (before 2.53: the integer, from 2.53:
/// the uuid), or by host and binary (before 2.53's `PUT /os-services/{action}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceKey {
    Id(i64),
    Uuid(uuid::Uuid),
    HostBinary { host: String, binary: String },
}

impl ServiceKey {
    fn matches(&self, service: &Service) -> bool {
        match self {
            Self::Id(id) => service.id == *id,
            Self::Uuid(uuid) => service.uuid == *uuid,
            Self::HostBinary { host, binary } => service.host.as_str() == host && &service.binary == binary,
        }
    }

    /// Nova's 404 for a service it cannot find by this key.
    fn not_found(&self) -> Error {
        match self {
            Self::Id(id) => Error::ServiceNotFound(id.to_string()),
            Self::Uuid(uuid) => Error::ServiceNotFound(uuid.to_string()),
            Self::HostBinary { host, .. } => Error::HostNotMapped(host.clone()),
        }
    }
}

/// Nova's os-services: the compute services of the hosts, and an admin's
/// changes to them.
#[async_trait]
pub trait ServiceOps: Send + Sync {
    /// Every service, by id, with whether its heartbeat is live.
    async fn services(&self) -> Result<Vec<StoredService>>;

    /// Applies an admin's change to the service `key` names, from a fresh read
    /// each attempt; returns the service as written, with its liveness.
    async fn update_service(&self, key: &ServiceKey, update: &ServiceUpdate) -> Result<StoredService>;

    /// Deletes a service; Nova's 409 for a compute service that still hosts servers.
    async fn delete_service(&self, key: &ServiceKey) -> Result<()>;
}

#[async_trait]
impl ServiceOps for Compute {
    async fn services(&self) -> Result<Vec<StoredService>> {
        Ok(self.store.services().await?)
    }

    async fn update_service(&self, key: &ServiceKey, update: &ServiceUpdate) -> Result<StoredService> {
        for _ in 0..UPDATE_ATTEMPTS {
            let stored = self.find_service(key).await?;
            if stored.service.binary != COMPUTE_BINARY {
                return Err(Error::ServiceNotUpdatable(stored.service.binary));
            }
            let next = stored.service.updated(update).map_err(Error::ServiceUpdateRefused)?;
            match self.store.update_service(&next).await {
                Ok(()) => {
                    info!(host = %next.host, disabled = next.disabled, forced_down = next.forced_down, "Service nova-compute of {} updated", next.host);
                    return Ok(StoredService {
                        service: Service {
                            generation: next.generation + 1,
                            ..next
                        },
                        heartbeat_live: stored.heartbeat_live,
                    });
                }
                // Another admin's change came first: read it and apply this one to it.
                Err(e) if e.is_conflict() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Store(netcache_store::Error::Conflict(
            "the service kept changing; retry".into(),
        )))
    }

    async fn delete_service(&self, key: &ServiceKey) -> Result<()> {
        let stored = self.find_service(key).await?;
        if stored.service.binary == COMPUTE_BINARY
            && !self.store.servers_on_host(&stored.service.host).await?.is_empty()
        {
            return Err(Error::ServiceHostsInstances);
        }
        if !self.store.delete_service(stored.service.id).await? {
            return Err(key.not_found());
        }
        info!(host = %stored.service.host, "Service nova-compute of {} deleted", stored.service.host);
        Ok(())
    }
}

impl Compute {
    /// Registers this process's hosts' services and starts their heartbeats.
    pub(crate) async fn register_services(&self) -> Result<()> {
        self.store
            .register_services(&self.config.hosts, self.runner.lease())
            .await?;
        info!(hosts = %self.config.node_name(), "Registered the nova-compute services of {}", self.config.node_name());
        Ok(())
    }

    /// One heartbeat of this process's hosts' services (each lease tick).
    pub(crate) async fn renew_service_heartbeats(&self) {
        if let Err(e) = self
            .store
            .renew_service_heartbeats(&self.config.hosts, self.runner.lease())
            .await
        {
            warn!(error = %e, "Could not renew the heartbeats of this process's services: {e}");
        }
    }

    async fn find_service(&self, key: &ServiceKey) -> Result<StoredService> {
        self.store
            .services()
            .await?
            .into_iter()
            .find(|s| key.matches(&s.service))
            .ok_or_else(|| key.not_found())
    }

    /// The hosts no server may be placed on now (disabled or forced down):
    /// one statement, read for each placement, so a change made by any
    /// process applies to the next placement.
    pub(crate) async fn unschedulable_hosts(&self) -> Result<HashSet<HostName>> {
        Ok(self.store.unschedulable_hosts().await?.into_iter().collect())
    }
}
