-- What a key pair holds (Nova's `type` from microversion 2.2): `ssh` (an
-- OpenSSH public key) or `x509` (a PEM certificate). Key pairs recorded
-- before this were all SSH ones.
ALTER TABLE keypairs ADD COLUMN key_type TEXT NOT NULL DEFAULT 'ssh';
