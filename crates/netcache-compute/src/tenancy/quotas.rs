//! Nova's quotas in the compute service: the limits in force (the deployment's
//! defaults, under the `default` quota class's values, under a project's own
//! limits and its users'), an admin's changes with Nova's checks, the quota
//! classes, and the claims of what counts against them.
//!
//! The defaults are read from the store with each project's limits, in the
//! same statement (and inside a claim's transaction, with them): an admin's
//! change of the `default` class holds for every process sharing the database
//! from its commit on, with no cache to go stale and no read of its own.
//!
//! A claim (a boot's servers, a key pair) is judged twice. Here first, from a
//! fresh read: that picks how many servers of a `min_count`..`max_count` boot
//! fit and gives Nova's refusal with its numbers. Then by the store, inside the
//! very transaction that records the servers or the key pair, after taking the
//! quota's lock (`Change::RequireServerQuota`, `RequireKeyPairQuota`). Nova
//! instead counts again after recording (`recheck_quota`) and deletes what went
//! over; here two boots racing for the last unit cannot both be recorded, so
//! nothing is ever undone, and the loser counts again.

use async_trait::async_trait;
use netcache_domain::ProjectId;
use netcache_domain::change::Change;
use netcache_domain::flavor::FlavorSnapshot;
use netcache_domain::quota::{
    Cost, DEFAULT_CLASS, InjectedFile, KeyPairClaim, QuotaSet, Quotas, Resource, ServerClaim, Usage,
};

use crate::{Compute, Error, RequestContext, Result};

/// The limits in force for a project (or a user in it) and what is in use there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaUsage {
    pub limits: QuotaSet,
    pub usage: Usage,
}

/// Nova's os-quota-sets and os-quota-class-sets: the limits of projects,
/// users and classes, and what they use.
#[async_trait]
pub trait QuotaOps: Send + Sync {
    /// The default limits of projects and users (Nova's `get_defaults`): the
    /// `default` quota class's.
    async fn default_quotas(&self) -> Result<QuotaSet>;

    /// A quota class's values (Nova's `get_class_quotas`): those an admin set,
    /// the deployment's defaults for the rest (all of a class never set).
    async fn quota_class(&self, class_name: &str) -> Result<QuotaSet>;

    /// An admin's new values of a quota class (any name: only `default`'s
    /// apply, to every project and user without limits of their own); answers
    /// the class's values afterwards.
    async fn set_quota_class(&self, class_name: &str, limits: Vec<(Resource, i64)>) -> Result<QuotaSet>;

    /// The limits in force for a project, or for a user in it, with the usage
    /// of the project (or of the user's servers in it).
    async fn quota_usage(&self, project: &ProjectId, user: Option<&str>) -> Result<QuotaUsage>;

    /// An admin's new limits for a project or a user in it; answers the limits
    /// in force afterwards. Unless `force`d each must be at least what is in
    /// use (and for a user at most what the project's limit leaves), as Nova
    /// checks them; one that is not sets none.
    async fn set_quotas(
        &self,
        project: &ProjectId,
        user: Option<&str>,
        limits: Vec<(Resource, i64)>,
        force: bool,
    ) -> Result<QuotaSet>;

    /// Back to the defaults: a project's limits with its users', or one user's.
    async fn delete_quotas(&self, project: &ProjectId, user: Option<&str>) -> Result<()>;
}

#[async_trait]
impl QuotaOps for Compute {
    async fn default_quotas(&self) -> Result<QuotaSet> {
        self.quota_class(DEFAULT_CLASS).await
    }

    async fn quota_class(&self, class_name: &str) -> Result<QuotaSet> {
        let values = self.store.quota_class(class_name).await?;
        Ok(self.config.quota.clone().with_values(&values))
    }

    async fn set_quota_class(&self, class_name: &str, limits: Vec<(Resource, i64)>) -> Result<QuotaSet> {
        self.commit(vec![Change::SetQuotaClass {
            class_name: class_name.to_owned(),
            limits,
        }])
        .await?;
        self.quota_class(class_name).await
    }

    async fn quota_usage(&self, project: &ProjectId, user: Option<&str>) -> Result<QuotaUsage> {
        let limits = self.store.quota_limits(project).await?;
        let quotas = Quotas::of(&self.config.quota, &limits);
        Ok(QuotaUsage {
            limits: user.map_or_else(|| quotas.project(), |user| quotas.user(user)),
            usage: self.usage(project, user).await?,
        })
    }

