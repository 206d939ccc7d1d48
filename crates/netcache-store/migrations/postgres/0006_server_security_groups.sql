-- JSON list of the security group ids a boot asked for, resolved when it was
-- accepted: every port netcache creates for the server is put in them ('[]':
-- Neutron's default).
ALTER TABLE servers ADD COLUMN security_groups TEXT NOT NULL DEFAULT '[]';
