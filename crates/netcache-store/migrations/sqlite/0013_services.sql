-- Compute services as Nova's os-services shows them: one `nova-compute` row per
-- host a process runs, registered when it starts (insert if absent). Its
-- heartbeat, renewed every lease tick on the database's clock, sets
-- `alive_until` (up while it is ahead of the database's now) and `updated_at`;
-- an admin's changes (disabled, its reason, forced down) are compare-and-swaps
-- on `generation`, which heartbeats leave alone.
-- id: Nova's integer id (before 2.53); uuid its id from 2.53.
CREATE TABLE services (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    host TEXT NOT NULL,
    service_binary TEXT NOT NULL,
    disabled INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT,
    forced_down INTEGER NOT NULL DEFAULT 0,
    alive_until TEXT NOT NULL,
    updated_at TEXT,
    created_at TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    UNIQUE (host, service_binary)
) STRICT;

-- What os-hypervisors counts per host.
CREATE INDEX live_servers_by_host ON servers (host) WHERE vm_state <> 'deleted';
