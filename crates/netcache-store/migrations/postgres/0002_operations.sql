-- Durable operations (see netcache_domain::operation). The primary key is the
-- server: at most one operation per server at a time, whichever process runs it.
CREATE TABLE operations (
    server_id UUID PRIMARY KEY REFERENCES servers (id),
    id UUID NOT NULL UNIQUE,
    -- 'build', 'delete', 'attach', 'detach' or 'release' (also inside params).
    kind TEXT NOT NULL,
    -- JSON: what the operation needs to resume in any process.
    params TEXT NOT NULL,
    request_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    -- The owner: a node (stable across restarts) and its incarnation.
    owner_node TEXT NOT NULL,
    owner_incarnation TEXT NOT NULL,
    lease_until TIMESTAMPTZ NOT NULL,
    step TEXT NOT NULL,
    -- JSON: a delete asked for while this operation ran.
    then_delete TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX operations_by_lease ON operations (lease_until, created_at);
CREATE INDEX operations_by_owner ON operations (owner_node, owner_incarnation);

-- Deployment-wide singleton leases (e.g. one GC pass at a time across processes).
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    until TIMESTAMPTZ NOT NULL
);

-- JSON: the port's MAC, fixed IPs and status as last seen (os-interface's answer).
ALTER TABLE vifs ADD COLUMN details TEXT;
