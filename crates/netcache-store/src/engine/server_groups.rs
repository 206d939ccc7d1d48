//! The engine's server-group statements: a group's rows, its members (live
//! servers only, in the order they joined), the placements' compare-and-swap
//! on the group's generation, and a new group's quota claim (judged like a key
//! pair's, under the project's lock).

use netcache_store_bounds::sql_bounds;
use std::collections::HashMap;

use netcache_domain::change::Change;
use netcache_domain::quota::ServerGroupClaim;
use netcache_domain::server_group::{GroupMember, ServerGroup};
use netcache_domain::{HostName, ProjectId, ServerId};
use uuid::Uuid;

use super::{Cols, Sql};
use crate::{Error, Result, sql};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    /// Applies one of the server-group changes.
    pub(super) async fn apply_group_change(conn: &mut DB::Connection, change: &Change) -> Result<()> {
        match change {
            Change::InsertServerGroup(group) => {
                let query = sqlx::query(sql::INSERT_SERVER_GROUP)
                    .bind(DB::uuid(group.id))
                    .bind(group.name.as_str())
                    .bind(group.project_id.as_str())
                    .bind(group.user_id.as_str())
                    .bind(group.policy.name())
                    .bind(group.max_server_per_host.map(i64::from))
                    .bind(DB::ts(group.created_at));
                Self::run(conn, query).await?;
            }
            Change::DeleteServerGroup { id } => {
                Self::run(conn, sqlx::query(sql::DELETE_GROUP_MEMBERS).bind(DB::uuid(*id))).await?;
                if Self::run(conn, sqlx::query(sql::DELETE_SERVER_GROUP).bind(DB::uuid(*id))).await? == 0 {
                    return Err(group_not_found(*id));
                }
            }
            Change::AdvanceServerGroup {
                id,
                expected_generation,
            } => {
                let query = sqlx::query(sql::ADVANCE_SERVER_GROUP)
                    .bind(DB::uuid(*id))
                    .bind(*expected_generation);
                if Self::run(conn, query).await? == 0 {
                    return Err(match Self::server_group(conn, *id).await? {
                        None => group_not_found(*id),
                        Some(_) => {
                            Error::GroupMoved(format!("server group {id} moved past generation {expected_generation}"))
                        }
                    });
                }
            }
            Change::InsertGroupMember { group_id, server_id } => {
                let query = sqlx::query(sql::INSERT_GROUP_MEMBER)
                    .bind(DB::uuid(*group_id))
                    .bind(DB::uuid(server_id.0));
                if Self::run(conn, query).await? == 0 {
                    return Err(group_not_found(*group_id));
                }
            }
            Change::RequireServerGroupQuota(claim) => Self::require_server_group_quota(conn, claim).await?,
            _ => unreachable!("not a server-group change: {change:?}"),
        }
        Ok(())
    }

    async fn require_server_group_quota(conn: &mut DB::Connection, claim: &ServerGroupClaim) -> Result<()> {
        Self::lock_quota(conn, claim.lock()).await?;
        let limits = Self::quota_limits(conn, &claim.project_id).await?;
        let (project, own) = Self::server_group_count(conn, &claim.project_id, &claim.user_id).await?;
        claim.judge(&limits, project, own).map_err(Error::OverQuota)
    }

    pub(super) async fn server_group(conn: &mut DB::Connection, id: Uuid) -> Result<Option<ServerGroup>> {
        let row = sqlx::query(sql::SELECT_SERVER_GROUP)
            .bind(DB::uuid(id))
            .fetch_optional(&mut *conn)
            .await?;
        row.as_ref().map(|r| Self::group_row(r)).transpose()
    }

    /// Every group, or a project's, oldest first.
    pub(super) async fn server_groups(
        conn: &mut DB::Connection,
        project: Option<&ProjectId>,
    ) -> Result<Vec<ServerGroup>> {
        let query = match project {
            Some(project) => sqlx::query(sql::SELECT_PROJECT_SERVER_GROUPS).bind(project.as_str()),
            None => sqlx::query(sql::SELECT_ALL_SERVER_GROUPS),
        };
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(|r| Self::group_row(r)).collect()
    }

    pub(super) async fn group_members(conn: &mut DB::Connection, group: Uuid) -> Result<Vec<GroupMember>> {
        let rows = sqlx::query(sql::SELECT_GROUP_MEMBERS)
            .bind(DB::uuid(group))
            .fetch_all(&mut *conn)
            .await?;
        rows.iter().map(|r| Ok(Self::member_row(r)?.1)).collect()
    }

    pub(super) async fn members_of_groups(
        conn: &mut DB::Connection,
        project: Option<&ProjectId>,
    ) -> Result<HashMap<Uuid, Vec<GroupMember>>> {
        let rows = sqlx::query(sql::SELECT_MEMBERS_OF_GROUPS)
            .bind(project.map(ProjectId::as_str))
            .fetch_all(&mut *conn)
            .await?;
        let mut members: HashMap<Uuid, Vec<GroupMember>> = HashMap::new();
        for row in &rows {
            let (group, member) = Self::member_row(row)?;
            members.entry(group).or_default().push(member);
        }
        Ok(members)
    }

    pub(super) async fn groups_of_server(conn: &mut DB::Connection, server: ServerId) -> Result<Vec<Uuid>> {
        let rows = sqlx::query(sql::SELECT_GROUPS_OF_SERVER)
            .bind(DB::uuid(server.0))
            .fetch_all(&mut *conn)
            .await?;
        rows.iter().map(|r| Cols::<DB>(r).uuid("group_id")).collect()
    }

    /// A project's groups, and the user's among them.
    pub(super) async fn server_group_count(
        conn: &mut DB::Connection,
        project: &ProjectId,
        user: &str,
    ) -> Result<(i64, i64)> {
        let row = sqlx::query(sql::COUNT_SERVER_GROUPS)
            .bind(project.as_str())
            .bind(user)
            .fetch_one(&mut *conn)
            .await?;
        let c = Cols::<DB>(&row);
        Ok((c.get("n")?, c.get("own")?))
    }

    fn group_row(row: &DB::Row) -> Result<ServerGroup> {
        let c = Cols::<DB>(row);
        let rule: Option<i64> = c.get("max_server_per_host")?;
        Ok(ServerGroup {
            id: c.uuid("id")?,
            name: c.get("name")?,
            project_id: ProjectId::from(c.get::<String>("project_id")?),
            user_id: c.get("user_id")?,
            policy: c.parse("policy")?,
            max_server_per_host: rule.map(|v| c.narrow("max_server_per_host", v)).transpose()?,
            created_at: c.ts("created_at")?,
            generation: c.get("generation")?,
        })
    }

    fn member_row(row: &DB::Row) -> Result<(Uuid, GroupMember)> {
        let c = Cols::<DB>(row);
        let host: Option<String> = c.get("host")?;
        Ok((
            c.uuid("group_id")?,
            GroupMember {
                server_id: ServerId(c.uuid("id")?),
                user_id: c.get("user_id")?,
                host: host.map(HostName::from),
            },
        ))
    }
}

fn group_not_found(id: Uuid) -> Error {
    Error::NotFound(format!("server group {id}"))
}
