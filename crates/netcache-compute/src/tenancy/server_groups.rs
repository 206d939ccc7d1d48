//! Nova's server groups: their create (with the `server_groups` quota, claimed
//! in the commit that records the group), list, show and delete; a boot's
//! joining of its group (the `server_group_members` quota); and where a member
//! may be placed.
//!
//! A member's placement is decided from one read of the group's members (on
//! every process's hosts: they share the store) and recorded with a
//! compare-and-swap on the group's generation (`Change::AdvanceServerGroup`)
//! in the batch that gives the server its host, so two placements decided from
//! the same read can never both be recorded: the loser reads again and decides
//! again. A host the policy requires that is not one of this process's (an
//! affinity group's members on another process's host) cannot be used here:
//! the build fails as Nova's `NoValidHost`, and so does a reschedule, which
//! decides the same way.

use std::collections::HashSet;

use async_trait::async_trait;
use netcache_domain::change::Change;
use netcache_domain::quota::{Quotas, ServerGroupClaim};
use netcache_domain::server::Server;
use netcache_domain::server_group::{GroupMember, GroupPolicy, ServerGroup, place};
use netcache_domain::{HostName, ProjectId, ServerId};
use uuid::Uuid;

use crate::hooks::HoldPoint;
use crate::{Compute, Error, RequestContext, Result};

/// Nova's reason when the filters leave no host.
pub(crate) const NOT_ENOUGH_HOSTS: &str = "There are not enough hosts available.";

/// What a new group is: its name and policy, with Nova's one rule.
#[derive(Clone, Debug)]
pub struct NewServerGroup {
    pub name: String,
    pub policy: GroupPolicy,
    pub max_server_per_host: Option<u32>,
}

/// A group with its live members.
#[derive(Clone, Debug)]
pub struct GroupView {
    pub group: ServerGroup,
    pub members: Vec<ServerId>,
}

/// A boot's group as read when the boot is accepted: its members' hosts and
/// the generation its placements are recorded at.
pub(crate) struct BootGroup {
    group: ServerGroup,
    hosts: Vec<HostName>,
    generation: i64,
}

/// Where a build's server goes now, and the swap its record carries.
pub(crate) enum Pick {
    /// The host's zone, the host, and the swap.
    Host(String, HostName, Vec<Change>),
    /// No untried host of this process is left.
    Exhausted,
    /// Its group's hard policy rules out every host left.
    Refused,
}

/// Nova's os-server-groups: groups of servers and their placement policies.
#[async_trait]
pub trait ServerGroupOps: Send + Sync {
    async fn create_server_group(&self, ctx: &RequestContext, new: NewServerGroup) -> Result<ServerGroup>;

    /// A group with its live members; Nova's 404 if there is none.
    async fn server_group(&self, id: Uuid) -> Result<GroupView>;

    /// Every group (an admin's `all_projects`) or a project's, oldest first.
    async fn server_groups(&self, project: Option<&ProjectId>) -> Result<Vec<GroupView>>;

    async fn delete_server_group(&self, id: Uuid) -> Result<()>;

    /// The groups a server is in (Nova's `server_groups` of a server, 2.71).
    async fn groups_of_server(&self, server: ServerId) -> Result<Vec<Uuid>>;
}

#[async_trait]
impl ServerGroupOps for Compute {
    async fn create_server_group(&self, ctx: &RequestContext, new: NewServerGroup) -> Result<ServerGroup> {
        let claim = ServerGroupClaim {
            project_id: ProjectId::from(ctx.project_id.as_str()),
            user_id: ctx.user_id.clone(),
            defaults: self.config.quota.clone(),
        };
        let limits = self.store.quota_limits(&claim.project_id).await?;
        let (project, own) = self.store.server_group_count(&claim.project_id, &ctx.user_id).await?;
        claim.judge(&limits, project, own).map_err(Error::OverQuota)?;
        let group = ServerGroup {
            id: Uuid::new_v4(),
            name: new.name,
            project_id: claim.project_id.clone(),
            user_id: ctx.user_id.clone(),
            policy: new.policy,
            max_server_per_host: new.max_server_per_host,
            created_at: self.clock.now(),
            generation: 0,
        };
        self.commit(vec![
            Change::RequireServerGroupQuota(claim),
            Change::InsertServerGroup(group.clone()),
        ])
        .await?;
        Ok(group)
    }

