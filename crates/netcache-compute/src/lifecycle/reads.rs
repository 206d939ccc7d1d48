//! What the API reads of servers as they are recorded: a server, its
//! addresses as its cache shows them. Compute's own steps read the same
//! through `Compute`'s crate-private methods, which these call.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::ServerId;
use netcache_domain::network_info::{CacheAddresses, NetworkInfo};
use netcache_domain::server::Server;

use crate::{Compute, Result};

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
}

#[async_trait]
impl ServerReads for Arc<Compute> {
    async fn server(&self, id: ServerId) -> Result<Server> {
        Compute::server(self, id).await
    }

    async fn server_or_deleted(&self, id: ServerId) -> Result<Server> {
        Compute::server_or_deleted(self, id).await
    }

    async fn network_info(&self, id: ServerId) -> Result<NetworkInfo> {
        Compute::network_info(self, id).await
    }

    async fn addresses(&self, id: ServerId) -> Result<CacheAddresses> {
        Compute::addresses(self, id).await
    }

    async fn addresses_of(&self, ids: &[ServerId]) -> Result<HashMap<ServerId, CacheAddresses>> {
        Compute::addresses_of(self, ids).await
    }
}
