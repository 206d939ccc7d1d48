//! Nova's network proxies (`os-networks`, `os-tenant-networks`, gone at
//! 2.36): the Neutron networks a caller would see with their own token, as
//! netcache reads Neutron as its service user: a project's own, shared and
//! external networks, or (an admin) every network.

use async_trait::async_trait;
use netcache_domain::neutron::Network;
use netcache_domain::{NetworkId, ProjectId};
use netcache_neutron::NetworkFilter;

use crate::{Compute, Result};

/// Nova's os-networks, proxied to Neutron.
#[async_trait]
pub trait NetworkProxy: Send + Sync {
    /// The networks `project` sees (`None`: every network).
    async fn visible_networks(&self, project: Option<&ProjectId>) -> Result<Vec<Network>>;

    /// One network, if `project` sees it (`None`: any).
    async fn visible_network(&self, id: &NetworkId, project: Option<&ProjectId>) -> Result<Option<Network>>;
}

#[async_trait]
impl NetworkProxy for Compute {
    async fn visible_networks(&self, project: Option<&ProjectId>) -> Result<Vec<Network>> {
        let Some(project) = project else {
            return Ok(self.neutron.list_networks(&NetworkFilter::default()).await?);
        };
        let mut networks = self.catalog.available_networks(self.neutron.as_ref(), project).await?;
        let external = self
            .neutron
            .list_networks(&NetworkFilter {
                external: Some(true),
                ..NetworkFilter::default()
            })
            .await?;
        networks.extend(external);
        networks.sort_by(|a, b| a.id.cmp(&b.id));
        networks.dedup_by(|a, b| a.id == b.id);
        Ok(networks)
    }

    async fn visible_network(&self, id: &NetworkId, project: Option<&ProjectId>) -> Result<Option<Network>> {
        let found = self
            .neutron
            .list_networks(&NetworkFilter {
                ids: vec![id.clone()],
                ..NetworkFilter::default()
            })
            .await?;
        Ok(found
            .into_iter()
            .find(|n| project.is_none_or(|p| n.project_id == *p || n.shared || n.external)))
    }
}
