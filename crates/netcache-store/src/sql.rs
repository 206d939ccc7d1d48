//! SQL text shared by both backends. `$N` placeholders work on SQLite and
//! PostgreSQL alike. Where a row is both inserted and updated, one `bind_*` helper
//! in `engine.rs` (named next to the statement) fixes the parameters' meaning, so
//! both share one bind order; the other statements bind in column order.
//!
//! Every precondition is part of a statement's `WHERE` clause (or a key), never
//! checked by reading first: several processes may share one database.

// ---- deployment ----

pub(crate) const INSERT_DEPLOYMENT: &str =
    "INSERT INTO deployment (singleton, id) VALUES (1, $1) ON CONFLICT (singleton) DO NOTHING";
pub(crate) const SELECT_DEPLOYMENT: &str = "SELECT id FROM deployment WHERE singleton = 1";

// ---- servers (bind_server: $1 id, $2 generation, $3.. the other columns) ----

macro_rules! server_columns {
    () => {
        "id, name, project_id, user_id, host, availability_zone, vm_state, task_state, fault_code, \
         fault_message, fault_created, flavor_ref, image_ref, metadata, requested_networks, tried_hosts, \
         created_at, updated_at, launched_at, deleted_at, access_ip_v4, access_ip_v6, generation, key_name, \
         locked_by, security_groups, flavor, flavor_vcpus, flavor_ram_mb, attributes"
    };
}

pub(crate) const INSERT_SERVER: &str = concat!(
    "INSERT INTO servers (",
    server_columns!(),
    ") VALUES ($1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $2, $24, $25, $26, $27, $28, $29, $30)"
);

/// Compare-and-swap on the generation the caller read.
pub(crate) const UPDATE_SERVER: &str = "UPDATE servers SET name = $3, project_id = $4, user_id = $5, \
     host = $6, availability_zone = $7, vm_state = $8, task_state = $9, fault_code = $10, \
     fault_message = $11, fault_created = $12, flavor_ref = $13, image_ref = $14, metadata = $15, \
     requested_networks = $16, tried_hosts = $17, created_at = $18, updated_at = $19, \
     launched_at = $20, deleted_at = $21, access_ip_v4 = $22, access_ip_v6 = $23, key_name = $24, locked_by = $25, \
     security_groups = $26, flavor = $27, flavor_vcpus = $28, flavor_ram_mb = $29, attributes = $30, \
     generation = generation + 1 \
     WHERE id = $1 AND generation = $2";

pub(crate) const INSERT_EMPTY_CACHE: &str =
    "INSERT INTO info_caches (server_id, network_info, generation) VALUES ($1, '[]', 0)";

// ---- vifs (bind_vif: $1 server_id, $2 port_id, $3.. the other columns) ----

macro_rules! vif_columns {
    () => {
        "server_id, port_id, position, origin, state, intent_id, network_id, requested_fixed_ip, tag, details"
    };
}

pub(crate) const INSERT_VIF: &str = concat!(
    "INSERT INTO vifs (",
    vif_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
);

pub(crate) const UPDATE_VIF: &str = "UPDATE vifs SET position = $3, origin = $4, state = $5, \
     intent_id = $6, network_id = $7, requested_fixed_ip = $8, tag = $9, details = $10 \
     WHERE server_id = $1 AND port_id = $2";

pub(crate) const DELETE_VIF: &str = "DELETE FROM vifs WHERE server_id = $1 AND port_id = $2";

/// Every change of a server's VIF records advances its cache generation, so a
/// cache computed from records read before the change fails its compare-and-swap.
pub(crate) const BUMP_CACHE_GENERATION: &str =
    "UPDATE info_caches SET generation = generation + 1 WHERE server_id = $1";

// ---- port intents (bind_intent: $1 id, $2.. the other columns; updates add $15) ----

macro_rules! intent_columns {
    () => {
        "id, server_id, attempt, position, host, network_id, fixed_ip, tag, state, port_id, adopted, \
         reason, created_at, updated_at"
    };
}

pub(crate) const INSERT_INTENT: &str = concat!(
    "INSERT INTO port_intents (",
    intent_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
);

