-- netcache's records, SQLite flavour (the PostgreSQL schema has the same tables,
-- columns and keys; only the column types differ).
--
-- Representations:
--   uuids       lowercase hyphenated TEXT
--   timestamps  UTC RFC 3339 TEXT with exactly six fractional digits
--               ('2026-01-02T03:04:05.123456Z'), so text order is time order
--   booleans    INTEGER 0/1
--   JSON        TEXT
-- Tables are STRICT: SQLite rejects a value of the wrong type instead of storing it.

-- This deployment's identity: one row, written on first open.
CREATE TABLE deployment (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    id TEXT NOT NULL
) STRICT;

CREATE TABLE servers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    project_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    host TEXT,
    availability_zone TEXT NOT NULL,
    vm_state TEXT NOT NULL,
    task_state TEXT,
    fault_code INTEGER,
    fault_message TEXT,
    fault_created TEXT,
    flavor_ref TEXT NOT NULL,
    image_ref TEXT NOT NULL,
    -- JSON object of strings.
    metadata TEXT NOT NULL,
    -- JSON: "auto", "none", or a list of {"kind": "network"|"port", ...}.
    requested_networks TEXT NOT NULL,
    -- JSON list of host names, in order.
    tried_hosts TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    launched_at TEXT,
    deleted_at TEXT,
    generation INTEGER NOT NULL,
    -- A fault is all three columns or none.
    CHECK ((fault_code IS NULL) = (fault_message IS NULL)
       AND (fault_code IS NULL) = (fault_created IS NULL))
) STRICT;
CREATE INDEX servers_by_age ON servers (created_at, id);
CREATE INDEX servers_by_project ON servers (project_id, created_at, id);

-- Authoritative membership of ports in servers. A port is in at most one server's
-- records (port_id is unique across servers).
CREATE TABLE vifs (
    server_id TEXT NOT NULL REFERENCES servers (id),
    port_id TEXT NOT NULL UNIQUE,
    position INTEGER NOT NULL,
    -- 'created' or 'preexisting' (the user's port: never deleted by netcache).
    origin TEXT NOT NULL,
    state TEXT NOT NULL,
    intent_id TEXT,
    network_id TEXT NOT NULL,
    requested_fixed_ip TEXT,
    tag TEXT,
    PRIMARY KEY (server_id, port_id)
) STRICT;
CREATE INDEX vifs_by_state ON vifs (state, server_id, position);

CREATE TABLE info_caches (
    server_id TEXT PRIMARY KEY REFERENCES servers (id),
    -- Nova's instance_info_caches.network_info JSON, key order kept.
    network_info TEXT NOT NULL,
    generation INTEGER NOT NULL
) STRICT;

CREATE TABLE port_intents (
    id TEXT PRIMARY KEY,
    server_id TEXT NOT NULL REFERENCES servers (id),
    attempt INTEGER NOT NULL,
    position INTEGER NOT NULL,
    host TEXT NOT NULL,
    network_id TEXT NOT NULL,
    fixed_ip TEXT,
    tag TEXT,
    state TEXT NOT NULL,
    port_id TEXT,
    adopted INTEGER NOT NULL,
    reason TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX port_intents_by_state ON port_intents (state, created_at, id);
CREATE INDEX port_intents_by_server ON port_intents (server_id, created_at, id);

CREATE TABLE ghost_sightings (
    port_id TEXT PRIMARY KEY,
    device_id TEXT NOT NULL,
    -- 'ours' (owner_intent_id: the intent named by the marker, if any) or 'foreign'.
    owner TEXT NOT NULL,
    owner_intent_id TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    times_seen INTEGER NOT NULL,
    revision_number INTEGER NOT NULL,
    CHECK (owner = 'ours' OR owner_intent_id IS NULL)
) STRICT;

-- seq: insertion order, the tie-break of actions with the same start_time.
CREATE TABLE actions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id TEXT NOT NULL REFERENCES servers (id),
    request_id TEXT NOT NULL,
    action TEXT NOT NULL,
    project_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    start_time TEXT NOT NULL,
    message TEXT,
    UNIQUE (server_id, request_id)
) STRICT;

-- id: insertion order, which is the order of an action's events.
CREATE TABLE action_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    event TEXT NOT NULL,
    start_time TEXT NOT NULL,
    finish_time TEXT,
    result TEXT,
    details TEXT,
    host TEXT,
    FOREIGN KEY (server_id, request_id) REFERENCES actions (server_id, request_id)
) STRICT;
CREATE INDEX action_events_by_action ON action_events (server_id, request_id, id);
