//! Nova's `os-getConsoleOutput`: what the server's guest printed, as its
//! hypervisor (the virt driver) holds it.

use netcache_domain::ServerId;
use netcache_domain::console;

use crate::{Compute, Error, Result};

impl Compute {
    /// The last `length` lines of the server's console log (all of it with
    /// `None`), as Nova answers them; Nova's 409 ([`Error::NotReady`]) for a
    /// server with no host to ask.
    pub async fn console_output(&self, server_id: ServerId, length: Option<i64>) -> Result<String> {
        let server = self.server(server_id).await?;
        let host = server.host.as_ref().ok_or(Error::NotReady(server_id))?;
        let log = self.virt.console_log(host, &server).await;
        Ok(console::output(&log, length))
    }
}
