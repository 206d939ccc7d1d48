//! A server's lifecycle: its build on a host (`build`), power actions
//! (`power`), rebuild, the admin's state reset, a user's edits of its name,
//! metadata, tags and lock (`edit`), and what the hypervisor holds of it
//! (`console`), through the virt driver (`virt`).
//!
//! Never here: creating or deleting its ports (`attachment::allocate`), or
//! running the operation that does (`runner`): a lifecycle step is one
//! operation kind's step.

pub(crate) mod build;
pub(crate) mod console;
pub(crate) mod edit;
pub(crate) mod power;
pub(crate) mod reads;
pub(crate) mod rebuild;
pub(crate) mod server_state;
pub mod virt;

pub use build::BuildOps;
pub use console::ConsoleOps;
pub use edit::EditOps;
pub use power::PowerOps;
pub use reads::ServerReads;
pub use rebuild::RebuildOps;
pub use server_state::ServerStateOps;

/// Everything the API does to a server's lifecycle: the one interface its
/// servers' handlers are given, made of this folder's traits.
pub trait ServerOps: ServerReads + BuildOps + PowerOps + EditOps + RebuildOps + ServerStateOps + ConsoleOps {}

impl<T: ServerReads + BuildOps + PowerOps + EditOps + RebuildOps + ServerStateOps + ConsoleOps> ServerOps for T {}