/// Compare-and-swap on the state the caller read ($15).
pub(crate) const UPDATE_INTENT: &str = "UPDATE port_intents SET server_id = $2, attempt = $3, \
     position = $4, host = $5, network_id = $6, fixed_ip = $7, tag = $8, state = $9, port_id = $10, \
     adopted = $11, reason = $12, created_at = $13, updated_at = $14 \
     WHERE id = $1 AND state = $15";

// ---- caches ----

/// Compare-and-swap on the generation the caller read.
pub(crate) const WRITE_CACHE: &str = "UPDATE info_caches SET network_info = $3, generation = generation + 1 \
     WHERE server_id = $1 AND generation = $2";
/// At the generation heal found the cache right at, else nothing.
pub(crate) const RECORD_FOUND_RIGHT: &str = "UPDATE info_caches SET right_inputs = $3, right_text = $4, \
     right_generation = generation WHERE server_id = $1 AND generation = $2";

// ---- actions ($1 server_id, $2 request_id, then the action's or event's columns in order) ----

pub(crate) const INSERT_ACTION: &str = "INSERT INTO actions (server_id, request_id, action, project_id, \
     user_id, start_time, message) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Inserts nothing when the action does not exist.
pub(crate) const INSERT_ACTION_EVENT: &str = "INSERT INTO action_events (server_id, request_id, event, \
     start_time, finish_time, result, details, host) \
     SELECT server_id, request_id, $3, $4, $5, $6, $7, $8 FROM actions \
     WHERE server_id = $1 AND request_id = $2";

// ---- ghost sightings ($1.. the columns in order) ----

/// Not for a port in some server's VIF records, nor while the server the port
/// names has an operation in flight (its port may be between create and record).
pub(crate) const UPSERT_GHOST: &str = "INSERT INTO ghost_sightings (port_id, device_id, owner, \
     owner_intent_id, first_seen, last_seen, times_seen, revision_number) \
     SELECT $1, $2, $3, $4, $5, $6, $7, $8 \
     WHERE NOT EXISTS (SELECT 1 FROM vifs WHERE port_id = $1) \
     AND NOT EXISTS (SELECT 1 FROM operations WHERE CAST(server_id AS TEXT) = $2) \
     ON CONFLICT (port_id) DO UPDATE SET device_id = excluded.device_id, owner = excluded.owner, \
     owner_intent_id = excluded.owner_intent_id, first_seen = excluded.first_seen, \
     last_seen = excluded.last_seen, times_seen = excluded.times_seen, \
     revision_number = excluded.revision_number";

pub(crate) const DELETE_GHOST: &str = "DELETE FROM ghost_sightings WHERE port_id = $1";

// ---- fences ----

/// Touches the server row (a no-op) only while it has no operation: 0 rows is a conflict.
pub(crate) const REQUIRE_IDLE: &str = "UPDATE servers SET id = id \
     WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM operations WHERE server_id = $1)";

// ---- key pairs ($1 user_id, $2 name, then the other columns in order) ----

/// The key `(user_id, name)` makes a second key pair of one name a conflict.
pub(crate) const INSERT_KEYPAIR: &str = "INSERT INTO keypairs (user_id, name, public_key, fingerprint, created_at, key_type) VALUES ($1, $2, $3, $4, $5, $6)";

pub(crate) const DELETE_KEYPAIR: &str = "DELETE FROM keypairs WHERE user_id = $1 AND name = $2";

// ---- quotas ($1 project_id, $2 user_id: '' for the project's own limits) ----

/// `$3` resource, `$4` limit: in place of the one stored.
pub(crate) const UPSERT_QUOTA_LIMIT: &str = "INSERT INTO quota_limits (project_id, user_id, resource, hard_limit) \
     VALUES ($1, $2, $3, $4) \
     ON CONFLICT (project_id, user_id, resource) DO UPDATE SET hard_limit = excluded.hard_limit";

/// A project's limits with all its users'.
pub(crate) const DELETE_PROJECT_QUOTA_LIMITS: &str = "DELETE FROM quota_limits WHERE project_id = $1";

pub(crate) const DELETE_USER_QUOTA_LIMITS: &str = "DELETE FROM quota_limits WHERE project_id = $1 AND user_id = $2";

