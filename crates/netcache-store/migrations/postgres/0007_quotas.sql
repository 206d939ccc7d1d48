-- Nova's quota limits an admin set (os-quota-sets): a project's own
-- (user_id '') and its users' within it (Nova's quotas and project_user_quotas).
-- A resource without a row has the deployment's default; usage is never
-- stored, it is counted from servers and key pairs.
CREATE TABLE quota_limits (
    project_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    resource TEXT NOT NULL,
    hard_limit BIGINT NOT NULL,
    PRIMARY KEY (project_id, user_id, resource)
);

-- One row per quota scope ('servers:<project>', 'key_pairs:<user>'), written
-- by every batch that claims quota before it counts: on PostgreSQL the row lock
-- makes racing claims count one after the other (SQLite's write lock already does).
CREATE TABLE quota_locks (
    scope TEXT PRIMARY KEY
);