    async fn server_group(&self, id: Uuid) -> Result<GroupView> {
        let group = self
            .store
            .server_group(id)
            .await?
            .ok_or(Error::ServerGroupNotFound(id))?;
        let members = self.store.group_members(id).await?;
        Ok(GroupView {
            group,
            members: members.into_iter().map(|m| m.server_id).collect(),
        })
    }

    async fn server_groups(&self, project: Option<&ProjectId>) -> Result<Vec<GroupView>> {
        let groups = self.store.server_groups(project).await?;
        let mut members = self.store.members_of_groups(project).await?;
        Ok(groups
            .into_iter()
            .map(|group| GroupView {
                members: members
                    .remove(&group.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|m| m.server_id)
                    .collect(),
                group,
            })
            .collect())
    }

    async fn delete_server_group(&self, id: Uuid) -> Result<()> {
        match self.commit(vec![Change::DeleteServerGroup { id }]).await {
            Err(Error::Store(netcache_store::Error::NotFound(_))) => Err(Error::ServerGroupNotFound(id)),
            other => other,
        }
    }

    async fn groups_of_server(&self, server: ServerId) -> Result<Vec<Uuid>> {
        Ok(self.store.groups_of_server(server).await?)
    }
}

impl Compute {
    /// A boot's group, read fresh, with Nova's check of `count` more of the
    /// caller's servers in it; Nova's 400 for a group that does not exist.
    pub(crate) async fn boot_group(&self, ctx: &RequestContext, id: Uuid, count: u32) -> Result<BootGroup> {
        let group = self.store.server_group(id).await?.ok_or(Error::BootGroupNotFound(id))?;
        let members = self.store.group_members(id).await?;
        let limits = self
            .store
            .quota_limits(&ProjectId::from(ctx.project_id.as_str()))
            .await?;
        let own = members.iter().filter(|m| m.user_id == ctx.user_id).count();
        Quotas::of(&self.config.quota, &limits)
            .server_group_members(&ctx.user_id, own as i64, i64::from(count))
            .map_err(Error::OverQuota)?;
        Ok(BootGroup {
            generation: group.generation,
            hosts: member_hosts(&members, None),
            group,
        })
    }

    /// Places a new member of `group` (on no host if its policy refuses every
    /// one: its build then fails) and returns the changes that record its
    /// joining, after the server's insert in its batch.
    pub(crate) fn join_boot_group(
        &self,
        group: &mut BootGroup,
        server: &Server,
        unschedulable: &HashSet<HostName>,
    ) -> (Option<HostName>, Vec<Change>) {
        let host = place(&group.group, &group.hosts, &self.candidate_hosts(&[], unschedulable));
        let changes = vec![
            Change::AdvanceServerGroup {
                id: group.group.id,
                expected_generation: group.generation,
            },
            Change::InsertGroupMember {
                group_id: group.group.id,
                server_id: server.id,
            },
        ];
        group.generation += 1;
        group.hosts.extend(host.clone());
        (host, changes)
    }

    /// Where a build goes next: round-robin over this process's untried
    /// hosts, within its group's policy if it is in one, with the swap that
    /// records it (a test may hold a decision here, before its record).
    pub(crate) async fn pick_for_build(&self, server: &Server) -> Result<Pick> {
        let choice = self.host_choice(&server.attributes).await?;
        let candidates = self.candidate_hosts(&server.tried_hosts, &choice.excluded);
        let Some(first) = candidates.first().cloned() else {
            return Ok(Pick::Exhausted);
        };
        let Some(group_id) = self.store.groups_of_server(server.id).await?.first().copied() else {
            return Ok(Pick::Host(choice.zone_of(&first), first, Vec::new()));
        };
        let Some(group) = self.store.server_group(group_id).await? else {
            // Deleted since it joined: nothing left to honour.
            return Ok(Pick::Host(choice.zone_of(&first), first, Vec::new()));
        };
        let members = self.store.group_members(group_id).await?;
        let host = place(&group, &member_hosts(&members, Some(server.id)), &candidates);
        self.hold_point(HoldPoint::GroupMembersRead).await;
        Ok(match host {
            Some(host) => Pick::Host(
                choice.zone_of(&host),
                host,
                vec![Change::AdvanceServerGroup {
                    id: group.id,
                    expected_generation: group.generation,
                }],
            ),
            None => Pick::Refused,
        })
    }
}

/// The hosts of a group's members (but `except`), in the order they joined.
fn member_hosts(members: &[GroupMember], except: Option<ServerId>) -> Vec<HostName> {
    members
        .iter()
        .filter(|m| Some(m.server_id) != except)
        .filter_map(|m| m.host.clone())
        .collect()
}
