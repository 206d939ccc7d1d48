-- Nova's host aggregates (os-aggregates): a name unique among them (so two
-- processes creating one name make one aggregate), hosts in the order they
-- were added, and metadata, whose `availability_zone` key puts the hosts in
-- that zone. Every write of an existing aggregate advances the one row of
-- `aggregates_generation` from the generation its decision read, so the zone
-- rules, which span aggregates, are judged on what is written.
CREATE TABLE aggregates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT
) STRICT;

CREATE TABLE aggregate_hosts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    aggregate_id INTEGER NOT NULL REFERENCES aggregates (id),
    host TEXT NOT NULL,
    UNIQUE (aggregate_id, host)
) STRICT;

CREATE TABLE aggregate_metadata (
    aggregate_id INTEGER NOT NULL REFERENCES aggregates (id),
    meta_key TEXT NOT NULL,
    meta_value TEXT NOT NULL,
    PRIMARY KEY (aggregate_id, meta_key)
) STRICT;

CREATE TABLE aggregates_generation (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    generation INTEGER NOT NULL
) STRICT;
INSERT INTO aggregates_generation (one, generation) VALUES (1, 0);
