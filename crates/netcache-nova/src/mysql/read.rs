//! The statements, and the reads of one snapshot of one cell: a page of
//! instances, or one instance, then their VIF rows, info caches and actions in
//! one statement each (per [`IN_LIST`] instances).
//!
//! A deleted instance's rows may have been archived to Nova's `shadow_*`
//! tables: its reads add those tables' rows (`UNION ALL`). A schema without
//! them (a test's, or a cell never archived by a Nova that made them lazily)
//! reads as if they were empty: MySQL's "table doesn't exist" makes the read
//! run again without them.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDateTime, Utc};
use netcache_domain::InstanceUuid;
use netcache_domain::PortId;
use netcache_domain::nova::{InstanceRecords, NovaAction, NovaInstance, NovaVif};
use sqlx::mysql::{MySqlArguments, MySqlRow};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, MySql, Row, Transaction};
use tracing::debug;

use super::Cell;
use super::cache;
use super::connection::no_such_table;
use crate::{Error, Result};

/// The uuid of the instance and VIF rows Nova's online data migration keeps as
/// its marker: never an instance.
pub(super) const FAKE_UUID: &str = "00000000-0000-0000-0000-000000000000";

/// How each snapshot starts; it ends in `ROLLBACK`.
pub(super) const START: &str = "START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT";

/// Instances per `IN (…)` list.
const IN_LIST: usize = 1000;

const INSTANCE_COLUMNS: &str = "uuid, project_id, host, vm_state, task_state, deleted, deleted_at, created_at";

/// Live instances after a uuid: binds the uuid and the limit.
pub(super) fn live_page_sql() -> String {
    format!(
        "SELECT {INSTANCE_COLUMNS}, 0 AS archived FROM instances \
         WHERE deleted = 0 AND uuid > ? AND uuid <> '{FAKE_UUID}' ORDER BY uuid LIMIT ?"
    )
}

/// Instances deleted since a time, after a uuid: binds time, uuid and limit
/// (twice with the shadow table, then the limit). An archived row whose uuid is
/// still in `instances` is left out (it is read there).
pub(super) fn deleted_page_sql(shadow: bool) -> String {
    let live = format!(
        "SELECT {INSTANCE_COLUMNS}, 0 AS archived FROM instances \
         WHERE deleted <> 0 AND deleted_at >= ? AND uuid > ? AND uuid <> '{FAKE_UUID}' ORDER BY uuid LIMIT ?"
    );
    if !shadow {
        return live;
    }
    format!(
        "({live}) UNION ALL \
         (SELECT {INSTANCE_COLUMNS}, 1 AS archived FROM shadow_instances s \
         WHERE deleted <> 0 AND deleted_at >= ? AND uuid > ? AND uuid <> '{FAKE_UUID}' \
         AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.uuid = s.uuid) ORDER BY uuid LIMIT ?) \
         ORDER BY uuid LIMIT ?"
    )
}

/// One instance, deleted or not: binds the uuid (twice with the shadow table).
pub(super) fn one_instance_sql(shadow: bool) -> String {
    let live = format!("SELECT {INSTANCE_COLUMNS}, 0 AS archived FROM instances WHERE uuid = ?");
    if !shadow {
        return live;
    }
    format!(
        "{live} UNION ALL SELECT {INSTANCE_COLUMNS}, 1 AS archived FROM shadow_instances s \
         WHERE uuid = ? AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.uuid = s.uuid) ORDER BY archived"
    )
}

