//! The statements of compute services (`services`, migration 0013): heartbeats
//! on the database's clock, as leases are (`operation_sql.rs`), so whether a
//! host is up is never a process's clock's say; an admin's changes are
//! compare-and-swaps on `generation`.

pub(crate) const SERVICE_COLUMNS: &str =
    "id, uuid, host, service_binary, disabled, disabled_reason, forced_down, updated_at, generation";

/// `$1` the id.
pub(crate) const DELETE_SERVICE: &str = "DELETE FROM services WHERE id = $1";

/// The hosts the scheduler must not pick.
pub(crate) const UNSCHEDULABLE_HOSTS: &str = "SELECT host FROM services \
     WHERE service_binary = 'nova-compute' AND (disabled OR forced_down) ORDER BY host";

/// Live servers per host and flavor, on `live_servers_by_host`.
pub(crate) const COUNT_SERVERS_BY_HOST: &str = "SELECT host, project_id, flavor_ref, COUNT(*) AS n FROM servers \
     WHERE vm_state <> 'deleted' AND host IS NOT NULL GROUP BY host, project_id, flavor_ref \
     ORDER BY host, project_id, flavor_ref";

/// `$1` the host: its live servers, oldest first.
pub(crate) const SERVERS_ON_HOST: &str = "SELECT id, name FROM servers \
     WHERE vm_state <> 'deleted' AND host = $1 ORDER BY created_at, id";

/// The statements that read or write the database's clock, for one backend.
pub(crate) struct ServiceSql {
    /// `$1` uuid, `$2` host, `$3` binary, `$4` the heartbeat's length in ms:
    /// a row for a host that has none; a row already there is renewed.
    pub(crate) register: String,
    /// `$1` the heartbeat's length in ms, `$2` host, `$3` binary.
    pub(crate) heartbeat: String,
    /// Every service with `alive`: whether its heartbeat is ahead of now.
    pub(crate) select: String,
    /// `$1` disabled, `$2` its reason, `$3` forced down, `$4` the id, `$5` the generation read.
    pub(crate) update: String,
}

impl ServiceSql {
    /// On a backend's clock, as [`LeaseSql::new`](crate::operation_sql::LeaseSql::new).
    pub(crate) fn new(now: &str, now_plus_millis: fn(&str) -> String) -> Self {
        Self {
            register: format!(
                "INSERT INTO services (uuid, host, service_binary, alive_until, updated_at, created_at) \
                 VALUES ($1, $2, $3, {until}, {now}, {now}) ON CONFLICT (host, service_binary) \
                 DO UPDATE SET alive_until = excluded.alive_until, updated_at = excluded.updated_at",
                until = now_plus_millis("$4")
            ),
            heartbeat: format!(
                "UPDATE services SET alive_until = {}, updated_at = {now} WHERE host = $2 AND service_binary = $3",
                now_plus_millis("$1")
            ),
            select: format!("SELECT {SERVICE_COLUMNS}, (alive_until > {now}) AS alive FROM services ORDER BY id"),
            update: format!(
                "UPDATE services SET disabled = $1, disabled_reason = $2, forced_down = $3, \
                 generation = generation + 1, updated_at = {now} WHERE id = $4 AND generation = $5"
            ),
        }
    }
}
