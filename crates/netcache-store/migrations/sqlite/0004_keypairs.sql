-- SSH key pairs (Nova's os-keypairs), per user: a name is unique among one
-- user's key pairs. Only the public half is kept; a generated private key is
-- handed to the caller once and never stored.
-- id: Nova's integer id of a key pair (insertion order).
CREATE TABLE keypairs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    public_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (user_id, name)
) STRICT;

-- The key pair named at boot (its name only, as Nova keeps it).
ALTER TABLE servers ADD COLUMN key_name TEXT;