/// `$2` the `default` class: a project's limits with the class's values in one
/// read (`user_id` NULL), the class's first, then the project's, then by user.
pub(crate) const SELECT_QUOTA_LIMITS: &str = "SELECT user_id, resource, hard_limit FROM quota_limits \
     WHERE project_id = $1 \
     UNION ALL SELECT NULL, resource, hard_limit FROM quota_classes WHERE class_name = $2 \
     ORDER BY user_id NULLS FIRST, resource";

// ---- quota classes ($1 class_name) ----

/// `$2` resource, `$3` value: in place of the one stored.
pub(crate) const UPSERT_QUOTA_CLASS: &str = "INSERT INTO quota_classes (class_name, resource, hard_limit) \
     VALUES ($1, $2, $3) \
     ON CONFLICT (class_name, resource) DO UPDATE SET hard_limit = excluded.hard_limit";

pub(crate) const SELECT_QUOTA_CLASS: &str =
    "SELECT resource, hard_limit FROM quota_classes WHERE class_name = $1 ORDER BY resource";

/// `$1` the scope: takes (and on PostgreSQL holds until commit) its row lock.
pub(crate) const LOCK_QUOTA: &str =
    "INSERT INTO quota_locks (scope) VALUES ($1) ON CONFLICT (scope) DO UPDATE SET scope = excluded.scope";

/// `$1` project: its live servers per user and flavor.
/// Counted per flavor snapshot too (cores and RAM; NULL: a built-in flavor's).
pub(crate) const COUNT_SERVERS_FOR_QUOTA: &str = "SELECT user_id, flavor_ref, flavor_vcpus, flavor_ram_mb, \
     COUNT(*) AS n FROM servers WHERE project_id = $1 AND vm_state <> 'deleted' \
     GROUP BY user_id, flavor_ref, flavor_vcpus, flavor_ram_mb ORDER BY user_id, flavor_ref, flavor_vcpus, flavor_ram_mb";

/// `$1` user.
pub(crate) const COUNT_KEYPAIRS: &str = "SELECT COUNT(*) AS n FROM keypairs WHERE user_id = $1";

// ---- server groups ($1 the group's id unless said) ----

pub(crate) const INSERT_SERVER_GROUP: &str = "INSERT INTO server_groups \
     (id, name, project_id, user_id, policy, max_server_per_host, created_at, generation) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, 0)";

/// Its members first (they name it).
pub(crate) const DELETE_GROUP_MEMBERS: &str = "DELETE FROM server_group_members WHERE group_id = $1";
pub(crate) const DELETE_SERVER_GROUP: &str = "DELETE FROM server_groups WHERE id = $1";

/// `$2` the generation read: the placements' compare-and-swap.
pub(crate) const ADVANCE_SERVER_GROUP: &str =
    "UPDATE server_groups SET generation = generation + 1 WHERE id = $1 AND generation = $2";

/// `$2` server: its position is the group's generation, advanced in its batch.
pub(crate) const INSERT_GROUP_MEMBER: &str = "INSERT INTO server_group_members (group_id, server_id, position) \
     SELECT id, $2, generation FROM server_groups WHERE id = $1";

macro_rules! select_server_groups {
    ($where:literal) => {
        concat!(
            "SELECT id, name, project_id, user_id, policy, max_server_per_host, created_at, generation \
             FROM server_groups ",
            $where
        )
    };
}

pub(crate) const SELECT_SERVER_GROUP: &str = select_server_groups!("WHERE id = $1");
/// Oldest first, as Nova lists them (by its integer id).
pub(crate) const SELECT_ALL_SERVER_GROUPS: &str = select_server_groups!("ORDER BY created_at, id");
/// `$1` project.
pub(crate) const SELECT_PROJECT_SERVER_GROUPS: &str =
    select_server_groups!("WHERE project_id = $1 ORDER BY created_at, id");

/// Live members, in the order they joined; `$1` the group.
pub(crate) const SELECT_GROUP_MEMBERS: &str = "SELECT m.group_id, s.id, s.user_id, s.host \
     FROM server_group_members m JOIN servers s ON s.id = m.server_id \
     WHERE m.group_id = $1 AND s.vm_state <> 'deleted' ORDER BY m.position";

