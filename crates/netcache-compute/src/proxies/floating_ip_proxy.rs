//! Nova's floating IP proxies (`os-floating-ips`, `os-floating-ip-pools`,
//! gone at 2.36; `addFloatingIp`/`removeFloatingIp`, gone at 2.44): a
//! project's floating IPs made, read, associated and released in Neutron,
//! nothing kept here, each caller held to the floating IPs of their
//! [`ProjectScope`]; a new one is the caller's project's. An association or
//! release refreshes the cache of each server it changes, as Nova's
//! `refresh_cache` does, so the server's addresses show it at once.

use std::collections::HashMap;
use std::net::IpAddr;

use async_trait::async_trait;
use netcache_domain::floating_ip::{FixedAddress, fixed_address_for};
use netcache_domain::neutron::{FloatingIp, Network};
use netcache_domain::server::Server;
use netcache_domain::{NetworkId, PortId, ProjectId, ServerId};
use netcache_neutron::{FloatingIpCreate, FloatingIpFilter, FloatingIpTarget, NetworkFilter};
use tracing::{info, warn};

use crate::proxies::security_group_proxy::neutron_message;
use crate::{Compute, Error, ProjectScope, Result};

/// A floating IP with its pool's name (its external network's name, or id
/// if it has none), as Nova's views show it.
#[derive(Clone, Debug)]
pub struct PooledFloatingIp {
    pub ip: FloatingIp,
    pub pool: String,
}

fn pool_name(network: &Network) -> String {
    if network.name.is_empty() {
        network.id.to_string()
    } else {
        network.name.clone()
    }
}

/// Nova's os-floating-ips and os-floating-ip-pools, proxied to Neutron.
#[async_trait]
pub trait FloatingIpProxy: Send + Sync {
    /// The pools: every external network.
    async fn floating_ip_pools(&self) -> Result<Vec<Network>>;

    /// The project's floating IPs (an admin's too are their project's only, as in Nova).
    async fn project_floating_ips(&self, project: &ProjectId) -> Result<Vec<PooledFloatingIp>>;

    /// One floating IP the caller may see; else Nova's 404.
    async fn floating_ip(&self, id: &str, scope: &ProjectScope) -> Result<PooledFloatingIp>;

    /// A new floating IP of `project` from `pool` (a name or an id), else
    /// from the default pool (Nova's `[neutron] default_floating_pool`).
    async fn allocate_floating_ip(&self, project: &ProjectId, pool: Option<&str>) -> Result<PooledFloatingIp>;

    /// Releases a floating IP the caller may see, dissociating it first.
    async fn release_floating_ip(&self, id: &str, scope: &ProjectScope) -> Result<()>;

    /// The floating IP with `address` among those the caller may see.
    async fn floating_ip_by_address(&self, address: IpAddr, scope: &ProjectScope) -> Result<FloatingIp>;

    /// Nova's `addFloatingIp`: the floating IP at `address` (one the caller
    /// may see) associated with the server's fixed IP `fixed` (else its
    /// first IPv4 address), moved from the server it was on if any.
    async fn associate_floating_ip(
        &self,
        server: &Server,
        scope: &ProjectScope,
        address: IpAddr,
        fixed: Option<IpAddr>,
    ) -> Result<()>;

    /// Nova's `removeFloatingIp` once its checks passed: `fip` dissociated
    /// from `server`.
    async fn dissociate_floating_ip(&self, server: &Server, fip: &FloatingIp) -> Result<()>;
}

#[async_trait]
impl FloatingIpProxy for Compute {
    async fn floating_ip_pools(&self) -> Result<Vec<Network>> {
        let external = NetworkFilter {
            external: Some(true),
            ..NetworkFilter::default()
        };
        Ok(self.neutron.list_networks(&external).await?)
    }

    async fn project_floating_ips(&self, project: &ProjectId) -> Result<Vec<PooledFloatingIp>> {
        let filter = FloatingIpFilter {
            project_ids: vec![project.clone()],
            ..FloatingIpFilter::default()
        };
        let fips = self.neutron.list_floating_ips(&filter).await?;
        self.pooled(fips).await
    }