/// `?, ?, …`
fn marks(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// `live` over `table`, and with `shadow` the same over `shadow_{table}`, in
/// the order `order`. `live` has `{table}`, `{archived}` and `{in}` holes.
fn with_shadow(live: &str, table: &str, n: usize, shadow: bool, order: &str) -> String {
    let part = |table: &str, archived: u8| {
        live.replace("{table}", table)
            .replace("{events}", &format!("{table}_events"))
            .replace("{archived}", &archived.to_string())
            .replace("{in}", &marks(n))
    };
    if shadow {
        format!(
            "{} UNION ALL {} ORDER BY {order}",
            part(table, 0),
            part(&format!("shadow_{table}"), 1)
        )
    } else {
        format!("{} ORDER BY {order}", part(table, 0))
    }
}

/// The VIF rows of `n` instances, deleted ones included.
pub(super) fn vifs_sql(n: usize, shadow: bool) -> String {
    with_shadow(
        "SELECT id, instance_uuid, uuid, created_at, deleted, {archived} AS archived FROM {table} \
         WHERE instance_uuid IN ({in})",
        "virtual_interfaces",
        n,
        shadow,
        "instance_uuid, created_at, archived, id",
    )
}

/// The info caches of `n` instances (a deleted instance's soft-deleted one too).
pub(super) fn caches_sql(n: usize, shadow: bool) -> String {
    with_shadow(
        "SELECT instance_uuid, network_info, {archived} AS archived FROM {table} WHERE instance_uuid IN ({in})",
        "instance_info_caches",
        n,
        shadow,
        "instance_uuid, archived",
    )
}

/// The actions of `n` instances, each with its events' count, whether one has
/// not finished, and their latest finish.
pub(super) fn actions_sql(n: usize, shadow: bool) -> String {
    with_shadow(
        "SELECT a.id, a.instance_uuid, a.action, a.request_id, a.start_time, a.finish_time, \
         COUNT(e.id) AS events, MAX(e.finish_time IS NULL) AS running, MAX(e.finish_time) AS last_finish, \
         {archived} AS archived \
         FROM {table} a LEFT JOIN {events} e ON e.action_id = a.id \
         WHERE a.instance_uuid IN ({in}) \
         GROUP BY a.id, a.instance_uuid, a.action, a.request_id, a.start_time, a.finish_time",
        "instance_actions",
        n,
        shadow,
        "instance_uuid, start_time, archived, id",
    )
}

/// Nova's naive UTC `DATETIME`.
fn utc(at: NaiveDateTime) -> DateTime<Utc> {
    at.and_utc()
}

/// One transaction of one cell: read-only, one consistent snapshot, rolled
/// back at [`Snapshot::end`] (or, dropped on an error, by sqlx).
pub(super) struct Snapshot<'c> {
    cell: &'c Cell,
    tx: Transaction<'static, MySql>,
}

impl<'c> Snapshot<'c> {
    pub(super) async fn begin(cell: &'c Cell) -> Result<Self> {
        cell.count();
        let tx = cell.pool.begin_with(START).await.map_err(|e| cell.error(e))?;
        Ok(Self { cell, tx })
    }

    pub(super) async fn end(self) -> Result<()> {
        let cell = self.cell;
        cell.count();
        self.tx.rollback().await.map_err(|e| cell.error(e))
    }

    /// Runs `build(shadow)`; when a shadow table is missing, `build(false)`.
    async fn fetch<F>(&mut self, build: F, shadow: bool) -> Result<Vec<MySqlRow>>
    where
        F: Fn(bool) -> Query<'static, MySql, MySqlArguments> + Send,
    {
        if shadow {
            self.cell.count();
            match build(true).fetch_all(&mut *self.tx).await {
                Err(e) if no_such_table(&e) => {
                    debug!(cell = %self.cell.name, error = %e, "a shadow table is missing: read as empty");
                }
                rows => return rows.map_err(|e| self.cell.error(e)),
            }
        }
        self.cell.count();
        build(false)
            .fetch_all(&mut *self.tx)
            .await
            .map_err(|e| self.cell.error(e))
    }

    /// A keyset page of live instances.
    pub(super) async fn live(&mut self, after: Option<&InstanceUuid>, limit: i64) -> Result<Vec<NovaInstance>> {
        let after = after.map(|a| a.0.clone()).unwrap_or_default();
        let rows = self
            .fetch(
                |_| {
                    sqlx::query(AssertSqlSafe(live_page_sql()))
                        .bind(after.clone())
                        .bind(limit)
                },
                false,
            )
            .await?;
        self.instances(&rows)
    }