/// The live members of every group, or of a project's (`$1`, or NULL for all).
pub(crate) const SELECT_MEMBERS_OF_GROUPS: &str = "SELECT m.group_id, s.id, s.user_id, s.host \
     FROM server_group_members m JOIN servers s ON s.id = m.server_id \
     JOIN server_groups g ON g.id = m.group_id \
     WHERE ($1 IS NULL OR g.project_id = $1) AND s.vm_state <> 'deleted' ORDER BY m.position";

/// `$1` server: the groups it is in.
pub(crate) const SELECT_GROUPS_OF_SERVER: &str =
    "SELECT group_id FROM server_group_members WHERE server_id = $1 ORDER BY group_id";

/// `$1` project, `$2` user: the project's groups and the user's among them.
pub(crate) const COUNT_SERVER_GROUPS: &str = "SELECT COUNT(*) AS n, \
     COALESCE(SUM(CASE WHEN user_id = $2 THEN 1 ELSE 0 END), 0) AS own \
     FROM server_groups WHERE project_id = $1";

// ---- singleton leases ----

/// A backend's singleton-lease statements, judged on the database's clock
/// (`$1` name, `$2` owner, `$3` the lease's length in milliseconds): no
/// process's clock decides whether a lease ran out.
pub(crate) struct LeaseSql {
    /// Taken for `$3` when free, expired, or already `$2`'s (then extended).
    pub try_lease: &'static str,
    /// Extended by `$3` from now, only while `$2` holds it.
    pub renew_lease: &'static str,
}

/// Both statements from a backend's expressions of now and of now plus `$3`
/// milliseconds, in the type and form the `until` column keeps.
macro_rules! lease_sql {
    (now: $now:literal, expiry: $expiry:literal) => {
        $crate::sql::LeaseSql {
            try_lease: concat!(
                "INSERT INTO leases (name, owner, until) VALUES ($1, $2, ",
                $expiry,
                ") ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until \
                 WHERE leases.until <= ",
                $now,
                " OR leases.owner = excluded.owner"
            ),
            renew_lease: concat!("UPDATE leases SET until = ", $expiry, " WHERE name = $1 AND owner = $2"),
        }
    };
}
pub(crate) use lease_sql;

pub(crate) const RELEASE_LEASE: &str = "DELETE FROM leases WHERE name = $1 AND owner = $2";

/// `$1` a node, `$2` its live incarnation's owner label (`node/incarnation`):
/// the leases of its earlier incarnations.
pub(crate) const RELEASE_NODE_LEASES: &str =
    "DELETE FROM leases WHERE substr(owner, 1, length($1) + 1) = $1 || '/' AND owner <> $2";

// ---- reads ----

macro_rules! select_servers {
    ($tail:literal) => {
        concat!("SELECT ", server_columns!(), " FROM servers ", $tail)
    };
}

pub(crate) const SERVER_COLUMNS: &str = server_columns!();
pub(crate) const SELECT_SERVER: &str = select_servers!("WHERE id = $1");
/// `$1`: whether deleted servers are included.
pub(crate) const SELECT_SERVERS: &str = select_servers!("WHERE ($1 OR vm_state <> 'deleted') ORDER BY created_at, id");
/// `$1`: whether deleted servers are included; `$2`: the project.
pub(crate) const SELECT_PROJECT_SERVERS: &str =
    select_servers!("WHERE ($1 OR vm_state <> 'deleted') AND project_id = $2 ORDER BY created_at, id");
/// Newest first, for a page: `$1` whether deleted servers are included, then the
/// project (if any), then the last server of the previous page (time and id, if
/// any), then how many. Keyset paging on `servers_by_age` / `servers_by_project`:
/// the marker is a row value, which both databases seek the index to (the same
/// test as an `OR` of columns, which PostgreSQL only filters by, walking every
/// row before the marker).
pub(crate) const SELECT_SERVERS_NEWEST: &str =
    select_servers!("WHERE ($1 OR vm_state <> 'deleted') ORDER BY created_at DESC, id DESC LIMIT $2");
