//! Nova's security group proxies (`os-security-groups` and
//! `os-security-group-rules`, gone at 2.36): a project's groups and their
//! ingress rules made, read, renamed and deleted in Neutron, nothing kept
//! here, each caller held to the groups of their [`ProjectScope`]. Neutron's
//! refusals become Nova's answers (a group in use cannot be deleted: 400; a
//! create Neutron refuses as over its quota or named `default`: 403).

use async_trait::async_trait;
use netcache_domain::ProjectId;
use netcache_domain::neutron::{SecurityGroup, SecurityGroupRule};
use netcache_domain::security_group;
use netcache_domain::security_group_rule::{self, RuleRequest};
use netcache_neutron::SecurityGroupFilter;

use crate::{Compute, Error, ProjectScope, Result, SecurityGroupsInFull};

/// Nova's os-security-groups and os-security-group-rules, proxied to
/// Neutron.
#[async_trait]
pub trait SecurityGroupProxy: Send + Sync {
    /// A project's groups whole (Neutron makes its `default` first if it has
    /// none), or every project's; with the other groups their rules name.
    async fn project_security_groups(&self, project: Option<&ProjectId>) -> Result<SecurityGroupsInFull>;

    /// One group the caller may see, whole, with the groups its rules name.
    async fn security_group(&self, id: &str, scope: &ProjectScope) -> Result<SecurityGroupsInFull>;

    async fn create_security_group(&self, project: &ProjectId, name: &str, description: &str) -> Result<SecurityGroup>;

    async fn update_security_group(
        &self,
        id: &str,
        scope: &ProjectScope,
        name: &str,
        description: &str,
    ) -> Result<SecurityGroupsInFull>;

    async fn delete_security_group(&self, id: &str, scope: &ProjectScope) -> Result<()>;

    /// An ingress rule in `parent` as Nova makes one; with the group it lets
    /// traffic in from, if it names one.
    async fn create_security_group_rule(
        &self,
        parent: &str,
        scope: &ProjectScope,
        request: &RuleRequest,
    ) -> Result<(SecurityGroupRule, Option<SecurityGroup>)>;

    async fn delete_security_group_rule(&self, id: &str, scope: &ProjectScope) -> Result<()>;
}

#[async_trait]
impl SecurityGroupProxy for Compute {
    async fn project_security_groups(&self, project: Option<&ProjectId>) -> Result<SecurityGroupsInFull> {
        let filter = SecurityGroupFilter {
            project_id: project.cloned(),
            in_full: true,
            ..SecurityGroupFilter::default()
        };
        let groups = self.neutron.list_security_groups(&filter).await?;
        self.with_sources(groups).await
    }

    async fn security_group(&self, id: &str, scope: &ProjectScope) -> Result<SecurityGroupsInFull> {
        let group = self.visible_group(id, scope).await?;
        self.with_sources(vec![group]).await
    }

    async fn create_security_group(&self, project: &ProjectId, name: &str, description: &str) -> Result<SecurityGroup> {
        self.neutron
            .create_security_group(project, name, description)
            .await
            .map_err(|e| match e.status() {
                Some(400) => Error::SecurityGroupInvalid(neutron_message(e)),
                Some(409) => Error::SecurityGroupLimitExceeded(neutron_message(e)),
                _ => e.into(),
            })
    }

    async fn update_security_group(
        &self,
        id: &str,
        scope: &ProjectScope,
        name: &str,
        description: &str,
    ) -> Result<SecurityGroupsInFull> {
        self.visible_group(id, scope).await?;
        // Neutron answers the group whole: no second read of it.
        let updated = self.neutron.update_security_group(id, name, description).await?;
        self.group_names.remember(std::slice::from_ref(&updated));
        self.with_sources(vec![updated]).await
    }

    async fn delete_security_group(&self, id: &str, scope: &ProjectScope) -> Result<()> {
        let group = self.visible_group(id, scope).await?;
        // Neutron lets an admin alone delete a `default` group, and netcache
        // calls it as one: the caller's own rights decide.
        if group.name == security_group::DEFAULT && !scope.all_projects {
            return Err(Error::SecurityGroupInvalid(
                "Insufficient rights for removing default security group.".into(),
            ));
        }
        self.neutron
            .delete_security_group(id)
            .await
            .map_err(|e| match e.status() {
                Some(404) => Error::SecurityGroupMissing(id.to_owned()),
                // In use by a port, or the project's default.
                Some(409) => Error::SecurityGroupInvalid(neutron_message(e)),
                _ => e.into(),
            })
    }

    async fn create_security_group_rule(
        &self,
        parent: &str,
        scope: &ProjectScope,
        request: &RuleRequest,
    ) -> Result<(SecurityGroupRule, Option<SecurityGroup>)> {
        let parent = self.visible_group(parent, scope).await?;
        let source = match &request.group_id {
            Some(group) => Some(self.visible_group(group, scope).await?),
            None => None,
        };
        let rule = security_group_rule::ingress_rule(&parent, request).map_err(Error::SecurityGroupInvalid)?;
        let made = self
            .neutron
            .create_security_group_rule(&rule)
            .await
            .map_err(|e| match e.status() {
                Some(400) => Error::SecurityGroupInvalid(neutron_message(e)),
                Some(404) => Error::SecurityGroupMissing(parent.id.clone()),
                Some(409) => Error::SecurityGroupLimitExceeded(neutron_message(e)),
                _ => e.into(),
            })?;
        Ok((made, source))
    }

    async fn delete_security_group_rule(&self, id: &str, scope: &ProjectScope) -> Result<()> {
        let missing = || Error::SecurityGroupRuleMissing(id.to_owned());
        let rule = self
            .neutron
            .show_security_group_rule(id)
            .await
            .map_err(|e| if e.is_not_found() { missing() } else { e.into() })?;
        self.visible_group(&rule.security_group_id, scope)
            .await
            .map_err(|e| match e {
                Error::SecurityGroupMissing(_) => missing(),
                other => other,
            })?;
        self.neutron
            .delete_security_group_rule(id)
            .await
            .map_err(|e| if e.is_not_found() { missing() } else { e.into() })
    }
}

impl Compute {
    /// The group, whole, if the caller may see it; else Nova's 404.
    async fn visible_group(&self, id: &str, scope: &ProjectScope) -> Result<SecurityGroup> {
        let missing = || Error::SecurityGroupMissing(id.to_owned());
        match self.neutron.show_security_group(id).await {
            Ok(group) if scope.sees(&group.project_id) => Ok(group),
            Ok(_) => Err(missing()),
            Err(e) if e.is_not_found() => Err(missing()),
            Err(e) => Err(e.into()),
        }
    }

    /// `groups` with the groups their ingress rules name that they are not
    /// (one Neutron call, if any).
    pub(crate) async fn with_sources(&self, groups: Vec<SecurityGroup>) -> Result<SecurityGroupsInFull> {
        let others: Vec<String> = groups
            .iter()
            .flat_map(|g| g.rules.iter().filter(|r| r.ingress))
            .filter_map(|r| r.remote_group_id.clone())
            .filter(|id| !groups.iter().any(|g| g.id == *id))
            .collect();
        let remote = self.groups_by_id(&others, false).await?;
        Ok(SecurityGroupsInFull { groups, remote })
    }
}

/// Neutron's own words for a refusal.
pub(crate) fn neutron_message(e: netcache_neutron::Error) -> String {
    match e {
        netcache_neutron::Error::Rejected { message, .. } => message,
        other => other.to_string(),
    }
}
