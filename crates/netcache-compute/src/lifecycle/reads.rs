//! What the API reads of servers as they are recorded: a server, its
//! addresses as its cache shows them, pages of servers and their instance
//! actions. Compute's own steps read a server and its network info through
//! `Compute`'s crate-private methods, which these two call.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::action::Action;
use netcache_domain::network_info::{CacheAddresses, NetworkInfo};
use netcache_domain::server::Server;
use netcache_domain::{ProjectId, ServerId};
use netcache_store::{ServerFilter, Sort, SortKey};

use crate::{Compute, Error, Result};

/// Servers as recorded.
#[async_trait]
pub trait ServerReads: Send + Sync {
    /// A server that is not deleted.
    async fn server(&self, id: ServerId) -> Result<Server>;

    /// A server as recorded, deleted or not, until it is purged (Nova's
    /// `read_deleted='yes'`).
    async fn server_or_deleted(&self, id: ServerId) -> Result<Server>;

    /// A server's network info cache.
    async fn network_info(&self, id: ServerId) -> Result<NetworkInfo>;

    /// What the API shows of a server's cache (empty if it has none).
    async fn addresses(&self, id: ServerId) -> Result<CacheAddresses>;

    /// What the API shows of a page of servers' caches, read as a set and
    /// decoded no further; a server without a cache has no entry.
    async fn addresses_of(&self, ids: &[ServerId]) -> Result<HashMap<ServerId, CacheAddresses>>;

    /// At most `limit` servers of a project (all when `None`) in `order`, after
    /// `after` if given: one keyset page from the store (newest first on the
    /// statements planned for it).
    async fn servers_page(
        &self,
        project: Option<&str>,
        include_deleted: bool,
        order: &[Sort],
        after: Option<&Server>,
        limit: usize,
    ) -> Result<Vec<Server>>;

    /// A server's actions, newest first; a deleted server's too, until purged.
    async fn actions(&self, server_id: ServerId) -> Result<Vec<Action>>;
}

#[async_trait]
impl ServerReads for Arc<Compute> {
    async fn server(&self, id: ServerId) -> Result<Server> {
        Compute::server(self, id).await
    }

    async fn server_or_deleted(&self, id: ServerId) -> Result<Server> {
        self.store.server(id).await?.ok_or(Error::ServerNotFound(id))
    }

    async fn network_info(&self, id: ServerId) -> Result<NetworkInfo> {
        Compute::network_info(self, id).await
    }

    async fn addresses(&self, id: ServerId) -> Result<CacheAddresses> {
        Ok(self.addresses_of(&[id]).await?.remove(&id).unwrap_or_default())
    }

    async fn addresses_of(&self, ids: &[ServerId]) -> Result<HashMap<ServerId, CacheAddresses>> {
        let texts = self.store.cache_texts_of(ids).await?;
        Ok(texts
            .into_iter()
            .map(|(id, text)| Ok((id, text.addresses()?)))
            .collect::<netcache_store::Result<_>>()?)
    }

    async fn servers_page(
        &self,
        project: Option<&str>,
        include_deleted: bool,
        order: &[Sort],
        after: Option<&Server>,
        limit: usize,
    ) -> Result<Vec<Server>> {
        let filter = ServerFilter {
            project_id: project.map(ProjectId::from),
            include_deleted,
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let newest_first = [Sort {
            key: SortKey::CreatedAt,
            descending: true,
        }];
        Ok(if order == newest_first {
            self.store.servers_newest_first(&filter, after, limit).await?
        } else {
            let after = after.map(|s| s.id);
            self.store.servers_sorted(&filter, order, after, limit).await?
        })
    }

    async fn actions(&self, server_id: ServerId) -> Result<Vec<Action>> {
        self.server_or_deleted(server_id).await?;
        Ok(self.store.actions(server_id).await?)
    }
}