pub(crate) const SELECT_SERVERS_NEWEST_AFTER: &str = select_servers!(
    "WHERE ($1 OR vm_state <> 'deleted') AND (created_at, id) < ($2, $3) \
     ORDER BY created_at DESC, id DESC LIMIT $4"
);
pub(crate) const SELECT_PROJECT_SERVERS_NEWEST: &str = select_servers!(
    "WHERE ($1 OR vm_state <> 'deleted') AND project_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3"
);
pub(crate) const SELECT_PROJECT_SERVERS_NEWEST_AFTER: &str = select_servers!(
    "WHERE ($1 OR vm_state <> 'deleted') AND project_id = $2 AND (created_at, id) < ($3, $4) \
     ORDER BY created_at DESC, id DESC LIMIT $5"
);
/// A `WatchedServer`'s columns of the live servers, and of those deleted after
/// `$1` (`servers_by_deleted_at`): every one if `$2`, else only those with a
/// create still unsettled, an intent pending or abandoned (`port_intents_by_server`).
macro_rules! watched {
    ($tail:literal) => {
        concat!(
            "SELECT id, name, project_id, created_at, vm_state FROM servers \
             WHERE (vm_state <> 'deleted' OR (deleted_at > $1 AND ($2 OR EXISTS (SELECT 1 \
             FROM port_intents i WHERE i.server_id = servers.id AND i.state IN ('pending', 'abandoned'))))) ",
            $tail
        )
    };
}

/// In id order, for a page: `$1` and `$2` choose the deleted servers
/// (`watched!`), `$3` is the first id of the range (or, after a page, the last
/// id of that page) and `$4` its last, then how many. Keyset paging on the
/// primary key, so a heal shard's page reads that shard's rows only.
pub(crate) const SELECT_WATCHED_SERVERS: &str = watched!("AND id >= $3 AND id <= $4 ORDER BY id LIMIT $5");
pub(crate) const SELECT_WATCHED_SERVERS_AFTER: &str = watched!("AND id > $3 AND id <= $4 ORDER BY id LIMIT $5");

macro_rules! select_vifs {
    ($tail:literal) => {
        concat!("SELECT ", vif_columns!(), " FROM vifs ", $tail)
    };
}

pub(crate) const SELECT_SERVER_VIFS: &str = select_vifs!("WHERE server_id = $1 ORDER BY position, port_id");
pub(crate) const SELECT_VIF_BY_PORT: &str = select_vifs!("WHERE port_id = $1");
/// `$1`: the state.
pub(crate) const SELECT_VIFS_IN_STATE: &str = select_vifs!("WHERE state = $1 ORDER BY server_id, position, port_id");
/// VIF records (in any state) of deleted servers: nothing should be left there.
pub(crate) const SELECT_VIFS_OF_DELETED_SERVERS: &str = select_vifs!(
    "WHERE server_id IN (SELECT id FROM servers WHERE vm_state = 'deleted') ORDER BY server_id, position, port_id"
);

pub(crate) const SELECT_CACHE: &str = "SELECT network_info, generation FROM info_caches WHERE server_id = $1";

// ---- sets of servers: the text before and after an `IN ($1, …, $n)` list ----

pub(crate) const SELECT_VIFS_OF_SERVERS: (&str, &str) = (
    select_vifs!("WHERE server_id IN "),
    " ORDER BY server_id, position, port_id",
);
pub(crate) const SELECT_CACHES_OF_SERVERS: (&str, &str) = (
    "SELECT server_id, network_info, generation FROM info_caches WHERE server_id IN ",
    "",
);
/// What heal found of a cache stands only at the generation it found it at.
pub(crate) const SELECT_LIVE_CACHE_GENERATIONS: &str = "SELECT c.server_id, c.generation, \
     CASE WHEN c.right_generation = c.generation THEN c.right_inputs END AS right_inputs, \
     CASE WHEN c.right_generation = c.generation THEN c.right_text END AS right_text \
     FROM info_caches c JOIN servers s ON s.id = c.server_id WHERE s.vm_state <> 'deleted'";

macro_rules! select_intents {
    ($tail:literal) => {
        concat!("SELECT ", intent_columns!(), " FROM port_intents ", $tail)
    };
}

