-- What an operator needs to see of a stuck operation without its owner's log:
-- how many attempts failed, and why the last one did.
ALTER TABLE operations ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN last_error TEXT;
