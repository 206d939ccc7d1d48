-- Nova's server groups (os-server-groups). generation advances with every
-- member that joins or is placed on a host: the compare-and-swap that keeps two
-- racing placements of one group from both being recorded.
CREATE TABLE server_groups (
    id UUID PRIMARY KEY,
    name TEXT NOT NULL,
    project_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    policy TEXT NOT NULL,
    max_server_per_host BIGINT,
    created_at TIMESTAMPTZ NOT NULL,
    generation BIGINT NOT NULL
);
CREATE INDEX server_groups_by_project ON server_groups (project_id, created_at);

-- A group's servers; position: the group's generation when it joined (join order).
CREATE TABLE server_group_members (
    group_id UUID NOT NULL REFERENCES server_groups (id) ON DELETE CASCADE,
    server_id UUID NOT NULL REFERENCES servers (id),
    position BIGINT NOT NULL,
    PRIMARY KEY (group_id, server_id)
);
CREATE INDEX server_group_members_by_server ON server_group_members (server_id);