pub(crate) const SELECT_INTENT: &str = select_intents!("WHERE id = $1");
pub(crate) const SELECT_SERVER_INTENTS: &str = select_intents!("WHERE server_id = $1 ORDER BY created_at, id");
/// `$1`: the state.
pub(crate) const COUNT_INTENTS_BY_STATE: &str =
    "SELECT state, COUNT(*) AS n FROM port_intents GROUP BY state ORDER BY state";

pub(crate) const SELECT_INTENTS_IN_STATE: &str = select_intents!("WHERE state = $1 ORDER BY created_at, id");

/// A server's actions, newest first, each followed by its events in order (one row
/// per event; an action without events has one row with NULL event columns).
pub(crate) const SELECT_ACTIONS: &str = "SELECT a.seq, a.request_id, a.action, a.project_id, a.user_id, \
     a.start_time, a.message, e.event, e.start_time AS event_start_time, e.finish_time, e.result, \
     e.details, e.host \
     FROM actions a LEFT JOIN action_events e \
     ON e.server_id = a.server_id AND e.request_id = a.request_id \
     WHERE a.server_id = $1 \
     ORDER BY a.start_time DESC, a.seq DESC, e.id";

macro_rules! select_ghosts {
    ($tail:literal) => {
        concat!(
            "SELECT port_id, device_id, owner, owner_intent_id, first_seen, last_seen, times_seen, \
             revision_number FROM ghost_sightings ",
            $tail
        )
    };
}

pub(crate) const SELECT_GHOSTS: &str = select_ghosts!("ORDER BY first_seen, port_id");
pub(crate) const SELECT_GHOST: &str = select_ghosts!("WHERE port_id = $1");

macro_rules! select_keypairs {
    ($tail:literal) => {
        concat!(
            "SELECT id, user_id, name, public_key, fingerprint, created_at, key_type FROM keypairs ",
            $tail
        )
    };
}

pub(crate) const SELECT_KEYPAIRS: &str = select_keypairs!("WHERE user_id = $1 ORDER BY name, id");
pub(crate) const SELECT_KEYPAIR: &str = select_keypairs!("WHERE user_id = $1 AND name = $2");

// ---- flavors: only live ones (deleted_at NULL) are named by id ----

pub(crate) const INSERT_FLAVOR: &str = "INSERT INTO flavors (id, name, ram_mb, vcpus, disk_gb, ephemeral_gb, \
     swap_mb, rxtx_factor, is_public, description) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// `$1` flavor id, `$2` when.
pub(crate) const DELETE_FLAVOR: &str = "UPDATE flavors SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL";

/// `$1` flavor id, `$2` description.
pub(crate) const SET_FLAVOR_DESCRIPTION: &str =
    "UPDATE flavors SET description = $2 WHERE id = $1 AND deleted_at IS NULL";

/// `$1` flavor id, `$2` project.
pub(crate) const INSERT_FLAVOR_PROJECT: &str = "INSERT INTO flavor_projects (flavor_seq, project_id) \
     SELECT seq, $2 FROM flavors WHERE id = $1 AND deleted_at IS NULL";

/// `$1` flavor id, `$2` project.
pub(crate) const DELETE_FLAVOR_PROJECT: &str = "DELETE FROM flavor_projects WHERE project_id = $2 \
     AND flavor_seq = (SELECT seq FROM flavors WHERE id = $1 AND deleted_at IS NULL)";

/// `$1` flavor id, `$2` key, `$3` value.
pub(crate) const UPSERT_FLAVOR_EXTRA_SPEC: &str = "INSERT INTO flavor_extra_specs (flavor_seq, key, value) \
     SELECT seq, $2, $3 FROM flavors WHERE id = $1 AND deleted_at IS NULL \
     ON CONFLICT (flavor_seq, key) DO UPDATE SET value = excluded.value";

/// `$1` flavor id, `$2` key.
pub(crate) const DELETE_FLAVOR_EXTRA_SPEC: &str = "DELETE FROM flavor_extra_specs WHERE key = $2 \
     AND flavor_seq = (SELECT seq FROM flavors WHERE id = $1 AND deleted_at IS NULL)";

