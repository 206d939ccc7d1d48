-- Flavors an admin defines (Nova's flavors, flavor_extra_specs and
-- flavor_projects). `id` is Nova's flavorid; `seq` the row's own key, in
-- creation order; rxtx_factor is the number's text (a float
-- Nova keeps and shows, netcache never computes with). A deleted flavor keeps its row (deleted_at set): it is gone
-- from the API, and its id and name are free again, but the servers booted
-- with it keep their own snapshot of it (servers.flavor).
CREATE TABLE flavors (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    ram_mb INTEGER NOT NULL,
    vcpus INTEGER NOT NULL,
    disk_gb INTEGER NOT NULL,
    ephemeral_gb INTEGER NOT NULL,
    swap_mb INTEGER NOT NULL,
    rxtx_factor TEXT NOT NULL,
    is_public INTEGER NOT NULL,
    description TEXT,
    deleted_at TEXT
) STRICT;
CREATE UNIQUE INDEX live_flavors_by_id ON flavors (id) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX live_flavors_by_name ON flavors (name) WHERE deleted_at IS NULL;

CREATE TABLE flavor_extra_specs (
    flavor_seq INTEGER NOT NULL REFERENCES flavors (seq),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (flavor_seq, key)
) STRICT;

-- The projects given access to a private flavor.
CREATE TABLE flavor_projects (
    flavor_seq INTEGER NOT NULL REFERENCES flavors (seq),
    project_id TEXT NOT NULL,
    PRIMARY KEY (flavor_seq, project_id)
) STRICT;

-- The flavors of the fixed catalog before this migration (the domain's
-- flavor::BUILT_IN).
INSERT INTO flavors (id, name, ram_mb, vcpus, disk_gb, ephemeral_gb, swap_mb, rxtx_factor, is_public) VALUES
    ('1', 'm1.tiny', 512, 1, 1, 0, 0, '1.0', 1),
    ('2', 'm1.small', 2048, 1, 20, 0, 0, '1.0', 1),
    ('3', 'm1.medium', 4096, 2, 40, 0, 0, '1.0', 1),
    ('4', 'm1.large', 8192, 4, 80, 0, 0, '1.0', 1),
    ('5', 'm1.xlarge', 16384, 8, 160, 0, 0, '1.0', 1);

-- A server's flavor as it was at boot (JSON); its cores and RAM also as
-- columns, which the quota count sums. NULL: a server recorded before, whose
-- flavor is the built-in one of its flavor_ref.
ALTER TABLE servers ADD COLUMN flavor TEXT;
ALTER TABLE servers ADD COLUMN flavor_vcpus INTEGER;
ALTER TABLE servers ADD COLUMN flavor_ram_mb INTEGER;

-- The quota count's covering index, now with the snapshot's columns it reads.
DROP INDEX live_servers_by_owner;
CREATE INDEX live_servers_by_owner ON servers (project_id, user_id, flavor_ref, flavor_vcpus, flavor_ram_mb, vm_state)
    WHERE vm_state <> 'deleted';
