-- Heal and audit watch live servers and those deleted within the ghost-watch
-- window: the window is found by this index, not by reading every deleted row.
CREATE INDEX servers_by_deleted_at ON servers (deleted_at);
