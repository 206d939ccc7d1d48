//! The engine's flavor statements: a flavor's changes (each on a live flavor,
//! named by its id) and the reads of live flavors with their extra specs and
//! projects.

use netcache_store_bounds::sql_bounds;
use std::collections::HashMap;

use netcache_domain::change::Change;
use netcache_domain::flavor::Flavor;

use super::{Cols, Sql};
use crate::{Error, Result, sql};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    pub(super) async fn apply_flavor_change(conn: &mut DB::Connection, change: &Change) -> Result<()> {
        let (affected, id) = match change {
            Change::InsertFlavor(flavor) => {
                let query = sqlx::query(sql::INSERT_FLAVOR)
                    .bind(flavor.id.as_str())
                    .bind(flavor.name.as_str())
                    .bind(flavor.ram_mb)
                    .bind(flavor.vcpus)
                    .bind(flavor.disk_gb)
                    .bind(flavor.ephemeral_gb)
                    .bind(flavor.swap_mb)
                    .bind(flavor.rxtx_factor.to_string())
                    .bind(flavor.is_public)
                    .bind(flavor.description.as_deref());
                Self::run(conn, query).await?;
                for (key, value) in &flavor.extra_specs {
                    Self::set_extra_spec(conn, &flavor.id, key, value).await?;
                }
                for project in &flavor.projects {
                    let query = sqlx::query(sql::INSERT_FLAVOR_PROJECT)
                        .bind(flavor.id.as_str())
                        .bind(project.as_str());
                    Self::run(conn, query).await?;
                }
                return Ok(());
            }
            Change::DeleteFlavor { id, at } => {
                let query = sqlx::query(sql::DELETE_FLAVOR).bind(id.as_str()).bind(DB::ts(*at));
                (Self::run(conn, query).await?, id)
            }
            Change::SetFlavorDescription { id, description } => {
                let query = sqlx::query(sql::SET_FLAVOR_DESCRIPTION)
                    .bind(id.as_str())
                    .bind(description.as_deref());
                (Self::run(conn, query).await?, id)
            }
            Change::AddFlavorAccess { id, project_id } => {
                let query = sqlx::query(sql::INSERT_FLAVOR_PROJECT)
                    .bind(id.as_str())
                    .bind(project_id.as_str());
                (Self::run(conn, query).await?, id)
            }
            Change::RemoveFlavorAccess { id, project_id } => {
                let query = sqlx::query(sql::DELETE_FLAVOR_PROJECT)
                    .bind(id.as_str())
                    .bind(project_id.as_str());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::NotFound(format!(
                        "access of project {project_id} to flavor {id}"
                    )));
                }
                return Ok(());
            }
            Change::SetFlavorExtraSpecs { id, specs } => {
                for (key, value) in specs {
                    if Self::set_extra_spec(conn, id, key, value).await? == 0 {
                        return Err(Error::NotFound(format!("flavor {id}")));
                    }
                }
                return Ok(());
            }
            Change::DeleteFlavorExtraSpec { id, key } => {
                let query = sqlx::query(sql::DELETE_FLAVOR_EXTRA_SPEC)
                    .bind(id.as_str())
                    .bind(key.as_str());
                if Self::run(conn, query).await? == 0 {
                    return Err(Error::NotFound(format!("extra spec {key} of flavor {id}")));
                }
                return Ok(());
            }
            other => unreachable!("not a flavor change: {other:?}"),
        };
        if affected == 0 {
            return Err(Error::NotFound(format!("flavor {id}")));
        }
        Ok(())
    }

    async fn set_extra_spec(conn: &mut DB::Connection, id: &str, key: &str, value: &str) -> Result<u64> {
        let query = sqlx::query(sql::UPSERT_FLAVOR_EXTRA_SPEC)
            .bind(id)
            .bind(key)
            .bind(value);
        Self::run(conn, query).await
    }

    /// Live flavors in creation order (`id`: only the one with it).
    pub(super) async fn flavors(conn: &mut DB::Connection, id: Option<&str>) -> Result<Vec<Flavor>> {
        let (flavors, specs, projects) = match id {
            None => (
                sql::SELECT_FLAVORS,
                sql::SELECT_FLAVORS_EXTRA_SPECS,
                sql::SELECT_FLAVORS_PROJECTS,
            ),
            Some(_) => (
                sql::SELECT_FLAVOR,
                sql::SELECT_FLAVOR_EXTRA_SPECS,
                sql::SELECT_FLAVOR_PROJECTS,
            ),
        };
        let fetch = |statement| {
            let query = sqlx::query(statement);
            match id {
                Some(id) => query.bind(id),
                None => query,
            }
        };
        let rows = fetch(flavors).fetch_all(&mut *conn).await?;
        let mut found = rows.iter().map(Self::flavor).collect::<Result<Vec<Flavor>>>()?;
        let mut by_id: HashMap<String, &mut Flavor> = found.iter_mut().map(|f| (f.id.clone(), f)).collect();
        for row in fetch(specs).fetch_all(&mut *conn).await? {
            let c = Cols::<DB>(&row);
            if let Some(flavor) = by_id.get_mut(&c.get::<String>("flavor_id")?) {
                flavor.extra_specs.insert(c.get("key")?, c.get("value")?);
            }
        }
        for row in fetch(projects).fetch_all(&mut *conn).await? {
            let c = Cols::<DB>(&row);
            if let Some(flavor) = by_id.get_mut(&c.get::<String>("flavor_id")?) {
                flavor.projects.insert(c.get("project_id")?);
            }
        }
        Ok(found)
    }

    fn flavor(row: &DB::Row) -> Result<Flavor> {
        let c = Cols::<DB>(row);
        Ok(Flavor {
            id: c.get("id")?,
            name: c.get("name")?,
            ram_mb: c.get("ram_mb")?,
            vcpus: c.get("vcpus")?,
            disk_gb: c.get("disk_gb")?,
            ephemeral_gb: c.get("ephemeral_gb")?,
            swap_mb: c.get("swap_mb")?,
            rxtx_factor: c.parse("rxtx_factor")?,
            is_public: c.get("is_public")?,
            description: c.get("description")?,
            extra_specs: Default::default(),
            projects: Default::default(),
        })
    }
}
