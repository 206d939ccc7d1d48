//! The engine's host-aggregate statements: every aggregate read with its hosts
//! and metadata, a create (its name unique by the table's index), and each
//! write of an existing one in a transaction that first advances
//! `aggregates_generation` from the generation its decision read.

use netcache_store_bounds::sql_bounds;
use std::collections::HashMap;

use async_trait::async_trait;
use netcache_domain::HostName;
use netcache_domain::aggregate::{Aggregate, AggregateWrite, Aggregates, NewAggregate, ZONE_KEY};

use super::{Backend, Cols, Sql};
use crate::dialect::Dialect;
use crate::{AggregateStore, Error, Result, aggregate_sql as sql};

#[sql_bounds(B::Db)]
#[async_trait]
impl<B> AggregateStore for B
where
    B: Backend,
{
    async fn aggregates(&self) -> Result<Aggregates> {
        let mut conn = self.pool().acquire().await?;
        // The generation first: a write after it fails its compare-and-swap,
        // however much of it the rows below show.
        let generation: i64 =
            Cols::<B::Db>(&sqlx::query(sql::SELECT_GENERATION).fetch_one(&mut *conn).await?).get("generation")?;
        let mut list = Vec::new();
        for row in sqlx::query(sql::SELECT_AGGREGATES).fetch_all(&mut *conn).await? {
            let c = Cols::<B::Db>(&row);
            list.push(Aggregate {
                id: c.get("id")?,
                uuid: c.uuid("uuid")?,
                name: c.get("name")?,
                hosts: Vec::new(),
                metadata: std::collections::BTreeMap::new(),
                created_at: c.ts("created_at")?,
                updated_at: c.ts_opt("updated_at")?,
            });
        }
        let index: HashMap<i64, usize> = list.iter().enumerate().map(|(i, a)| (a.id, i)).collect();
        for row in sqlx::query(sql::SELECT_HOSTS).fetch_all(&mut *conn).await? {
            let c = Cols::<B::Db>(&row);
            if let Some(&i) = index.get(&c.get::<i64>("aggregate_id")?) {
                list[i].hosts.push(HostName::from(c.get::<String>("host")?.as_str()));
            }
        }
        for row in sqlx::query(sql::SELECT_METADATA).fetch_all(&mut *conn).await? {
            let c = Cols::<B::Db>(&row);
            if let Some(&i) = index.get(&c.get::<i64>("aggregate_id")?) {
                list[i].metadata.insert(c.get("meta_key")?, c.get("meta_value")?);
            }
        }
        Ok(Aggregates { generation, list })
    }

    async fn create_aggregate(&self, new: &NewAggregate) -> Result<Aggregate> {
        let mut tx = self.writer().begin_with(<B::Db as Dialect>::BEGIN_WRITE).await?;
        let row = sqlx::query(sql::INSERT_AGGREGATE)
            .bind(<B::Db as Dialect>::uuid(new.uuid))
            .bind(new.name.as_str())
            .bind(<B::Db as Dialect>::ts(new.created_at))
            .fetch_one(&mut *tx)
            .await
            .map_err(Error::from_write)?;
        let id: i64 = Cols::<B::Db>(&row).get("id")?;
        if let Some(zone) = &new.availability_zone {
            let query = sqlx::query(sql::UPSERT_METADATA)
                .bind(id)
                .bind(ZONE_KEY)
                .bind(zone.as_str());
            Sql::<B::Db>::run(&mut *tx, query).await?;
        }
        tx.commit().await.map_err(Error::from_write)?;
        Ok(Aggregate {
            id,
            uuid: new.uuid,
            name: new.name.clone(),
            hosts: Vec::new(),
            metadata: new
                .availability_zone
                .iter()
                .map(|z| (ZONE_KEY.to_owned(), z.clone()))
                .collect(),
            created_at: crate::dialect::to_micros(new.created_at),
            updated_at: None,
        })
    }

    async fn write_aggregate(&self, generation: i64, write: &AggregateWrite) -> Result<bool> {
        let mut tx = self.writer().begin_with(<B::Db as Dialect>::BEGIN_WRITE).await?;
        if Sql::<B::Db>::run(&mut *tx, sqlx::query(sql::ADVANCE_GENERATION).bind(generation)).await? == 0 {
            return Ok(false);
        }
        let changed = match write {
            AggregateWrite::Update { id, name, metadata, at } => {
                let query = sqlx::query(sql::UPDATE_AGGREGATE)
                    .bind(*id)
                    .bind(name.as_deref())
                    .bind(<B::Db as Dialect>::ts(*at));
                let changed = Sql::<B::Db>::run(&mut *tx, query).await?;
                for (key, value) in metadata {
                    let query = match value {
                        Some(value) => sqlx::query(sql::UPSERT_METADATA)
                            .bind(*id)
                            .bind(key.as_str())
                            .bind(value.as_str()),
                        None => sqlx::query(sql::DELETE_METADATA).bind(*id).bind(key.as_str()),
                    };
                    Sql::<B::Db>::run(&mut *tx, query).await?;
                }
                changed
            }
            AggregateWrite::AddHost { id, host } => {
                Sql::<B::Db>::run(&mut *tx, sqlx::query(sql::INSERT_HOST).bind(*id).bind(host.as_str())).await?
            }
            AggregateWrite::RemoveHost { id, host } => {
                Sql::<B::Db>::run(&mut *tx, sqlx::query(sql::DELETE_HOST).bind(*id).bind(host.as_str())).await?
            }
            AggregateWrite::Delete { id } => {
                Sql::<B::Db>::run(&mut *tx, sqlx::query(sql::DELETE_ALL_METADATA).bind(*id)).await?;
                Sql::<B::Db>::run(&mut *tx, sqlx::query(sql::DELETE_AGGREGATE).bind(*id)).await?
            }
        };
        if changed == 0 {
            return Err(Error::NotFound(format!("aggregate {}", write.id())));
        }
        tx.commit().await.map_err(Error::from_write)?;
        Ok(true)
    }
}
