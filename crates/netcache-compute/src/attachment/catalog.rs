//! Network and subnet details, reused for a while so a boot on a known network
//! costs no Neutron look-ups (Nova asks for them on every refresh).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use netcache_domain::neutron::{Network, Subnet};
use netcache_domain::{NetworkId, ProjectId, SubnetId};
use netcache_neutron::{NetworkFilter, NeutronApi, SubnetFilter};
use tokio::time::Instant;

use crate::error::Result;

/// Details of some networks and all their subnets.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub networks: HashMap<NetworkId, Network>,
    pub subnets: HashMap<SubnetId, Subnet>,
}

struct Entry {
    fetched: Instant,
    network: Network,
    subnets: Vec<Subnet>,
}

pub struct NetworkCatalog {
    ttl: Duration,
    entries: Mutex<HashMap<NetworkId, Entry>>,
    /// One fetch at a time: callers that find the same networks stale (a heal
    /// pass's batches read at once, a burst of boots) wait for it and then
    /// find them fresh, rather than ask Neutron again.
    fetching: tokio::sync::Mutex<()>,
}

impl NetworkCatalog {
    #[must_use]
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// Details of these networks, each once however often it is named;
    /// missing ones are simply absent from the result.
    /// Costs two Neutron calls when any is unknown or stale, none otherwise.
    pub async fn topology(&self, neutron: &dyn NeutronApi, ids: &[NetworkId]) -> Result<Topology> {
        if !self.stale(ids).is_empty() {
            let _fetching = self.fetching.lock().await;
            let stale = self.stale(ids);
            if !stale.is_empty() {
                let networks = neutron
                    .list_networks(&NetworkFilter {
                        ids: stale,
                        ..NetworkFilter::default()
                    })
                    .await?;
                self.remember(neutron, networks).await?;
            }
        }
        let entries = self.entries.lock().expect("catalog lock");
        let mut topology = Topology::default();
        for id in ids {
            if topology.networks.contains_key(id) {
                continue;
            }
            if let Some(entry) = entries.get(id) {
                topology.networks.insert(id.clone(), entry.network.clone());
                for s in &entry.subnets {
                    topology.subnets.insert(s.id.clone(), s.clone());
                }
            }
        }
        Ok(topology)
    }

    /// Those of these networks unknown or older than the TTL, once each.
    fn stale(&self, ids: &[NetworkId]) -> Vec<NetworkId> {
        let entries = self.entries.lock().expect("catalog lock");
        let mut stale: Vec<NetworkId> = ids
            .iter()
            .filter(|id| entries.get(*id).is_none_or(|e| e.fetched.elapsed() >= self.ttl))
            .cloned()
            .collect();
        stale.sort();
        stale.dedup();
        stale
    }

    /// Networks a project may boot on without naming one: its own and shared ones,
    /// never external ones. Always asks Neutron (two calls): the set changes as
    /// networks are created, and only a boot without a named network needs it.
    pub async fn available_networks(&self, neutron: &dyn NeutronApi, project: &ProjectId) -> Result<Vec<Network>> {
        let own = neutron
            .list_networks(&NetworkFilter {
                project_id: Some(project.clone()),
                shared: Some(false),
                ..NetworkFilter::default()
            })
            .await?;
        let shared = neutron
            .list_networks(&NetworkFilter {
                shared: Some(true),
                ..NetworkFilter::default()
            })
            .await?;
        let mut networks: Vec<Network> = own.into_iter().chain(shared).filter(|n| !n.external).collect();
        networks.sort_by(|a, b| a.id.cmp(&b.id));
        networks.dedup_by(|a, b| a.id == b.id);
        Ok(networks)
    }

    async fn remember(&self, neutron: &dyn NeutronApi, networks: Vec<Network>) -> Result<()> {
        if networks.is_empty() {
            return Ok(());
        }
        let subnets = neutron
            .list_subnets(&SubnetFilter {
                network_ids: networks.iter().map(|n| n.id.clone()).collect(),
                ..SubnetFilter::default()
            })
            .await?;
        let now = Instant::now();
        let mut entries = self.entries.lock().expect("catalog lock");
        for network in networks {
            let own_subnets = subnets.iter().filter(|s| s.network_id == network.id).cloned().collect();
            entries.insert(
                network.id.clone(),
                Entry {
                    fetched: now,
                    network,
                    subnets: own_subnets,
                },
            );
        }
        Ok(())
    }
}
