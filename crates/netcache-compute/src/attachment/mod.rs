//! Port attachment: which Neutron ports a server has, and keeping that true.
//!
//! A boot's ports are planned with its first attempt and created with the
//! intent protocol (`allocate`); interfaces are attached and detached
//! (`interfaces`); Neutron's events and the hypervisor's plugging move a port's
//! state (`events`, `plugging`); heal rebuilds the network info caches a batch
//! at a time (`heal`, `heal_sweep`); GC deletes only ports proven garbage
//! (`gc`); the audit reports drift without writing (`audit`). The network
//! catalog, Neutron's extensions, fixed IPs and security groups are what these
//! read and edit on a server's ports.
//!
//! Never here: a server's lifecycle (`lifecycle`), running operations
//! (`runner`), or Nova's proxies of Neutron resources (`proxies`).

pub(crate) mod allocate;
pub(crate) mod audit;
pub mod catalog;
pub(crate) mod events;
pub(crate) mod first_attempt;
pub(crate) mod fixed_ips;
pub(crate) mod gc;
pub(crate) mod heal;
pub(crate) mod heal_sweep;
pub(crate) mod interfaces;
pub(crate) mod neutron_features;
pub(crate) mod plugging;
pub(crate) mod resume;
pub(crate) mod security_groups;

pub use audit::AuditOps;
pub use events::EventOps;
pub use fixed_ips::FixedIpOps;
pub use interfaces::InterfaceOps;
pub use security_groups::ServerSecurityGroupOps;

/// Everything the API does to a server's attachments: the one interface its
/// handlers of interfaces, fixed IPs, security groups, events and the audit
/// are given, made of this folder's traits.
pub trait AttachmentOps: InterfaceOps + FixedIpOps + ServerSecurityGroupOps + EventOps + AuditOps {}

impl<T: InterfaceOps + FixedIpOps + ServerSecurityGroupOps + EventOps + AuditOps> AttachmentOps for T {}
