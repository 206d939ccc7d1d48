//! State changes, decided in pure code and applied by the store in one transaction
//! each batch. A batch either applies whole or not at all.

use crate::action::{Action, ActionEvent};
use crate::cache::FoundRight;
use crate::flavor::Flavor;
use crate::ghost::GhostSighting;
use crate::intent::{IntentState, PortIntent};
use crate::keypair::KeyPair;
use crate::network_info::NetworkInfo;
use crate::operation::{Operation, Owner, QueuedDelete};
use crate::quota::{KeyPairClaim, Resource, ServerClaim, ServerGroupClaim};
use crate::server::Server;
use crate::server_group::ServerGroup;
use crate::vif::VifRecord;
use crate::{PortId, ProjectId, ServerId};

#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A new server, with its empty cache (generation 0).
    InsertServer(Server),
    /// Replace a server row if nobody changed it since `server.generation`; the
    /// stored generation becomes `server.generation + 1`.
    UpdateServer(Server),
    InsertVif(VifRecord),
    /// Replace the VIF record with the same (server, port).
    UpdateVif(VifRecord),
    DeleteVif {
        server_id: ServerId,
        port_id: PortId,
    },
    InsertIntent(PortIntent),
    /// Replace an intent if it is still in `expected` state.
    UpdateIntent {
        intent: PortIntent,
        expected: IntentState,
    },
    /// Replace a server's cache if its generation is still `expected_generation`.
    /// Every change to a server's VIF records also advances that generation, so a
    /// cache built from records read before it cannot be written after it.
    WriteCache {
        server_id: ServerId,
        info: NetworkInfo,
        expected_generation: i64,
    },
    /// Records that heal found a server's cache right at `generation`; does
    /// nothing if the cache has moved past it (the record only spares a
    /// rebuild, so that is no conflict).
    RecordFoundRight {
        server_id: ServerId,
        generation: i64,
        found: FoundRight,
    },
    StartAction(Action),
    AddActionEvent {
        server_id: ServerId,
        request_id: String,
        event: ActionEvent,
    },
    /// Records a ghost sighting, unless the port is in some server's VIF records or
    /// the server it names has an operation in flight (its port may be mid-create).
    UpsertGhostSighting(GhostSighting),
    DeleteGhostSighting {
        port_id: PortId,
    },
    /// Starts an operation with a lease of `lease` on the database's clock; a
    /// conflict if the server already has one.
    InsertOperation {
        op: Operation,
        lease: chrono::TimeDelta,
    },
    /// Fences the batch of a writer outside operations (heal): it applies only
    /// while the server has no operation in flight.
    RequireIdle {
        server_id: ServerId,
    },
    /// Fences the batch: it applies only while `owner` still owns the operation;
    /// records the step reached.
    HoldOperation {
        server_id: ServerId,
        id: uuid::Uuid,
        owner: Owner,
        step: String,
    },
    /// Ends an operation its owner finished, unless a delete was queued on it
    /// (a conflict then: the owner replaces it by the delete).
    FinishOperation {
        server_id: ServerId,
        id: uuid::Uuid,
        owner: Owner,
    },
    /// Replaces a finished operation by the delete queued on it (same owner),
    /// with a fresh lease.
    ReplaceOperation {
        previous: uuid::Uuid,
        owner: Owner,
        next: Operation,
        lease: chrono::TimeDelta,
    },
    /// Records a failed attempt of an operation its owner still holds: the
    /// attempt count goes up by one and `error` is kept as the last error.
    RecordOperationFailure {
        server_id: ServerId,
        id: uuid::Uuid,
        owner: Owner,
        error: String,
    },
    /// Queues a delete on the server's operation in flight (the first one wins).
    QueueDelete {
        server_id: ServerId,
        id: uuid::Uuid,
        delete: QueuedDelete,
    },
    /// Takes an operation over from `previous_owner` (compare-and-swap), only
    /// while it is claimable on the database's clock: its lease ran out, or it
    /// is an earlier incarnation's of `owner`'s node. A lease renewed since it
    /// was read is never taken.
    ClaimOperation {
        server_id: ServerId,
        id: uuid::Uuid,
        previous_owner: Owner,
        owner: Owner,
        lease: chrono::TimeDelta,
    },
    /// A new key pair; a conflict if its user has one of that name.
    InsertKeyPair(KeyPair),
    /// Removes a user's key pair; not found if the user has none of that name.
    DeleteKeyPair {
        user_id: String,
        name: String,
    },
    /// Sets quota limits of a project (`user_id` none) or of a user in it,
    /// each in place of the one stored.
    SetQuotaLimits {
        project_id: ProjectId,
        user_id: Option<String>,
        limits: Vec<(Resource, i64)>,
    },
    /// Sets a quota class's values (Nova's `quota_classes`), each in place of
    /// the one stored; any class name is kept (only `default`'s are applied).
    SetQuotaClass {
        class_name: String,
        limits: Vec<(Resource, i64)>,
    },
    /// Removes a project's quota limits with its users' (`user_id` none), or one
    /// user's; none stored is not an error.
    DeleteQuotaLimits {
        project_id: ProjectId,
        user_id: Option<String>,
    },
    /// Fences the batch on the servers' quota: the store takes the project's
    /// quota lock, counts its live servers and applies the batch only if the
    /// claim fits (else [`crate::quota::Refusal`]). Placed before the servers it
    /// is for, so racing boots cannot both take the last unit.
    RequireServerQuota(ServerClaim),
    /// The same for one more key pair of a user, under the user's lock.
    RequireKeyPairQuota(KeyPairClaim),
    /// A new flavor, with its extra specs and projects; a conflict if a live
    /// flavor has its id or its name.
    InsertFlavor(Flavor),
    /// Deletes a live flavor (its row is kept, marked deleted at `at`: servers
    /// keep their own snapshot of it); not found if none has the id.
    DeleteFlavor {
        id: String,
        at: chrono::DateTime<chrono::Utc>,
    },
    /// A live flavor's description; not found if none has the id.
    SetFlavorDescription {
        id: String,
        description: Option<String>,
    },
    /// Gives a project access to a live flavor; not found if none has the id, a
    /// conflict if the project has it already.
    AddFlavorAccess {
        id: String,
        project_id: String,
    },
    /// Takes a project's access away; not found if it has none.
    RemoveFlavorAccess {
        id: String,
        project_id: String,
    },
    /// Sets extra specs of a live flavor, each in place of the one stored; not
    /// found if no live flavor has the id.
    SetFlavorExtraSpecs {
        id: String,
        specs: std::collections::BTreeMap<String, String>,
    },
    /// Removes one extra spec of a live flavor; not found if it has none of that key.
    DeleteFlavorExtraSpec {
        id: String,
        key: String,
    },
    /// A new server group (generation 0).
    InsertServerGroup(ServerGroup),
    /// Removes a server group with its members; not found if it is gone.
    DeleteServerGroup {
        id: uuid::Uuid,
    },
    /// The compare-and-swap of a group's placements: advances the group's
    /// generation if it is still `expected_generation` (a conflict if another
    /// member joined or was placed since it was read; not found if it is gone).
    /// In every batch that adds a member or gives one a host.
    AdvanceServerGroup {
        id: uuid::Uuid,
        expected_generation: i64,
    },
    /// A server joins a group (after [`Change::AdvanceServerGroup`] in its batch).
    InsertGroupMember {
        group_id: uuid::Uuid,
        server_id: crate::ServerId,
    },
    /// The same as the key pairs' for one more server group of a project.
    RequireServerGroupQuota(ServerGroupClaim),
}
