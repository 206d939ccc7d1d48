//! The pure core of netcache: the model and the decisions, with no I/O.
//!
//! Everything here is plain data and functions over it. The I/O crates
//! (Neutron client, store, compute service, API) wrap these decisions:
//! - [`cache::build_network_info`] decides what a server's network info cache is,
//!   from netcache's own VIF records plus Neutron's port details;
//! - [`ghost::classify_ports`] decides which Neutron ports are ghosts;
//! - [`allocation::resolve_ambiguous_create`] decides what to do after a create-port
//!   call whose outcome is unknown;
//! - [`visibility::network_access`] / [`visibility::port_access`] decide which
//!   networks and ports a caller may use;
//! - [`nova::audit_instance`] decides which ports of a Nova instance its own
//!   records prove allocated, and which are ghosts, leaked or undecided;
//! - [`quota::Quotas`] decides what the quotas allow (servers, key pairs,
//!   metadata, new limits).

pub mod action;
pub mod aggregate;
pub mod allocation;
pub mod cache;
pub mod change;
pub mod console;
pub mod diagnostics;
#[cfg(any(test, feature = "testing"))]
pub mod fixtures;
pub mod flavor;
pub mod floating_ip;
pub mod gc;
pub mod ghost;
pub mod heal_shard;
pub mod ids;
pub mod intent;
pub mod keypair;
pub mod marker;
pub mod network_info;
pub mod neutron;
pub mod nova;
pub mod operation;
pub mod power;
pub mod quota;
pub mod rebuild;
pub mod retention;
pub mod security_group;
pub mod security_group_rule;
pub mod server;
pub mod server_attributes;
pub mod server_group;
pub mod service;
pub mod vif;
pub mod visibility;

pub use ids::{DeploymentId, HostName, InstanceUuid, IntentId, NetworkId, PortId, ProjectId, ServerId, SubnetId};
