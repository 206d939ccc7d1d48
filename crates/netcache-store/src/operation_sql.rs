//! The statements of durable operations. Leases are taken, renewed and judged on
//! the database's clock ([`Dialect::NOW`](crate::dialect::Dialect::NOW)), never on a process's own: a process
//! whose clock is behind, stepped by NTP or suspended neither hands its live work
//! to a peer nor keeps work it no longer renews. A lease is bound as its length
//! in milliseconds and ends at the database's now plus that.
//!
//! `bind_operation` (engine/operations.rs) binds `$1` server id, `$2` id, then the
//! columns of [`OPERATION_COLUMNS`] in order, `$10` being the lease's length.

use std::sync::LazyLock;

pub(crate) const OPERATION_COLUMNS: &str = "server_id, id, kind, params, request_id, project_id, user_id, \
     owner_node, owner_incarnation, lease_until, step, then_delete, created_at, updated_at, attempts, last_error";

/// `$3`/`$4` the owner, `$5` the step, `$6` now: a fence on ownership.
pub(crate) const HOLD_OPERATION: &str = "UPDATE operations SET step = $5, updated_at = $6 \
     WHERE server_id = $1 AND id = $2 AND owner_node = $3 AND owner_incarnation = $4";

/// `$3`/`$4` the owner, `$5` the error, `$6` now.
pub(crate) const RECORD_FAILURE: &str = "UPDATE operations SET attempts = attempts + 1, last_error = $5, updated_at = $6 \
     WHERE server_id = $1 AND id = $2 AND owner_node = $3 AND owner_incarnation = $4";

/// Only while no delete is queued on it (the owner then replaces it).
pub(crate) const FINISH_OPERATION: &str = "DELETE FROM operations \
     WHERE server_id = $1 AND id = $2 AND owner_node = $3 AND owner_incarnation = $4 AND then_delete IS NULL";

pub(crate) const QUEUE_DELETE: &str =
    "UPDATE operations SET then_delete = $3 WHERE server_id = $1 AND id = $2 AND then_delete IS NULL";

pub(crate) static SELECT_OPERATION: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE server_id = $1"));
pub(crate) static SELECT_OPERATIONS: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {OPERATION_COLUMNS} FROM operations ORDER BY created_at, server_id"));

/// The statements that read or write a lease, for one backend's clock.
pub(crate) struct LeaseSql {
    /// The server's primary key makes a second operation on one server a conflict.
    pub(crate) insert: String,
    /// bind_operation, then `$17` the previous id; the owner must not change.
    pub(crate) replace: String,
    /// `$3`/`$4` the new owner, `$5` its lease, `$6`/`$7` the owner it takes over
    /// from. Re-checks in the same statement that the operation is claimable, so
    /// a lease renewed after it was read is never taken.
    pub(crate) claim: String,
    /// `$1`/`$2` the asking owner, `$3` how many: expired leases, and every
    /// operation of an earlier incarnation of the asker's node.
    pub(crate) claimable: String,
    /// `$1` the lease, `$2`/`$3` the owner; the servers' ids follow from `$4`.
    pub(crate) renew_head: String,
    pub(crate) now: String,
}

impl LeaseSql {
    /// On a backend whose clock reads `now` and whose `now_plus_millis(param)`
    /// is that clock plus the milliseconds bound to `param`.
    pub(crate) fn new(now: &str, now_plus_millis: fn(&str) -> String) -> Self {
        let lease = now_plus_millis;
        let claimable_by = |node: &str| format!("(lease_until <= {now} OR owner_node = {node})");
        Self {
            insert: format!(
                "INSERT INTO operations ({OPERATION_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {}, $11, $12, $13, $14, $15, $16)",
                lease("$10")
            ),
            replace: format!(
                "UPDATE operations SET id = $2, kind = $3, params = $4, request_id = $5, project_id = $6, \
                 user_id = $7, lease_until = {}, step = $11, then_delete = $12, created_at = $13, \
                 updated_at = $14, attempts = $15, last_error = $16 \
                 WHERE server_id = $1 AND id = $17 AND owner_node = $8 AND owner_incarnation = $9",
                lease("$10")
            ),
            claim: format!(
                "UPDATE operations SET owner_node = $3, owner_incarnation = $4, lease_until = {} \
                 WHERE server_id = $1 AND id = $2 AND owner_node = $6 AND owner_incarnation = $7 AND {}",
                lease("$5"),
                claimable_by("$3")
            ),
            claimable: format!(
                "SELECT {OPERATION_COLUMNS} FROM operations WHERE {} \
                 AND NOT (owner_node = $1 AND owner_incarnation = $2) ORDER BY created_at, server_id LIMIT $3",
                claimable_by("$1")
            ),
            renew_head: format!(
                "UPDATE operations SET lease_until = {} \
                 WHERE owner_node = $2 AND owner_incarnation = $3 AND server_id IN ",
                lease("$1")
            ),
            now: format!("SELECT {now} AS now"),
        }
    }
}
