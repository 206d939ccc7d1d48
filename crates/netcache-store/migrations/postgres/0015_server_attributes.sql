-- What only the compute API shows back of a server (description, tags, lock
-- reason, hostname, user data, …): one JSON document, read and written whole
-- with the row; no statement filters on it.
ALTER TABLE servers ADD COLUMN attributes TEXT NOT NULL DEFAULT '{}';
