//! Flavors (Nova's flavor-manage, flavor-access and flavor-extra-specs): an
//! admin's flavors in the store, which a caller sees (public ones and those his
//! project was given), and the flavor a boot names.

use std::collections::BTreeMap;

use async_trait::async_trait;
use netcache_domain::ProjectId;
use netcache_domain::change::Change;
use netcache_domain::flavor::{self, Flavor, ListQuery};
use tracing::info;

use crate::{Compute, Error, RequestContext, Result};

/// Nova's flavors, their access lists and extra specs.
#[async_trait]
pub trait FlavorOps: Send + Sync {
    /// A page of the flavors the caller sees, as Nova lists them.
    async fn flavors(&self, query: &ListQuery<'_>) -> Result<Vec<Flavor>>;

    /// A live flavor the caller sees (another project's private one is not found).
    async fn flavor(&self, ctx: &RequestContext, id: &str) -> Result<Flavor>;

    /// The flavor a boot names: one the caller sees, else Nova's 400.
    async fn boot_flavor(&self, ctx: &RequestContext, id: &str) -> Result<Flavor>;

    /// A new flavor; Nova's conflict if a live flavor has its id or its name.
    async fn create_flavor(&self, flavor: Flavor) -> Result<Flavor>;

    /// Deletes a flavor: servers booted with it keep their snapshot of it.
    async fn delete_flavor(&self, id: &str) -> Result<()>;

    /// Sets a flavor's description (2.55).
    async fn set_flavor_description(
        &self,
        ctx: &RequestContext,
        id: &str,
        description: Option<String>,
    ) -> Result<Flavor>;

    /// Gives a project access to a private flavor (Nova's 409 for a public
    /// one from 2.7: `refuse_public`).
    async fn add_flavor_access(
        &self,
        ctx: &RequestContext,
        id: &str,
        project: &str,
        refuse_public: bool,
    ) -> Result<Flavor>;

    /// Takes a project's access to a flavor away.
    async fn remove_flavor_access(&self, ctx: &RequestContext, id: &str, project: &str) -> Result<Flavor>;

    /// Sets extra specs of a flavor, each in place of the one it has.
    async fn set_flavor_extra_specs(
        &self,
        ctx: &RequestContext,
        id: &str,
        specs: BTreeMap<String, String>,
    ) -> Result<()>;

    /// Removes one extra spec of a flavor.
    async fn delete_flavor_extra_spec(&self, ctx: &RequestContext, id: &str, key: &str) -> Result<()>;
}

#[async_trait]
impl FlavorOps for Compute {
    async fn flavors(&self, query: &ListQuery<'_>) -> Result<Vec<Flavor>> {
        let all = self.store.flavors().await?;
        flavor::list(all, query).map_err(|_| Error::FlavorMarkerNotFound(query.marker.unwrap_or_default().to_owned()))
    }

    async fn flavor(&self, ctx: &RequestContext, id: &str) -> Result<Flavor> {
        self.store
            .flavor(id)
            .await?
            .filter(|f| f.visible_to(&ProjectId::from(ctx.project_id.as_str()), ctx.is_admin()))
            .ok_or_else(|| Error::FlavorNotFound(id.to_owned()))
    }

    async fn boot_flavor(&self, ctx: &RequestContext, id: &str) -> Result<Flavor> {
        self.flavor(ctx, id).await.map_err(|e| match e {
            Error::FlavorNotFound(id) => Error::BootFlavorNotFound(id),
            other => other,
        })
    }

    async fn create_flavor(&self, flavor: Flavor) -> Result<Flavor> {
        match self.store.commit(vec![Change::InsertFlavor(flavor.clone())]).await {
            Ok(()) => {
                info!(flavor.id = %flavor.id, flavor.name = %flavor.name, "Created flavor {}", flavor.id);
                Ok(flavor)
            }
            // Which of the two is taken, as Nova tells them apart.
            Err(e) if e.is_conflict() => match self.store.flavor(&flavor.id).await? {
                Some(_) => Err(Error::FlavorIdExists(flavor.id)),
                None => Err(Error::FlavorExists(flavor.name)),
            },
            Err(e) => Err(e.into()),
        }
    }

    async fn delete_flavor(&self, id: &str) -> Result<()> {
        let at = self.clock.now();
        self.commit_on_flavor(id, Change::DeleteFlavor { id: id.to_owned(), at })
            .await?;
        info!(flavor.id = %id, "Deleted flavor {id}");
        Ok(())
    }

    async fn set_flavor_description(
        &self,
        ctx: &RequestContext,
        id: &str,
        description: Option<String>,
    ) -> Result<Flavor> {
        self.commit_on_flavor(
            id,
            Change::SetFlavorDescription {
                id: id.to_owned(),
                description,
            },
        )
        .await?;
        self.flavor(ctx, id).await
    }

    async fn add_flavor_access(
        &self,
        ctx: &RequestContext,
        id: &str,
        project: &str,
        refuse_public: bool,
    ) -> Result<Flavor> {
        let flavor = self.flavor(ctx, id).await?;
        if refuse_public && flavor.is_public {
            return Err(Error::FlavorIsPublic);
        }
        let change = Change::AddFlavorAccess {
            id: id.to_owned(),
            project_id: project.to_owned(),
        };
        match self.commit_on_flavor(id, change).await {
            Err(Error::Store(e)) if e.is_conflict() => Err(Error::FlavorAccessExists {
                flavor: id.to_owned(),
                project: project.to_owned(),
            }),
            other => other,
        }?;
        self.flavor(ctx, id).await
    }

    async fn remove_flavor_access(&self, ctx: &RequestContext, id: &str, project: &str) -> Result<Flavor> {
        self.flavor(ctx, id).await?;
        let change = Change::RemoveFlavorAccess {
            id: id.to_owned(),
            project_id: project.to_owned(),
        };
        self.commit_or(change, || Error::FlavorAccessNotFound {
            flavor: id.to_owned(),
            project: project.to_owned(),
        })
        .await?;
        self.flavor(ctx, id).await
    }

    async fn set_flavor_extra_specs(
        &self,
        ctx: &RequestContext,
        id: &str,
        specs: BTreeMap<String, String>,
    ) -> Result<()> {
        self.flavor(ctx, id).await?;
        self.commit_on_flavor(
            id,
            Change::SetFlavorExtraSpecs {
                id: id.to_owned(),
                specs,
            },
        )
        .await
    }

    async fn delete_flavor_extra_spec(&self, ctx: &RequestContext, id: &str, key: &str) -> Result<()> {
        self.flavor(ctx, id).await?;
        let change = Change::DeleteFlavorExtraSpec {
            id: id.to_owned(),
            key: key.to_owned(),
        };
        self.commit_or(change, || Error::FlavorExtraSpecNotFound {
            flavor: id.to_owned(),
            key: key.to_owned(),
        })
        .await
    }
}

impl Compute {
    /// Commits a change of a live flavor: not found if it is gone (or was never).
    async fn commit_on_flavor(&self, id: &str, change: Change) -> Result<()> {
        self.commit_or(change, || Error::FlavorNotFound(id.to_owned())).await
    }

    /// Commits `change`; a row it needs that is not there is `missing()`.
    async fn commit_or(&self, change: Change, missing: impl FnOnce() -> Error) -> Result<()> {
        self.store.commit(vec![change]).await.map_err(|e| match e {
            netcache_store::Error::NotFound(_) => missing(),
            other => other.into(),
        })
    }
}
