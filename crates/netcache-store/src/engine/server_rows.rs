//! Decoding a server row: whole, and as heal and the audit read it (the
//! columns of a `WatchedServer`).

use netcache_domain::flavor::built_in_snapshot;
use netcache_domain::server::{Fault, Server, VmState, WatchedServer};
use netcache_domain::{HostName, ProjectId, ServerId};
use netcache_store_bounds::sql_bounds;

use super::{Cols, Sql};
use crate::{Result, json};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    pub(super) fn watched_server(row: &DB::Row) -> Result<WatchedServer> {
        let c = Cols::<DB>(row);
        Ok(WatchedServer {
            id: ServerId(c.uuid("id")?),
            name: c.get("name")?,
            project_id: ProjectId(c.get("project_id")?),
            created_at: c.ts("created_at")?,
            deleted: c.parse::<VmState>("vm_state")? == VmState::Deleted,
        })
    }

    pub(super) fn server(row: &DB::Row) -> Result<Server> {
        let c = Cols::<DB>(row);
        let fault = match c.get::<Option<i64>>("fault_code")? {
            None => None,
            Some(code) => Some(Fault {
                code: c.narrow("fault_code", code)?,
                message: c.get("fault_message")?,
                created: c.ts("fault_created")?,
            }),
        };
        let flavor_ref: String = c.get("flavor_ref")?;
        // A server recorded before servers kept their flavor booted a built-in one.
        let flavor = c
            .json_opt("flavor", json::flavor_from_json)?
            .or_else(|| built_in_snapshot(&flavor_ref));
        Ok(Server {
            id: ServerId(c.uuid("id")?),
            name: c.get("name")?,
            project_id: ProjectId(c.get("project_id")?),
            user_id: c.get("user_id")?,
            host: c.get::<Option<String>>("host")?.map(HostName),
            availability_zone: c.get("availability_zone")?,
            vm_state: c.parse("vm_state")?,
            task_state: c.parse_opt("task_state")?,
            fault,
            flavor_ref,
            flavor,
            image_ref: c.get("image_ref")?,
            metadata: c.json("metadata", json::metadata_from_json)?,
            access_ip_v4: c.parse_opt("access_ip_v4")?,
            access_ip_v6: c.parse_opt("access_ip_v6")?,
            requested_networks: c.json("requested_networks", json::requests_from_json)?,
            key_name: c.get("key_name")?,
            locked_by: c.parse_opt("locked_by")?,
            attributes: c.json("attributes", json::attributes_from_json)?,
            security_groups: c.json("security_groups", json::strings_from_json)?,
            tried_hosts: c.json("tried_hosts", json::hosts_from_json)?,
            created_at: c.ts("created_at")?,
            updated_at: c.ts("updated_at")?,
            launched_at: c.ts_opt("launched_at")?,
            deleted_at: c.ts_opt("deleted_at")?,
            generation: c.get("generation")?,
        })
    }
}
