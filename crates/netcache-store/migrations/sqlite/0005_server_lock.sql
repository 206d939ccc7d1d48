-- Nova's server lock: who locked it ('owner' or 'admin'), NULL when unlocked.
-- A locked server refuses other users' lifecycle actions.
ALTER TABLE servers ADD COLUMN locked_by TEXT;
