//! What the hypervisor holds of a server's guest: Nova's `os-getConsoleOutput`
//! (what the guest printed, as the virt driver keeps it) and its diagnostics.

use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::ServerId;
use netcache_domain::console;
use netcache_domain::diagnostics::GuestDiagnostics;
use netcache_domain::server::Server;

use crate::{Compute, Error, Result};

/// What the hypervisor holds of a server: its console output and diagnostics.
#[async_trait]
pub trait ConsoleOps: Send + Sync {
    /// The last `length` lines of the server's console log (all of it with
    /// `None`), as Nova answers them; Nova's 409 ([`Error::NotReady`]) for a
    /// server with no host to ask.
    async fn console_output(&self, server_id: ServerId, length: Option<i64>) -> Result<String>;

    /// The fake hypervisor's report of `server`'s guest (its attached NICs from
    /// the VIF records, no Neutron call); Nova's 409 for a server with no host.
    async fn diagnostics(&self, server: &Server) -> Result<GuestDiagnostics>;
}

#[async_trait]
impl ConsoleOps for Arc<Compute> {
    async fn console_output(&self, server_id: ServerId, length: Option<i64>) -> Result<String> {
        let server = self.server(server_id).await?;
        let host = server.host.as_ref().ok_or(Error::NotReady(server_id))?;
        let log = self.virt.console_log(host, &server).await;
        Ok(console::output(&log, length))
    }

    async fn diagnostics(&self, server: &Server) -> Result<GuestDiagnostics> {
        if server.host.is_none() {
            return Err(Error::NotReady(server.id));
        }
        let vifs = self.attached_vifs(server.id).await?;
        Ok(GuestDiagnostics::of(server, &vifs))
    }
}
