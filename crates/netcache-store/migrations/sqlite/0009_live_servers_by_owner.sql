-- Quota usage counts a project's live servers per user and flavor: this index
-- holds every column the count reads (vm_state too, so SQLite need not visit
-- the rows), in the count's order, so the count never sorts.
CREATE INDEX live_servers_by_owner ON servers (project_id, user_id, flavor_ref, vm_state) WHERE vm_state <> 'deleted';
