//! What belongs to a project or a user: key pairs (and the x509 ones Nova
//! generates), quotas and their claims, server groups, and whose Neutron
//! resources a caller sees (`project_scope`).
//!
//! Never here: the judgement of a claim (the domain's `quota` rules, applied
//! by the store inside the claim's own commit); this module reads the limits,
//! records an admin's changes and asks for claims.

pub(crate) mod keypairs;
pub(crate) mod project_scope;
pub(crate) mod quotas;
pub(crate) mod server_groups;
pub(crate) mod x509;