    /// A keyset page of instances deleted since `since`, archived ones included.
    pub(super) async fn deleted(
        &mut self,
        since: DateTime<Utc>,
        after: Option<&InstanceUuid>,
        limit: i64,
    ) -> Result<Vec<NovaInstance>> {
        let after = after.map(|a| a.0.clone()).unwrap_or_default();
        let since = since.naive_utc();
        let rows = self
            .fetch(
                |shadow| {
                    let q = sqlx::query(AssertSqlSafe(deleted_page_sql(shadow)))
                        .bind(since)
                        .bind(after.clone())
                        .bind(limit);
                    if shadow {
                        q.bind(since).bind(after.clone()).bind(limit).bind(limit)
                    } else {
                        q
                    }
                },
                true,
            )
            .await?;
        let mut instances = self.instances(&rows)?;
        // Archived twice (never by Nova in one snapshot): read once.
        instances.dedup_by(|a, b| a.uuid == b.uuid);
        Ok(instances)
    }

    /// One instance by uuid, in `instances` or archived.
    pub(super) async fn one(&mut self, uuid: &InstanceUuid) -> Result<Option<NovaInstance>> {
        let rows = self
            .fetch(
                |shadow| {
                    let q = sqlx::query(AssertSqlSafe(one_instance_sql(shadow))).bind(uuid.0.clone());
                    if shadow { q.bind(uuid.0.clone()) } else { q }
                },
                true,
            )
            .await?;
        Ok(self.instances(&rows)?.into_iter().next())
    }

    fn instances(&self, rows: &[MySqlRow]) -> Result<Vec<NovaInstance>> {
        rows.iter()
            .map(|row| self.instance(row))
            .filter(|i| !matches!(i, Ok(i) if i.uuid.as_str() == FAKE_UUID))
            .collect()
    }

    fn instance(&self, row: &MySqlRow) -> Result<NovaInstance> {
        let cell = self.cell;
        let get = |e| cell.error(e);
        let uuid = InstanceUuid(row.try_get("uuid").map_err(get)?);
        let deleted: Option<i64> = row.try_get("deleted").map_err(get)?;
        let archived: i64 = row.try_get("archived").map_err(get)?;
        let created_at: Option<NaiveDateTime> = row.try_get("created_at").map_err(get)?;
        let Some(created_at) = created_at else {
            return Err(Error::Record {
                instance: uuid,
                reason: "its created_at is NULL".to_owned(),
            });
        };
        Ok(NovaInstance {
            project_id: row
                .try_get::<Option<String>, _>("project_id")
                .map_err(get)?
                .unwrap_or_default(),
            host: row.try_get("host").map_err(get)?,
            vm_state: row.try_get("vm_state").map_err(get)?,
            task_state: row.try_get("task_state").map_err(get)?,
            deleted: archived != 0 || deleted.unwrap_or(0) != 0,
            deleted_at: row
                .try_get::<Option<NaiveDateTime>, _>("deleted_at")
                .map_err(get)?
                .map(utc),
            created_at: utc(created_at),
            cell: cell.name.clone(),
            uuid,
        })
    }

