//! The hosts and what they offer: compute services (registered per host, kept
//! up by a heartbeat), host aggregates and availability zones, flavors, and the
//! pick of a host for a build among them (`aggregates`, with a server group's
//! policy from `tenancy::server_groups`).
//!
//! Never here: a server's records or ports; a build asks for a host and
//! records the answer itself (`lifecycle::build`).

pub(crate) mod aggregates;
pub(crate) mod flavors;
pub(crate) mod services;