macro_rules! live_flavors {
    ($and:literal) => {
        concat!(
            "SELECT id, name, ram_mb, vcpus, disk_gb, ephemeral_gb, swap_mb, rxtx_factor, is_public, description \
             FROM flavors WHERE deleted_at IS NULL ",
            $and,
            " ORDER BY seq"
        )
    };
}

macro_rules! live_flavor_rows {
    ($table:literal, $columns:literal, $and:literal) => {
        concat!(
            "SELECT f.id AS flavor_id, ",
            $columns,
            " FROM ",
            $table,
            " t JOIN flavors f ON f.seq = t.flavor_seq WHERE f.deleted_at IS NULL ",
            $and
        )
    };
}

/// Live flavors in creation order.
pub(crate) const SELECT_FLAVORS: &str = live_flavors!("");
/// `$1` flavor id.
pub(crate) const SELECT_FLAVOR: &str = live_flavors!("AND id = $1");
pub(crate) const SELECT_FLAVORS_EXTRA_SPECS: &str = live_flavor_rows!("flavor_extra_specs", "t.key, t.value", "");
/// `$1` flavor id.
pub(crate) const SELECT_FLAVOR_EXTRA_SPECS: &str =
    live_flavor_rows!("flavor_extra_specs", "t.key, t.value", "AND f.id = $1");
pub(crate) const SELECT_FLAVORS_PROJECTS: &str = live_flavor_rows!("flavor_projects", "t.project_id", "");
/// `$1` flavor id.
pub(crate) const SELECT_FLAVOR_PROJECTS: &str = live_flavor_rows!("flavor_projects", "t.project_id", "AND f.id = $1");

// ---- retention: deleted servers that no VIF record or operation names ----

macro_rules! unneeded {
    () => {
        "vm_state = 'deleted' \
         AND NOT EXISTS (SELECT 1 FROM vifs v WHERE v.server_id = servers.id) \
         AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.server_id = servers.id)"
    };
}

macro_rules! purgeable {
    () => {
        concat!(unneeded!(), " AND deleted_at < $1")
    };
}

/// `$1`: deleted before; `$2`: how many.
pub(crate) const SELECT_PURGEABLE_SERVERS: &str = concat!(
    "SELECT id FROM servers WHERE ",
    purgeable!(),
    " ORDER BY deleted_at, id LIMIT $2"
);
/// `$1`: deleted before.
pub(crate) const COUNT_PURGEABLE: &str = concat!(
    "SELECT (SELECT COUNT(*) FROM servers WHERE ",
    purgeable!(),
    ") AS servers, (SELECT COUNT(*) FROM port_intents WHERE server_id IN (SELECT id FROM servers WHERE ",
    purgeable!(),
    ")) AS intents, (SELECT COUNT(*) FROM actions WHERE server_id IN (SELECT id FROM servers WHERE ",
    purgeable!(),
    ")) AS actions, (SELECT COUNT(*) FROM action_events WHERE server_id IN (SELECT id FROM servers WHERE ",
    purgeable!(),
    ")) AS events"
);

macro_rules! purge_rows_of {
    ($table:literal) => {
        (
            concat!(
                "DELETE FROM ",
                $table,
                " WHERE server_id IN (SELECT id FROM servers WHERE ",
                unneeded!(),
                " AND id IN "
            ),
            ")",
        )
    };
}

/// Around an `IN (…)` list of servers, children first; each re-checks that its
/// servers are still deleted and unneeded.
pub(crate) const PURGE_EVENTS: (&str, &str) = purge_rows_of!("action_events");
pub(crate) const PURGE_ACTIONS: (&str, &str) = purge_rows_of!("actions");
pub(crate) const PURGE_INTENTS: (&str, &str) = purge_rows_of!("port_intents");
pub(crate) const PURGE_CACHES: (&str, &str) = purge_rows_of!("info_caches");
pub(crate) const PURGE_GROUP_MEMBERS: (&str, &str) = purge_rows_of!("server_group_members");
pub(crate) const PURGE_SERVERS: (&str, &str) = (concat!("DELETE FROM servers WHERE ", unneeded!(), " AND id IN "), "");