    /// `instances` with their VIF rows, caches and actions; with `shadow`, the
    /// archived ones too.
    pub(super) async fn records(&mut self, instances: Vec<NovaInstance>, shadow: bool) -> Result<Vec<InstanceRecords>> {
        let uuids: Vec<String> = instances.iter().map(|i| i.uuid.0.clone()).collect();
        let index: HashMap<&str, usize> = uuids.iter().enumerate().map(|(n, u)| (u.as_str(), n)).collect();
        let mut records: Vec<InstanceRecords> = instances
            .into_iter()
            .map(|instance| InstanceRecords {
                instance,
                vifs: Vec::new(),
                cache: Vec::new(),
                actions: Vec::new(),
            })
            .collect();
        let mut cached: HashSet<usize> = HashSet::new();
        let cell = self.cell;
        let get = |e| cell.error(e);

        for chunk in uuids.chunks(IN_LIST) {
            let in_list = |sql: fn(usize, bool) -> String| {
                move |shadow: bool| {
                    let mut q = sqlx::query(AssertSqlSafe(sql(chunk.len(), shadow)));
                    for _ in 0..if shadow { 2 } else { 1 } {
                        for uuid in chunk {
                            q = q.bind(uuid.clone());
                        }
                    }
                    q
                }
            };

            for row in self.fetch(in_list(vifs_sql), shadow).await? {
                let owner: String = row.try_get("instance_uuid").map_err(get)?;
                let Some(&n) = index.get(owner.as_str()) else { continue };
                let port: Option<String> = row.try_get("uuid").map_err(get)?;
                let created_at: Option<NaiveDateTime> = row.try_get("created_at").map_err(get)?;
                let (Some(port), Some(created_at)) = (port, created_at) else {
                    return Err(record(
                        &records[n],
                        "a virtual_interfaces row has no uuid or created_at",
                    ));
                };
                records[n].vifs.push(NovaVif {
                    port_id: PortId(port),
                    created_at: utc(created_at),
                    deleted: row.try_get::<Option<i64>, _>("deleted").map_err(get)?.unwrap_or(0) != 0,
                });
            }

            for row in self.fetch(in_list(caches_sql), shadow).await? {
                let owner: String = row.try_get("instance_uuid").map_err(get)?;
                let Some(&n) = index.get(owner.as_str()) else { continue };
                // Its row in `instance_info_caches` first: an archived copy is older.
                if !cached.insert(n) {
                    continue;
                }
                let text: Option<String> = row.try_get("network_info").map_err(get)?;
                records[n].cache = cache::parse(&records[n].instance.uuid, text.as_deref())?;
            }

            for row in self.fetch(in_list(actions_sql), shadow).await? {
                let owner: String = row.try_get("instance_uuid").map_err(get)?;
                let Some(&n) = index.get(owner.as_str()) else { continue };
                let start: Option<NaiveDateTime> = row.try_get("start_time").map_err(get)?;
                let Some(start) = start else {
                    return Err(record(&records[n], "an instance_actions row has no start_time"));
                };
                let events: i64 = row.try_get("events").map_err(get)?;
                let running: Option<i64> = row.try_get("running").map_err(get)?;
                let finish: Option<NaiveDateTime> = if events == 0 {
                    row.try_get("finish_time").map_err(get)?
                } else if running.unwrap_or(0) != 0 {
                    None
                } else {
                    row.try_get("last_finish").map_err(get)?
                };
                records[n].actions.push(NovaAction {
                    action: row
                        .try_get::<Option<String>, _>("action")
                        .map_err(get)?
                        .unwrap_or_default(),
                    request_id: row
                        .try_get::<Option<String>, _>("request_id")
                        .map_err(get)?
                        .unwrap_or_default(),
                    start_time: utc(start),
                    finish_time: finish.map(utc),
                });
            }
        }
        Ok(records)
    }
}

fn record(records: &InstanceRecords, reason: &str) -> Error {
    Error::Record {
        instance: records.instance.uuid.clone(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_tables_are_read_only_with_shadow() {
        assert!(!vifs_sql(2, false).contains("shadow_"));
        let sql = actions_sql(2, true);
        assert!(
            sql.contains("FROM shadow_instance_actions a LEFT JOIN shadow_instance_actions_events e"),
            "{sql}"
        );
        assert_eq!(sql.matches('?').count(), 4);
        assert_eq!(deleted_page_sql(true).matches('?').count(), 7);
        assert_eq!(one_instance_sql(true).matches('?').count(), 2);
    }
}
