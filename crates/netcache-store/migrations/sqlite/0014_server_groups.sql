-- Nova's server groups (os-server-groups). generation advances with every
-- member that joins or is placed on a host: the compare-and-swap that keeps two
-- racing placements of one group from both being recorded.
CREATE TABLE server_groups (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    project_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    policy TEXT NOT NULL,
    max_server_per_host INTEGER,
    created_at TEXT NOT NULL,
    generation INTEGER NOT NULL
) STRICT;
CREATE INDEX server_groups_by_project ON server_groups (project_id, created_at);

-- A group's servers; position: the group's generation when it joined (join order).
CREATE TABLE server_group_members (
    group_id TEXT NOT NULL REFERENCES server_groups (id) ON DELETE CASCADE,
    server_id TEXT NOT NULL REFERENCES servers (id),
    position INTEGER NOT NULL,
    PRIMARY KEY (group_id, server_id)
) STRICT;
CREATE INDEX server_group_members_by_server ON server_group_members (server_id);
