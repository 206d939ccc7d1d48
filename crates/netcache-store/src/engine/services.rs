//! The engine's compute-service statements: registration and heartbeats on the
//! database's clock, an admin's compare-and-swap changes, the hosts the
//! scheduler must skip, and the per-host counts os-hypervisors shows.

use chrono::TimeDelta;
use netcache_domain::service::{COMPUTE_BINARY, Service};
use netcache_domain::{HostName, ProjectId, ServerId};
use netcache_store_bounds::sql_bounds;
use sqlx::Pool;
use uuid::Uuid;

use super::{Cols, Sql};
use crate::{Error, HostServers, Result, StoredService, service_sql};

#[sql_bounds(DB)]
impl<DB> Sql<DB> {
    /// Inserts each host's row if it has none, and renews every one's heartbeat.
    pub(super) async fn register_services(writer: &Pool<DB>, hosts: &[HostName], heartbeat: TimeDelta) -> Result<()> {
        for host in hosts {
            sqlx::query(DB::service_sql().register.as_str())
                .bind(DB::uuid(Uuid::new_v4()))
                .bind(host.as_str())
                .bind(COMPUTE_BINARY)
                .bind(heartbeat.num_milliseconds())
                .execute(writer)
                .await?;
        }
        Ok(())
    }

    /// Renews the heartbeats of the hosts' rows (a deleted row stays deleted
    /// until its process registers again, as a restarted Nova compute does).
    pub(super) async fn renew_service_heartbeats(
        writer: &Pool<DB>,
        hosts: &[HostName],
        heartbeat: TimeDelta,
    ) -> Result<u64> {
        let mut renewed = 0;
        for host in hosts {
            let result = sqlx::query(DB::service_sql().heartbeat.as_str())
                .bind(heartbeat.num_milliseconds())
                .bind(host.as_str())
                .bind(COMPUTE_BINARY)
                .execute(writer)
                .await?;
            renewed += DB::rows_affected(&result);
        }
        Ok(renewed)
    }

    pub(super) async fn services(pool: &Pool<DB>) -> Result<Vec<StoredService>> {
        let rows = sqlx::query(DB::service_sql().select.as_str()).fetch_all(pool).await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<DB>(row);
                Ok(StoredService {
                    service: Service {
                        id: c.get("id")?,
                        uuid: c.uuid("uuid")?,
                        host: HostName::from(c.get::<String>("host")?.as_str()),
                        binary: c.get("service_binary")?,
                        disabled: c.get("disabled")?,
                        disabled_reason: c.get("disabled_reason")?,
                        forced_down: c.get("forced_down")?,
                        updated_at: c.ts_opt("updated_at")?,
                        generation: c.get("generation")?,
                    },
                    heartbeat_live: c.get("alive")?,
                })
            })
            .collect()
    }

    /// Writes an admin's change if the row is still at the generation read.
    pub(super) async fn update_service(writer: &Pool<DB>, service: &Service) -> Result<()> {
        let result = sqlx::query(DB::service_sql().update.as_str())
            .bind(service.disabled)
            .bind(service.disabled_reason.as_deref())
            .bind(service.forced_down)
            .bind(service.id)
            .bind(service.generation)
            .execute(writer)
            .await?;
        if DB::rows_affected(&result) == 0 {
            return Err(Error::Conflict(format!(
                "service {} is not at generation {} (or is gone)",
                service.id, service.generation
            )));
        }
        Ok(())
    }

    pub(super) async fn delete_service(writer: &Pool<DB>, id: i64) -> Result<bool> {
        let result = sqlx::query(service_sql::DELETE_SERVICE)
            .bind(id)
            .execute(writer)
            .await?;
        Ok(DB::rows_affected(&result) > 0)
    }

    pub(super) async fn unschedulable_hosts(pool: &Pool<DB>) -> Result<Vec<HostName>> {
        let rows = sqlx::query(service_sql::UNSCHEDULABLE_HOSTS).fetch_all(pool).await?;
        rows.iter()
            .map(|row| Ok(HostName::from(Cols::<DB>(row).get::<String>("host")?.as_str())))
            .collect()
    }

    pub(super) async fn server_counts_by_host(pool: &Pool<DB>) -> Result<Vec<HostServers>> {
        let rows = sqlx::query(service_sql::COUNT_SERVERS_BY_HOST).fetch_all(pool).await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<DB>(row);
                Ok(HostServers {
                    host: HostName::from(c.get::<String>("host")?.as_str()),
                    project_id: ProjectId::from(c.get::<String>("project_id")?),
                    flavor_ref: c.get("flavor_ref")?,
                    servers: c.get("n")?,
                })
            })
            .collect()
    }

    pub(super) async fn servers_on_host(pool: &Pool<DB>, host: &HostName) -> Result<Vec<(ServerId, String)>> {
        let rows = sqlx::query(service_sql::SERVERS_ON_HOST)
            .bind(host.as_str())
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(|row| {
                let c = Cols::<DB>(row);
                Ok((ServerId(c.uuid("id")?), c.get("name")?))
            })
            .collect()
    }
}