    async fn floating_ip(&self, id: &str, scope: &ProjectScope) -> Result<PooledFloatingIp> {
        let fip = self.visible_floating_ip(id, scope).await?;
        Ok(self.pooled(vec![fip]).await?.remove(0))
    }

    async fn allocate_floating_ip(&self, project: &ProjectId, pool: Option<&str>) -> Result<PooledFloatingIp> {
        let wanted = pool.unwrap_or(&self.config.default_floating_pool);
        let mut filter = NetworkFilter {
            external: Some(true),
            ..NetworkFilter::default()
        };
        if uuid::Uuid::parse_str(wanted).is_ok() {
            filter.ids = vec![NetworkId::from(wanted)];
        } else {
            filter.name = Some(wanted.to_owned());
        }
        let mut networks = self.neutron.list_networks(&filter).await?;
        let network = match networks.len() {
            0 => return Err(Error::FloatingIpPoolNotFound),
            1 => networks.remove(0),
            _ => return Err(Error::FloatingIpPoolAmbiguous(wanted.to_owned())),
        };
        let create = FloatingIpCreate {
            floating_network_id: network.id.clone(),
            project_id: project.clone(),
        };
        let pool = pool.map(str::to_owned);
        let ip = self
            .neutron
            .create_floating_ip(&create)
            .await
            .map_err(|e| match (e.kind(), e.status()) {
                (Some("IpAddressGenerationFailure" | "ExternalIpAddressExhausted"), _) => {
                    Error::NoMoreFloatingIps(pool)
                }
                (Some("OverQuota"), _) => Error::FloatingIpLimitExceeded(pool),
                (_, Some(400)) => Error::FloatingIpRefused(neutron_message(e)),
                _ => e.into(),
            })?;
        info!(floating_ip.id = %ip.id, project.id = %project, "Allocated floating IP {} to project {project}", ip.floating_ip_address);
        Ok(PooledFloatingIp {
            ip,
            pool: pool_name(&network),
        })
    }

    async fn release_floating_ip(&self, id: &str, scope: &ProjectScope) -> Result<()> {
        let fip = self.visible_floating_ip(id, scope).await?;
        self.neutron.delete_floating_ip(&fip.id).await.map_err(|e| {
            if e.is_not_found() {
                Error::FloatingIpNotFoundForAddress(fip.floating_ip_address)
            } else {
                e.into()
            }
        })?;
        info!(floating_ip.id = %fip.id, "Released floating IP {}", fip.floating_ip_address);
        self.refresh_holder(&fip).await;
        Ok(())
    }

    async fn floating_ip_by_address(&self, address: IpAddr, scope: &ProjectScope) -> Result<FloatingIp> {
        let filter = FloatingIpFilter {
            floating_ip_address: Some(address),
            project_ids: if scope.all_projects {
                Vec::new()
            } else {
                vec![scope.project.clone()]
            },
            ..FloatingIpFilter::default()
        };
        let mut found = self.neutron.list_floating_ips(&filter).await?;
        match found.len() {
            0 => Err(Error::FloatingIpNotFoundForAddress(address)),
            1 => Ok(found.remove(0)),
            _ => Err(Error::FloatingIpMultipleFound(address)),
        }
    }

