//! The engine's quota statements: the limits an admin sets (a project's, a
//! user's, a quota class's; a project's are read with the `default` class's in
//! one statement, so the defaults cost a claim no read of their own), the
//! counts usage is made of, and a claim's check inside the batch that records
//! what it is for — the claim's lock first, then the counts, then the domain's
//! judgement — so two claims on the same usage are judged one after the other.
//! A server claim is judged after the rest of its batch, so that lock is held
//! briefly, and one that no limit applies to (all unlimited) is neither counted
//! nor locked.

use netcache_domain::ProjectId;
use netcache_domain::change::Change;
use netcache_domain::quota::{
    Cost, DEFAULT_CLASS, KeyPairClaim, ProjectLimits, QuotaLimit, Resource, ServerClaim, ServerCount,
};
use netcache_domain::server::Server;
use netcache_store_bounds::sql_bounds;

use super::{Cols, Sql};
use crate::{Error, Result, sql};

/// How a project's own limits are keyed (Nova keeps them in a table of their own).
const PROJECT_ROW: &str = "";

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    /// Applies one of the limit changes: a project's or a user's, a class's.
    pub(super) async fn apply_quota_change(conn: &mut DB::Connection, change: &Change) -> Result<()> {
        match change {
            Change::SetQuotaLimits {
                project_id,
                user_id,
                limits,
            } => {
                for (resource, limit) in limits {
                    let query = sqlx::query(sql::UPSERT_QUOTA_LIMIT)
                        .bind(project_id.as_str())
                        .bind(user_id.as_deref().unwrap_or(PROJECT_ROW))
                        .bind(resource.name())
                        .bind(*limit);
                    Self::run(conn, query).await?;
                }
            }
            Change::DeleteQuotaLimits { project_id, user_id } => {
                let query = match user_id {
                    None => sqlx::query(sql::DELETE_PROJECT_QUOTA_LIMITS).bind(project_id.as_str()),
                    Some(user) => sqlx::query(sql::DELETE_USER_QUOTA_LIMITS)
                        .bind(project_id.as_str())
                        .bind(user.as_str()),
                };
                Self::run(conn, query).await?;
            }
            Change::SetQuotaClass { class_name, limits } => {
                for (resource, limit) in limits {
                    let query = sqlx::query(sql::UPSERT_QUOTA_CLASS)
                        .bind(class_name.as_str())
                        .bind(resource.name())
                        .bind(*limit);
                    Self::run(conn, query).await?;
                }
            }
            _ => unreachable!("not a quota limit change: {change:?}"),
        }
        Ok(())
    }

    /// A project's limits and its users', with the `default` class's values.
    pub(super) async fn quota_limits(conn: &mut DB::Connection, project: &ProjectId) -> Result<ProjectLimits> {
        let rows = sqlx::query(sql::SELECT_QUOTA_LIMITS)
            .bind(project.as_str())
            .bind(DEFAULT_CLASS)
            .fetch_all(&mut *conn)
            .await?;
        let mut stored = ProjectLimits::default();
        for row in &rows {
            let c = Cols::<DB>(row);
            let (resource, hard_limit) = (c.parse("resource")?, c.get("hard_limit")?);
            match c.get::<Option<String>>("user_id")? {
                None => stored.default_class.push((resource, hard_limit)),
                Some(user) => stored.limits.push(QuotaLimit {
                    project_id: project.clone(),
                    user_id: (user != PROJECT_ROW).then_some(user),
                    resource,
                    hard_limit,
                }),
            }
        }
        Ok(stored)
    }

    /// The values set of a quota class, by resource.
    pub(super) async fn quota_class(conn: &mut DB::Connection, class_name: &str) -> Result<Vec<(Resource, i64)>> {
        let rows = sqlx::query(sql::SELECT_QUOTA_CLASS)
            .bind(class_name)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<DB>(row);
                Ok((c.parse("resource")?, c.get("hard_limit")?))
            })
            .collect()
    }

    pub(super) async fn server_counts(conn: &mut DB::Connection, project: &ProjectId) -> Result<Vec<ServerCount>> {
        let rows = sqlx::query(sql::COUNT_SERVERS_FOR_QUOTA)
            .bind(project.as_str())
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<DB>(row);
                let vcpus: Option<i64> = c.get("flavor_vcpus")?;
                let ram_mb: Option<i64> = c.get("flavor_ram_mb")?;
                Ok(ServerCount {
                    user_id: c.get("user_id")?,
                    flavor_ref: c.get("flavor_ref")?,
                    cost: vcpus.zip(ram_mb).map(|(vcpus, ram_mb)| Cost { vcpus, ram_mb }),
                    servers: c.get("n")?,
                })
            })
            .collect()
    }

    pub(super) async fn keypair_count(conn: &mut DB::Connection, user: &str) -> Result<i64> {
        let row = sqlx::query(sql::COUNT_KEYPAIRS)
            .bind(user)
            .fetch_one(&mut *conn)
            .await?;
        Cols::<DB>(&row).get("n")
    }

    pub(super) async fn lock_quota(conn: &mut DB::Connection, scope: String) -> Result<()> {
        Self::run(conn, sqlx::query(sql::LOCK_QUOTA).bind(scope)).await?;
        Ok(())
    }

    /// Judges a claim after the rest of its `batch` (which recorded its servers).
    pub(super) async fn require_server_quota(
        conn: &mut DB::Connection,
        claim: &ServerClaim,
        batch: &[Change],
    ) -> Result<()> {
        let limits = Self::quota_limits(conn, &claim.project_id).await?;
        if !claim.is_limited(&limits) {
            return Ok(());
        }
        Self::lock_quota(conn, claim.lock()).await?;
        let counted = Self::server_counts(conn, &claim.project_id).await?;
        let recorded: Vec<&Server> = batch
            .iter()
            .filter_map(|c| match c {
                Change::InsertServer(server) => Some(server),
                _ => None,
            })
            .collect();
        claim.judge(&limits, &counted, &recorded).map_err(Error::OverQuota)
    }

    pub(super) async fn require_keypair_quota(conn: &mut DB::Connection, claim: &KeyPairClaim) -> Result<()> {
        Self::lock_quota(conn, claim.lock()).await?;
        let limits = Self::quota_limits(conn, &claim.project_id).await?;
        let key_pairs = Self::keypair_count(conn, &claim.user_id).await?;
        claim.judge(&limits, key_pairs).map_err(Error::OverQuota)
    }
}