    async fn set_quotas(
        &self,
        project: &ProjectId,
        user: Option<&str>,
        limits: Vec<(Resource, i64)>,
        force: bool,
    ) -> Result<QuotaSet> {
        if !force {
            let stored = self.store.quota_limits(project).await?;
            let usage = self.usage(project, user).await?;
            let quotas = Quotas::of(&self.config.quota, &stored);
            for (resource, limit) in &limits {
                quotas
                    .check_new_limit(user, &usage, *resource, *limit)
                    .map_err(Error::BadQuotaLimit)?;
            }
        }
        self.commit(vec![Change::SetQuotaLimits {
            project_id: project.clone(),
            user_id: user.map(str::to_owned),
            limits,
        }])
        .await?;
        Ok(self.quota_usage(project, user).await?.limits)
    }

    async fn delete_quotas(&self, project: &ProjectId, user: Option<&str>) -> Result<()> {
        self.commit(vec![Change::DeleteQuotaLimits {
            project_id: project.clone(),
            user_id: user.map(str::to_owned),
        }])
        .await
    }
}

impl Compute {
    /// What a project (or a user in it) uses: its servers and server groups.
    async fn usage(&self, project: &ProjectId, user: Option<&str>) -> Result<Usage> {
        let servers = self.store.server_counts(project).await?;
        let (groups, own) = self.store.server_group_count(project, user.unwrap_or_default()).await?;
        Ok(Usage {
            server_groups: if user.is_some() { own } else { groups },
            ..Usage::of_servers(&servers, user)
        })
    }

    /// Nova's check of a boot of `min` to `max` servers of a flavor by the
    /// caller: how many fit, and the claim the batch recording them carries.
    pub(crate) async fn claim_servers(
        &self,
        ctx: &RequestContext,
        flavor: &FlavorSnapshot,
        min: u32,
        max: u32,
    ) -> Result<(u32, Change)> {
        let project = ProjectId::from(ctx.project_id.as_str());
        let limits = self.store.quota_limits(&project).await?;
        let quotas = Quotas::of(&self.config.quota, &limits);
        // Unlimited, the project's servers need not be counted (nor read).
        let servers = if quotas.limits_servers(&ctx.user_id) {
            self.store.server_counts(&project).await?
        } else {
            Vec::new()
        };
        let usage = (
            &Usage::of_servers(&servers, None),
            &Usage::of_servers(&servers, Some(&ctx.user_id)),
        );
        let cost = Cost::of(flavor);
        let count = quotas
            .servers(&ctx.user_id, usage, cost, min, max)
            .map_err(Error::OverQuota)?;
        let claim = ServerClaim {
            project_id: project,
            user_id: ctx.user_id.clone(),
            defaults: self.config.quota.clone(),
            count,
            cost,
        };
        Ok((count, Change::RequireServerQuota(claim)))
    }

    /// Nova's check of one more key pair of the caller, and the claim the batch
    /// recording it carries.
    pub(crate) async fn claim_keypair(&self, ctx: &RequestContext, user_id: &str) -> Result<Change> {
        let claim = KeyPairClaim {
            project_id: ProjectId::from(ctx.project_id.as_str()),
            user_id: user_id.to_owned(),
            defaults: self.config.quota.clone(),
        };
        let limits = self.store.quota_limits(&claim.project_id).await?;
        let key_pairs = self.store.keypair_count(user_id).await?;
        claim.judge(&limits, key_pairs).map_err(Error::OverQuota)?;
        Ok(Change::RequireKeyPairQuota(claim))
    }

    /// Nova's checks of a request's metadata item count (`MetadataLimitExceeded`)
    /// and then of its personality files (`_check_injected_file_quota`: their
    /// count, longest path and longest contents), against the caller's
    /// project's limits and the caller's own (Nova's context, not the
    /// server's): 403s, on one read of the limits.
    pub(crate) async fn check_item_quotas(
        &self,
        ctx: &RequestContext,
        items: usize,
        files: &[InjectedFile],
    ) -> Result<()> {
        let limits = self
            .store
            .quota_limits(&ProjectId::from(ctx.project_id.as_str()))
            .await?;
        let quotas = Quotas::of(&self.config.quota, &limits);
        quotas.metadata(&ctx.user_id, items).map_err(Error::OverQuota)?;
        quotas.injected_files(&ctx.user_id, files).map_err(Error::OverQuota)
    }
}
