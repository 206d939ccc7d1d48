//! What belongs to a project or a user: key pairs (and the x509 ones Nova
//! generates), quotas and their claims, server groups, and whose Neutron
//! resources a caller sees (`project_scope`).
//!
//! Never here: Neutron's own quotas, or decisions on limits (the domain's
//! `quota` module judges; this module reads and records).

pub(crate) mod keypairs;
pub(crate) mod project_scope;
pub(crate) mod quotas;
pub(crate) mod server_groups;
pub(crate) mod x509;
