//! Nova's proxies of Neutron resources (`os-networks`, `os-floating-ips`,
//! `os-security-groups` and their rules): each a translation of a Nova request
//! into Neutron calls, held to what the caller would see with their own token
//! (`tenancy::project_scope`, or the network proxy's own rule).
//!
//! Never here: a server's ports or records; the proxies keep no state of
//! their own.

pub(crate) mod floating_ip_proxy;
pub(crate) mod network_proxy;
pub(crate) mod security_group_proxy;
