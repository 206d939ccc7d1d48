//! The statements of host aggregates (migration 0018): the rows, their hosts
//! and metadata, and the compare-and-swap of `aggregates_generation` every
//! write of an existing aggregate makes first.

pub(crate) const SELECT_GENERATION: &str = "SELECT generation FROM aggregates_generation";

pub(crate) const SELECT_AGGREGATES: &str = "SELECT id, uuid, name, created_at, updated_at FROM aggregates ORDER BY id";

pub(crate) const SELECT_HOSTS: &str = "SELECT aggregate_id, host FROM aggregate_hosts ORDER BY id";

pub(crate) const SELECT_METADATA: &str = "SELECT aggregate_id, meta_key, meta_value FROM aggregate_metadata";

/// `$1` the generation read: advances it, or touches no row if it moved on.
pub(crate) const ADVANCE_GENERATION: &str =
    "UPDATE aggregates_generation SET generation = generation + 1 WHERE generation = $1";

/// `$1` uuid, `$2` name, `$3` created at.
pub(crate) const INSERT_AGGREGATE: &str =
    "INSERT INTO aggregates (uuid, name, created_at) VALUES ($1, $2, $3) RETURNING id";

/// `$1` id, `$2` the new name or NULL (kept), `$3` updated at.
pub(crate) const UPDATE_AGGREGATE: &str =
    "UPDATE aggregates SET name = COALESCE($2, name), updated_at = $3 WHERE id = $1";

/// `$1` id, `$2` key, `$3` value.
pub(crate) const UPSERT_METADATA: &str = "INSERT INTO aggregate_metadata (aggregate_id, meta_key, meta_value) \
     VALUES ($1, $2, $3) ON CONFLICT (aggregate_id, meta_key) DO UPDATE SET meta_value = excluded.meta_value";

/// `$1` id, `$2` key.
pub(crate) const DELETE_METADATA: &str = "DELETE FROM aggregate_metadata WHERE aggregate_id = $1 AND meta_key = $2";

/// `$1` id, `$2` host.
pub(crate) const INSERT_HOST: &str = "INSERT INTO aggregate_hosts (aggregate_id, host) VALUES ($1, $2)";

/// `$1` id, `$2` host.
pub(crate) const DELETE_HOST: &str = "DELETE FROM aggregate_hosts WHERE aggregate_id = $1 AND host = $2";

/// `$1` id: its metadata (it has no hosts left when it is deleted).
pub(crate) const DELETE_ALL_METADATA: &str = "DELETE FROM aggregate_metadata WHERE aggregate_id = $1";

/// `$1` id.
pub(crate) const DELETE_AGGREGATE: &str = "DELETE FROM aggregates WHERE id = $1";