    async fn associate_floating_ip(
        &self,
        server: &Server,
        scope: &ProjectScope,
        address: IpAddr,
        fixed: Option<IpAddr>,
    ) -> Result<()> {
        let vifs = self.store.vifs(server.id).await?;
        let FixedAddress {
            port_id,
            address: fixed,
        } = fixed_address_for(server.id, &vifs, address, fixed).map_err(Error::FixedAddressRefused)?;
        let failed = |error: String| {
            Error::FloatingIpRefused(format!(
                "Unable to associate floating IP {address} to fixed IP {fixed} for instance {}. Error: {error}",
                server.id
            ))
        };
        let fip = match self.floating_ip_by_address(address, scope).await {
            Ok(fip) => fip,
            Err(Error::FloatingIpNotFoundForAddress(_)) => return Err(Error::FloatingIpAddressNotFound),
            Err(e @ Error::FloatingIpMultipleFound(_)) => return Err(failed(e.to_string())),
            Err(e) => return Err(e),
        };
        let target = FloatingIpTarget {
            port_id: port_id.clone(),
            fixed_ip_address: fixed,
        };
        self.neutron
            .update_floating_ip(&fip.id, Some(&target))
            .await
            .map_err(|e| match e.status() {
                // Nova's FloatingIpAssociateFailed: Neutron's words alone.
                Some(409) => Error::FloatingIpRefused(neutron_message(e)),
                Some(403) => e.into(),
                Some(_) => failed(neutron_message(e)),
                None => e.into(),
            })?;
        info!(server.id = %server.id, port.id = %port_id, floating_ip.id = %fip.id, "Associated floating IP {address} with {fixed} of server {}", server.id);
        self.refresh_cache_of(server, &port_id).await;
        if fip.port_id.as_ref().is_some_and(|p| *p != port_id) {
            self.refresh_holder(&fip).await;
        }
        Ok(())
    }

    async fn dissociate_floating_ip(&self, server: &Server, fip: &FloatingIp) -> Result<()> {
        self.neutron.update_floating_ip(&fip.id, None).await?;
        info!(server.id = %server.id, floating_ip.id = %fip.id, "Dissociated floating IP {} from server {}", fip.floating_ip_address, server.id);
        self.refresh_holder(fip).await;
        Ok(())
    }
}

impl Compute {
    /// The floating IP, if the caller may see it; else Nova's 404.
    async fn visible_floating_ip(&self, id: &str, scope: &ProjectScope) -> Result<FloatingIp> {
        let missing = || Error::FloatingIpNotFound(id.to_owned());
        // Neutron would answer any other id 404 too.
        if uuid::Uuid::parse_str(id).is_err() {
            return Err(missing());
        }
        match self.neutron.show_floating_ip(id).await {
            Ok(fip) if scope.sees(&fip.project_id) => Ok(fip),
            Ok(_) => Err(missing()),
            Err(e) if e.is_not_found() => Err(missing()),
            Err(e) => Err(e.into()),
        }
    }

    /// `fips` with their pools' names (one Neutron call, if any).
    async fn pooled(&self, fips: Vec<FloatingIp>) -> Result<Vec<PooledFloatingIp>> {
        if fips.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids: Vec<NetworkId> = fips.iter().map(|f| f.floating_network_id.clone()).collect();
        ids.sort();
        ids.dedup();
        let filter = NetworkFilter {
            ids,
            ..NetworkFilter::default()
        };
        let names: HashMap<NetworkId, String> = self
            .neutron
            .list_networks(&filter)
            .await?
            .iter()
            .map(|n| (n.id.clone(), pool_name(n)))
            .collect();
        Ok(fips
            .into_iter()
            .map(|ip| {
                let pool = names
                    .get(&ip.floating_network_id)
                    .cloned()
                    .unwrap_or_else(|| ip.floating_network_id.to_string());
                PooledFloatingIp { ip, pool }
            })
            .collect())
    }

    /// Refreshes the cache of the server whose port `fip` was associated
    /// with, if it is one of netcache's (best effort, as Nova's).
    async fn refresh_holder(&self, fip: &FloatingIp) {
        let (Some(port_id), Some(device)) = (&fip.port_id, &fip.device_id) else {
            return;
        };
        let Ok(server_id) = device.parse::<ServerId>() else {
            return;
        };
        match self.server(server_id).await {
            Ok(server) => self.refresh_cache_of(&server, port_id).await,
            Err(e) => {
                warn!(server.id = %server_id, error = %e, "Server {server_id} of floating IP {} not refreshed: {e}", fip.floating_ip_address);
            }
        }
    }

    /// The cache entry of the server's port refreshed from Neutron; a
    /// failure is logged, and heal or the next event makes it right.
    async fn refresh_cache_of(&self, server: &Server, port_id: &PortId) {
        if let Err(e) = self.refresh_port(server, port_id).await {
            warn!(server.id = %server.id, port.id = %port_id, error = %e, "Network info of server {} not refreshed: {e}", server.id);
        }
    }
}
