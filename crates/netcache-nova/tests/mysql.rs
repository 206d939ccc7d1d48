//! [`MysqlNova`] against a real MySQL or MariaDB (`NETCACHE_TEST_MYSQL_URL`,
//! e.g. `mysql://root@127.0.0.1:3306`, a user that may create databases): each
//! trial makes scratch databases shaped as Nova's (the columns the reader reads,
//! with Nova's names, types, keys and charset), fills them, reads them through
//! [`MysqlNova`] and drops them. A `harness = false` target
//! (`netcache-testenv`): without the variable each trial is reported ignored,
//! with `NETCACHE_TEST_REQUIRE_ENV=1` failed.

use std::future::Future;
use std::process::ExitCode;

use chrono::{DateTime, NaiveDateTime, Utc};
use netcache_domain::nova::{InstanceRecords, NovaAction};
use netcache_domain::{InstanceUuid, NetworkId, PortId};
use netcache_nova::{Error, MysqlNova, NovaRecords, Which};
use netcache_testenv::needs_env;
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlPoolOptions};
use sqlx::{AssertSqlSafe, Connection, Executor};
use url::Url;

const MYSQL_URL: &str = "NETCACHE_TEST_MYSQL_URL";

fn main() -> ExitCode {
    netcache_testenv::run(vec![
        needs_env!(MYSQL_URL, reads::pages_follow_the_keyset_and_carry_each_instances_rows),
        needs_env!(
            MYSQL_URL,
            reads::deleted_pages_hold_soft_deleted_and_archived_instances_since_a_time
        ),
        needs_env!(MYSQL_URL, reads::one_instance_is_found_live_deleted_or_archived),
        needs_env!(MYSQL_URL, reads::the_api_database_names_every_cell_cell0_included),
        needs_env!(MYSQL_URL, reads::sessions_are_read_only),
        needs_env!(
            MYSQL_URL,
            reads::an_unreadable_cache_fails_its_read_and_missing_shadow_tables_read_empty
        ),
    ])
}

/// Nova's marker uuid (its online data migration's fake instance and VIF).
const FAKE_UUID: &str = "00000000-0000-0000-0000-000000000000";

/// Live instances, in uuid order: A has VIFs, a cache and actions.
const A: &str = "aaaaaaa1-0000-4000-8000-000000000001";
const LIVE: [&str; 5] = [
    A,
    "aaaaaaa2-0000-4000-8000-000000000002",
    "aaaaaaa3-0000-4000-8000-000000000003",
    "aaaaaaa4-0000-4000-8000-000000000004",
    "aaaaaaa5-0000-4000-8000-000000000005",
];
/// Deleted long ago.
const D0: &str = "d0000000-0000-4000-8000-000000000000";
/// Deleted on 2025-03-10, its rows soft-deleted.
const D1: &str = "d1000000-0000-4000-8000-000000000001";
/// Archived: in the shadow tables, deleted on 2025-03-11.
const S1: &str = "e1000000-0000-4000-8000-000000000001";
/// Deleted on 2025-03-12, no rows.
const D2: &str = "f2000000-0000-4000-8000-000000000002";

fn at(text: &str) -> DateTime<Utc> {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
        .unwrap()
        .and_utc()
}

/// Nova's tables (Nova 34's names, types and keys; only the columns read, and
/// the ids the keys need).
const CELL_SCHEMA: &str = "
CREATE TABLE instances (
  id INT NOT NULL AUTO_INCREMENT,
  created_at DATETIME NULL,
  deleted_at DATETIME NULL,
  deleted INT NULL,
  uuid VARCHAR(36) NOT NULL,
  project_id VARCHAR(255) NULL,
  host VARCHAR(255) NULL,
  vm_state VARCHAR(255) NULL,
  task_state VARCHAR(255) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uniq_instances0uuid (uuid),
  KEY instances_deleted_created_at_idx (deleted, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE virtual_interfaces (
  id INT NOT NULL AUTO_INCREMENT,
  created_at DATETIME NULL,
  deleted INT NULL,
  instance_uuid VARCHAR(36) NULL,
  uuid VARCHAR(36) NULL,
  PRIMARY KEY (id),
  KEY virtual_interfaces_instance_uuid_fkey (instance_uuid),
  KEY virtual_interfaces_uuid_idx (uuid),
  CONSTRAINT virtual_interfaces_instance_uuid_fkey FOREIGN KEY (instance_uuid) REFERENCES instances (uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE instance_info_caches (
  id INT NOT NULL AUTO_INCREMENT,
  deleted INT NULL,
  network_info MEDIUMTEXT NULL,
  instance_uuid VARCHAR(36) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uniq_instance_info_caches0instance_uuid (instance_uuid),
  CONSTRAINT instance_info_caches_instance_uuid_fkey FOREIGN KEY (instance_uuid) REFERENCES instances (uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE instance_actions (
  id INT NOT NULL AUTO_INCREMENT,
  action VARCHAR(255) NULL,
  instance_uuid VARCHAR(36) NULL,
  request_id VARCHAR(255) NULL,
  start_time DATETIME NULL,
  finish_time DATETIME NULL,
  PRIMARY KEY (id),
  KEY instance_uuid_idx (instance_uuid),
  CONSTRAINT fk_instance_actions_instance_uuid FOREIGN KEY (instance_uuid) REFERENCES instances (uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE instance_actions_events (
  id INT NOT NULL AUTO_INCREMENT,
  action_id INT NULL,
  finish_time DATETIME NULL,
  PRIMARY KEY (id),
  CONSTRAINT instance_actions_events_ibfk_1 FOREIGN KEY (action_id) REFERENCES instance_actions (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
";

/// Nova's shadow tables: the same columns, no foreign keys.
const SHADOW_SCHEMA: &str = "
CREATE TABLE shadow_instances (
  id INT NOT NULL, created_at DATETIME NULL, deleted_at DATETIME NULL, deleted INT NULL,
  uuid VARCHAR(36) NOT NULL, project_id VARCHAR(255) NULL, host VARCHAR(255) NULL,
  vm_state VARCHAR(255) NULL, task_state VARCHAR(255) NULL,
  PRIMARY KEY (id), KEY shadow_instances_uuid_idx (uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE shadow_virtual_interfaces (
  id INT NOT NULL, created_at DATETIME NULL, deleted INT NULL,
  instance_uuid VARCHAR(36) NULL, uuid VARCHAR(36) NULL,
  PRIMARY KEY (id), KEY shadow_virtual_interfaces_instance_uuid_fkey (instance_uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE shadow_instance_info_caches (
  id INT NOT NULL, deleted INT NULL, network_info MEDIUMTEXT NULL, instance_uuid VARCHAR(36) NOT NULL,
  PRIMARY KEY (id), KEY shadow_instance_info_caches_instance_uuid_idx (instance_uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE shadow_instance_actions (
  id INT NOT NULL, action VARCHAR(255) NULL, instance_uuid VARCHAR(36) NULL,
  request_id VARCHAR(255) NULL, start_time DATETIME NULL, finish_time DATETIME NULL,
  PRIMARY KEY (id), KEY instance_uuid_idx (instance_uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE shadow_instance_actions_events (
  id INT NOT NULL, action_id INT NULL, finish_time DATETIME NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
";

/// The API database's table of cells (its columns read, and its keys).
const API_SCHEMA: &str = "
CREATE TABLE cell_mappings (
  id INT NOT NULL AUTO_INCREMENT,
  uuid VARCHAR(36) NOT NULL,
  name VARCHAR(255) NULL,
  database_connection MEDIUMTEXT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uniq_cell_mappings0uuid (uuid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
";

/// A's cache: two VIFs, the first given to Nova (`preserve_on_delete`), with
/// an IPv4 and an IPv6 address and a floating IP; the second without the key.
const A_CACHE: &str = r#"[
 {"id": "port-a1", "address": "fa:16:3e:00:00:01", "type": "ovs", "devname": "tapport-a1", "active": true,
  "network": {"id": "net-1", "label": "private", "bridge": "br-int", "meta": {"mtu": 1450},
   "subnets": [
    {"cidr": "10.0.0.0/24", "gateway": {"address": "10.0.0.1", "type": "gateway"},
     "ips": [{"address": "10.0.0.5", "type": "fixed", "version": 4, "meta": {},
              "floating_ips": [{"address": "172.24.4.9", "type": "floating", "version": 4}]}]},
    {"cidr": "fd00::/64", "ips": [{"address": "fd00::5", "type": "fixed", "version": 6}]}]},
  "details": {"port_filter": true}, "vnic_type": "normal", "preserve_on_delete": true},
 {"id": "port-a2", "address": "fa:16:3e:00:00:02",
  "network": {"id": "net-2", "subnets": [{"cidr": "10.1.0.0/24", "ips": [{"address": "10.1.0.7"}]}]}}
]"#;

/// One Nova cell: live instances with rows, soft-deleted ones, an archived
/// one, and Nova's marker instance and VIF.
fn cell_rows() -> String {
    let mut sql = String::new();
    for (n, uuid) in LIVE.iter().enumerate() {
        sql += &format!(
            "INSERT INTO instances (created_at, deleted, uuid, project_id, host, vm_state, task_state) \
             VALUES ('2025-03-01 12:00:0{n}', 0, '{uuid}', 'demo', 'compute-1', 'active', NULL);\n"
        );
    }
    sql += &format!(
        "UPDATE instances SET task_state = 'rebooting' WHERE uuid = '{}';
INSERT INTO virtual_interfaces (id, created_at, deleted, instance_uuid, uuid) VALUES
  (11, '2025-03-01 12:00:03', 0, '{A}', 'port-a1'),
  (12, '2025-03-02 08:30:00', 0, '{A}', 'port-a2');
INSERT INTO instance_info_caches (deleted, network_info, instance_uuid) VALUES
  (0, '{A_CACHE}', '{A}'), (0, NULL, '{}'), (0, '', '{}'), (0, '[]', '{}');
INSERT INTO instance_actions (id, action, instance_uuid, request_id, start_time, finish_time) VALUES
  (21, 'create', '{A}', 'req-create', '2025-03-01 12:00:00', NULL),
  (22, 'attach_interface', '{A}', 'req-attach', '2025-03-02 08:29:58', NULL),
  (23, 'reboot', '{A}', 'req-reboot', '2025-03-03 09:00:00', '2025-03-03 09:00:30');
INSERT INTO instance_actions_events (action_id, finish_time) VALUES
  (21, '2025-03-01 12:00:05'), (21, '2025-03-01 12:00:09'),
  (22, '2025-03-02 08:30:01'), (22, NULL);
",
        LIVE[1], LIVE[2], LIVE[3], LIVE[4],
    );
    // Soft-deleted (Nova's `deleted` is the row's id), D1 with its rows.
    sql += &format!(
        "INSERT INTO instances (id, created_at, deleted_at, deleted, uuid, project_id, host, vm_state) VALUES
  (100, '2024-12-01 10:00:00', '2025-01-01 00:00:00', 100, '{D0}', 'demo', 'compute-1', 'deleted'),
  (101, '2025-03-05 10:00:00', '2025-03-10 00:00:00', 101, '{D1}', 'demo', 'compute-2', 'deleted'),
  (102, '2025-03-06 10:00:00', '2025-03-12 00:00:00', 102, '{D2}', 'other', NULL, 'deleted'),
  (103, '2025-03-01 00:00:00', '2025-03-12 00:00:00', 103, '{FAKE_UUID}', '', NULL, NULL);
INSERT INTO virtual_interfaces (id, created_at, deleted, instance_uuid, uuid) VALUES
  (13, '2025-03-05 10:00:01', 13, '{D1}', 'port-d1'),
  (14, '2025-03-01 00:00:00', 0, '{FAKE_UUID}', '{FAKE_UUID}');
INSERT INTO instance_info_caches (deleted, network_info, instance_uuid) VALUES
  (5, '[{{\"id\": \"port-d1\", \"network\": {{\"id\": \"net-1\", \"subnets\": []}}}}]', '{D1}');
INSERT INTO instance_actions (id, action, instance_uuid, request_id, start_time, finish_time) VALUES
  (24, 'create', '{D1}', 'req-d1-create', '2025-03-05 10:00:00', NULL),
  (25, 'delete', '{D1}', 'req-d1-delete', '2025-03-09 23:59:58', NULL);
INSERT INTO instance_actions_events (action_id, finish_time) VALUES
  (24, '2025-03-05 10:00:20'), (25, '2025-03-10 00:00:00');
"
    );
    sql
}

/// S1, archived by `nova-manage db archive_deleted_rows`.
fn shadow_rows() -> String {
    format!(
        "INSERT INTO shadow_instances (id, created_at, deleted_at, deleted, uuid, project_id, host, vm_state) VALUES
  (90, '2025-03-07 10:00:00', '2025-03-11 00:00:00', 90, '{S1}', 'demo', 'compute-1', 'deleted');
INSERT INTO shadow_virtual_interfaces (id, created_at, deleted, instance_uuid, uuid) VALUES
  (9, '2025-03-07 10:00:02', 0, '{S1}', 'port-s1');
INSERT INTO shadow_instance_info_caches (id, deleted, network_info, instance_uuid) VALUES
  (9, 9, '[{{\"id\": \"port-s1\", \"network\": {{\"id\": \"net-3\", \"subnets\": [{{\"ips\": [{{\"address\": \"10.3.0.4\"}}]}}]}}, \"preserve_on_delete\": false}}]', '{S1}');
INSERT INTO shadow_instance_actions (id, action, instance_uuid, request_id, start_time, finish_time) VALUES
  (9, 'create', '{S1}', 'req-s1-create', '2025-03-07 10:00:00', '2025-03-07 10:00:40');
INSERT INTO shadow_instance_actions_events (id, action_id, finish_time) VALUES (9, 9, '2025-03-07 10:00:30');
"
    )
}

mod reads {
    use super::*;

    pub async fn pages_follow_the_keyset_and_carry_each_instances_rows(server: String) {
        with_server(server, |server| async move {
            let url = server
                .database("cell1", &[CELL_SCHEMA, SHADOW_SCHEMA, &cell_rows(), &shadow_rows()])
                .await;
            let nova = MysqlNova::connect(vec![("cell1".to_owned(), url)]).await.unwrap();
            assert_eq!(nova.cells(), vec!["cell1".to_owned()]);

            let pages = all_pages(&nova, "cell1", Which::Live, 2).await;
            assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2, 1]);
            let live: Vec<InstanceRecords> = pages.into_iter().flatten().collect();
            assert_eq!(uuids(&live), LIVE.to_vec(), "in uuid order, each once, none deleted");
            assert!(live.iter().all(|r| !r.instance.deleted && r.instance.cell == "cell1"));

            let a = &live[0];
            assert_eq!(a.instance.project_id, "demo");
            assert_eq!(a.instance.host.as_deref(), Some("compute-1"));
            assert_eq!(a.instance.vm_state.as_deref(), Some("active"));
            assert_eq!(a.instance.task_state, None);
            assert_eq!(
                a.instance.created_at,
                at("2025-03-01 12:00:00"),
                "naive UTC read as UTC"
            );
            assert_eq!(a.instance.deleted_at, None);
            assert_eq!(
                a.vifs
                    .iter()
                    .map(|v| (v.port_id.as_str(), v.created_at, v.deleted))
                    .collect::<Vec<_>>(),
                vec![
                    ("port-a1", at("2025-03-01 12:00:03"), false),
                    ("port-a2", at("2025-03-02 08:30:00"), false)
                ]
            );
            assert_eq!(a.cache.len(), 2);
            assert_eq!(a.cache[0].port_id, PortId::from("port-a1"));
            assert_eq!(a.cache[0].network_id, Some(NetworkId::from("net-1")));
            assert_eq!(
                a.cache[0].addresses,
                vec![
                    "10.0.0.5".parse::<std::net::IpAddr>().unwrap(),
                    "fd00::5".parse().unwrap()
                ],
                "fixed addresses, not floating ones"
            );
            assert!(a.cache[0].preserve_on_delete);
            assert_eq!(a.cache[1].port_id, PortId::from("port-a2"));
            assert_eq!(
                a.cache[1].addresses,
                vec!["10.1.0.7".parse::<std::net::IpAddr>().unwrap()]
            );
            assert!(!a.cache[1].preserve_on_delete, "absent: false");
            assert_eq!(
                a.actions,
                vec![
                    action(
                        "create",
                        "req-create",
                        "2025-03-01 12:00:00",
                        Some("2025-03-01 12:00:09")
                    ),
                    action("attach_interface", "req-attach", "2025-03-02 08:29:58", None),
                    action(
                        "reboot",
                        "req-reboot",
                        "2025-03-03 09:00:00",
                        Some("2025-03-03 09:00:30")
                    ),
                ],
                "the latest event's finish; none while one runs; the action's own without events"
            );
            assert_eq!(live[1].instance.task_state.as_deref(), Some("rebooting"));
            for other in &live[1..] {
                assert!(
                    other.vifs.is_empty() && other.cache.is_empty() && other.actions.is_empty(),
                    "{other:?}"
                );
            }

            // One page holding them all is the same records.
            let one_page = nova.instances("cell1", Which::Live, None, 100).await.unwrap();
            assert_eq!(one_page, live);
            let after_last = nova
                .instances("cell1", Which::Live, Some(&InstanceUuid::from(LIVE[4])), 2)
                .await
                .unwrap();
            assert!(after_last.is_empty());
            assert!(matches!(
                nova.instances("cell9", Which::Live, None, 2).await,
                Err(Error::Config(_))
            ));
        })
        .await;
    }

    pub async fn deleted_pages_hold_soft_deleted_and_archived_instances_since_a_time(server: String) {
        with_server(server, |server| async move {
            let url = server
                .database("cell1", &[CELL_SCHEMA, SHADOW_SCHEMA, &cell_rows(), &shadow_rows()])
                .await;
            let nova = MysqlNova::connect(vec![("cell1".to_owned(), url)]).await.unwrap();

            // One a page: the keyset goes from `instances` to `shadow_instances` and back.
            let since = Which::DeletedSince(at("2025-03-10 00:00:00"));
            let pages = all_pages(&nova, "cell1", since, 1).await;
            let deleted: Vec<InstanceRecords> = pages.into_iter().flatten().collect();
            assert_eq!(
                uuids(&deleted),
                vec![D1, S1, D2],
                "since the time (inclusive), no marker instance"
            );
            assert_eq!(nova.instances("cell1", since, None, 10).await.unwrap(), deleted);
            assert!(deleted.iter().all(|r| r.instance.deleted));

            let d1 = &deleted[0];
            assert_eq!(d1.instance.deleted_at, Some(at("2025-03-10 00:00:00")));
            assert_eq!(d1.instance.host.as_deref(), Some("compute-2"));
            assert_eq!(
                d1.vifs
                    .iter()
                    .map(|v| (v.port_id.as_str(), v.deleted))
                    .collect::<Vec<_>>(),
                vec![("port-d1", true)],
                "a soft-deleted VIF row is read, deleted"
            );
            assert_eq!(
                d1.cache.iter().map(|c| c.port_id.as_str()).collect::<Vec<_>>(),
                vec!["port-d1"],
                "the soft-deleted cache is read"
            );
            assert_eq!(
                d1.actions,
                vec![
                    action(
                        "create",
                        "req-d1-create",
                        "2025-03-05 10:00:00",
                        Some("2025-03-05 10:00:20")
                    ),
                    action(
                        "delete",
                        "req-d1-delete",
                        "2025-03-09 23:59:58",
                        Some("2025-03-10 00:00:00")
                    ),
                ]
            );

            let s1 = &deleted[1];
            assert_eq!(s1.instance.deleted_at, Some(at("2025-03-11 00:00:00")));
            assert_eq!(s1.instance.created_at, at("2025-03-07 10:00:00"));
            assert_eq!(
                s1.vifs
                    .iter()
                    .map(|v| (v.port_id.as_str(), v.created_at))
                    .collect::<Vec<_>>(),
                vec![("port-s1", at("2025-03-07 10:00:02"))],
                "archived rows are read from the shadow tables"
            );
            assert_eq!(s1.cache.len(), 1);
            assert_eq!(s1.cache[0].network_id, Some(NetworkId::from("net-3")));
            assert_eq!(
                s1.cache[0].addresses,
                vec!["10.3.0.4".parse::<std::net::IpAddr>().unwrap()]
            );
            assert_eq!(
                s1.actions,
                vec![action(
                    "create",
                    "req-s1-create",
                    "2025-03-07 10:00:00",
                    Some("2025-03-07 10:00:30")
                )]
            );
            let d2 = &deleted[2];
            assert_eq!(
                (d2.instance.project_id.as_str(), d2.instance.host.as_deref()),
                ("other", None)
            );

            let later = nova
                .instances("cell1", Which::DeletedSince(at("2025-03-10 00:00:01")), None, 10)
                .await
                .unwrap();
            assert_eq!(uuids(&later), vec![S1, D2]);
            let all = nova
                .instances("cell1", Which::DeletedSince(at("2024-01-01 00:00:00")), None, 10)
                .await
                .unwrap();
            assert_eq!(uuids(&all), vec![D0, D1, S1, D2], "the marker instance never");
        })
        .await;
    }

    pub async fn one_instance_is_found_live_deleted_or_archived(server: String) {
        with_server(server, |server| async move {
            let empty = server.database("cell0", &[CELL_SCHEMA, SHADOW_SCHEMA]).await;
            let url = server
                .database("cell1", &[CELL_SCHEMA, SHADOW_SCHEMA, &cell_rows(), &shadow_rows()])
                .await;
            let nova = MysqlNova::connect(vec![("cell0".to_owned(), empty), ("cell1".to_owned(), url)])
                .await
                .unwrap();
            assert_eq!(nova.cells(), vec!["cell0".to_owned(), "cell1".to_owned()]);

            let live = nova.instances("cell1", Which::Live, None, 10).await.unwrap();
            let a = nova.instance(&InstanceUuid::from(A)).await.unwrap().unwrap();
            assert_eq!(a, live[0], "the same records as its page's");

            let deleted = nova
                .instances("cell1", Which::DeletedSince(at("2024-01-01 00:00:00")), None, 10)
                .await
                .unwrap();
            for expected in &deleted {
                let found = nova.instance(&expected.instance.uuid).await.unwrap();
                assert_eq!(found.as_ref(), Some(expected), "{}", expected.instance.uuid);
            }
            let s1 = nova.instance(&InstanceUuid::from(S1)).await.unwrap().unwrap();
            assert_eq!((s1.instance.cell.as_str(), s1.instance.deleted), ("cell1", true));
            assert_eq!(s1.vifs.len(), 1, "archived rows");

            assert_eq!(nova.instance(&InstanceUuid::from(FAKE_UUID)).await.unwrap(), None);
            assert_eq!(
                nova.instance(&InstanceUuid::from("bbbbbbbb-0000-4000-8000-000000000000"))
                    .await
                    .unwrap(),
                None
            );
        })
        .await;
    }

    pub async fn the_api_database_names_every_cell_cell0_included(server: String) {
        with_server(server, |server| async move {
            const FAILED: &str = "c0000000-0000-4000-8000-000000000001";
            const BUILT: &str = "c1000000-0000-4000-8000-000000000001";
            let cell0 = server
                .database(
                    "cell0",
                    &[
                        CELL_SCHEMA,
                        SHADOW_SCHEMA,
                        &format!(
                            "INSERT INTO instances (created_at, deleted, uuid, project_id, host, vm_state) \
                             VALUES ('2025-03-01 12:00:00', 0, '{FAILED}', 'demo', NULL, 'error');"
                        ),
                    ],
                )
                .await;
            let cell1 = server
                .database(
                    "cell1",
                    &[
                        CELL_SCHEMA,
                        SHADOW_SCHEMA,
                        &format!(
                            "INSERT INTO instances (created_at, deleted, uuid, project_id, host, vm_state) \
                             VALUES ('2025-03-01 12:00:00', 0, '{BUILT}', 'demo', 'compute-1', 'active');"
                        ),
                    ],
                )
                .await;
            let oslo = |url: &str, query: &str| {
                let mut url = Url::parse(url).unwrap();
                url.set_scheme("mysql+pymysql").unwrap();
                url.set_query(Some(query));
                url.to_string()
            };
            let rows = format!(
                "INSERT INTO cell_mappings (uuid, name, database_connection) VALUES
                   ('{FAKE_UUID}', 'cell0', '{}'),
                   ('6c1f3a8e-2b7d-4f0e-9d3c-5a2e1b0c9d8f', 'cell1', '{}');",
                oslo(&cell0, "charset=utf8"),
                oslo(&cell1, "charset=utf8&plugin=dbcounter"),
            );
            let api = server.database("api", &[API_SCHEMA, &rows]).await;

            let nova = MysqlNova::from_api_database(&oslo(&api, "charset=utf8")).await.unwrap();
            assert_eq!(nova.cells(), vec!["cell0".to_owned(), "cell1".to_owned()]);
            let failed = nova.instances("cell0", Which::Live, None, 10).await.unwrap();
            assert_eq!(uuids(&failed), vec![FAILED], "cell0's instances are read");
            assert_eq!(failed[0].instance.host, None);
            assert_eq!(
                nova.instance(&InstanceUuid::from(BUILT))
                    .await
                    .unwrap()
                    .unwrap()
                    .instance
                    .cell,
                "cell1"
            );
            assert_eq!(
                nova.instance(&InstanceUuid::from(FAILED))
                    .await
                    .unwrap()
                    .unwrap()
                    .instance
                    .cell,
                "cell0"
            );
        })
        .await;
    }

    /// Invariant 25.
    pub async fn sessions_are_read_only(server: String) {
        with_server(server, |server| async move {
            let url = server
                .database("cell1", &[CELL_SCHEMA, SHADOW_SCHEMA, &cell_rows()])
                .await;
            let nova = MysqlNova::connect(vec![("cell1".to_owned(), url.clone())])
                .await
                .unwrap();
            let pool = nova.pool("cell1").unwrap();
            assert_eq!(pool.options().get_max_connections(), 2);

            // Both of the pool's sessions, in and out of an explicit transaction.
            let mut first = pool.acquire().await.unwrap();
            let mut second = pool.acquire().await.unwrap();
            for conn in [&mut first, &mut second] {
                let conn: &mut MySqlConnection = conn;
                let insert = "INSERT INTO instances (created_at, deleted, uuid, project_id) \
                              VALUES ('2025-03-01 12:00:00', 0, 'bbbbbbbb-0000-4000-8000-000000000000', 'demo')";
                assert_read_only(conn.execute(insert).await);
                assert_read_only(conn.execute("UPDATE instances SET host = 'elsewhere'").await);
                assert_read_only(conn.execute("DELETE FROM instance_actions_events").await);
                assert_read_only(conn.execute("CREATE TABLE written (id INT)").await);
                conn.execute("START TRANSACTION").await.unwrap();
                assert_read_only(conn.execute(insert).await);
                conn.execute("ROLLBACK").await.unwrap();
            }
            drop((first, second));

            let mut admin = MySqlConnection::connect(&url).await.unwrap();
            let (instances, hosts): (i64, i64) =
                sqlx::query_as("SELECT COUNT(*), CAST(COALESCE(SUM(host = 'elsewhere'), 0) AS SIGNED) FROM instances")
                    .fetch_one(&mut admin)
                    .await
                    .unwrap();
            assert_eq!((instances, hosts), (9, 0), "nothing was written");
            admin.close().await.unwrap();

            // Still readable.
            assert_eq!(nova.instances("cell1", Which::Live, None, 10).await.unwrap().len(), 5);

            let mut missing = Url::parse(&url).unwrap();
            missing.set_path(&format!("{}_missing", server.prefix));
            let err = MysqlNova::connect(vec![("cell7".to_owned(), missing.to_string())])
                .await
                .unwrap_err();
            assert!(matches!(&err, Error::Database { cell, .. } if cell == "cell7"), "{err}");
        })
        .await;
    }

    pub async fn an_unreadable_cache_fails_its_read_and_missing_shadow_tables_read_empty(server: String) {
        with_server(server, |server| async move {
            const BAD: &str = "b0000000-0000-4000-8000-000000000001";
            const GONE: &str = "b1000000-0000-4000-8000-000000000001";
            let rows = format!(
                "INSERT INTO instances (created_at, deleted_at, deleted, uuid, project_id) VALUES
                   ('2025-03-01 12:00:00', NULL, 0, '{BAD}', 'demo'),
                   ('2025-03-01 12:00:00', '2025-03-10 00:00:00', 2, '{GONE}', 'demo');
                 INSERT INTO virtual_interfaces (created_at, deleted, instance_uuid, uuid) VALUES
                   ('2025-03-01 12:00:01', 0, '{GONE}', 'port-gone');
                 INSERT INTO instance_info_caches (deleted, network_info, instance_uuid) VALUES
                   (0, '{{\"id\": \"port-bad\"}}', '{BAD}'), (1, '[{{\"id\": \"port-gone\"}}]', '{GONE}');
                 INSERT INTO instance_actions (action, instance_uuid, request_id, start_time, finish_time) VALUES
                   ('create', '{GONE}', 'req-gone', '2025-03-01 12:00:00', '2025-03-01 12:00:10');"
            );
            // No shadow tables.
            let url = server.database("cell1", &[CELL_SCHEMA, &rows]).await;
            let nova = MysqlNova::connect(vec![("cell1".to_owned(), url)]).await.unwrap();

            let err = nova.instances("cell1", Which::Live, None, 10).await.unwrap_err();
            assert!(
                matches!(&err, Error::Record { instance, .. } if instance.as_str() == BAD),
                "{err}"
            );
            assert!(err.to_string().contains(BAD), "{err}");
            let err = nova.instance(&InstanceUuid::from(BAD)).await.unwrap_err();
            assert!(
                matches!(&err, Error::Record { instance, .. } if instance.as_str() == BAD),
                "{err}"
            );

            let gone = nova
                .instances("cell1", Which::DeletedSince(at("2025-03-01 00:00:00")), None, 10)
                .await
                .unwrap();
            assert_eq!(uuids(&gone), vec![GONE]);
            assert_eq!(gone[0].vifs.len(), 1);
            assert_eq!(gone[0].cache[0].port_id, PortId::from("port-gone"));
            assert_eq!(
                gone[0].actions,
                vec![action(
                    "create",
                    "req-gone",
                    "2025-03-01 12:00:00",
                    Some("2025-03-01 12:00:10")
                )]
            );
            assert_eq!(
                nova.instance(&InstanceUuid::from(GONE)).await.unwrap().as_ref(),
                gone.first()
            );
        })
        .await;
    }
}

fn action(action: &str, request_id: &str, start: &str, finish: Option<&str>) -> NovaAction {
    NovaAction {
        action: action.to_owned(),
        request_id: request_id.to_owned(),
        start_time: at(start),
        finish_time: finish.map(at),
    }
}

fn uuids(records: &[InstanceRecords]) -> Vec<&str> {
    records.iter().map(|r| r.instance.uuid.as_str()).collect()
}

/// Every page of `which` in `cell`, `limit` a page, until a short one.
async fn all_pages(nova: &MysqlNova, cell: &str, which: Which, limit: usize) -> Vec<Vec<InstanceRecords>> {
    let mut pages = Vec::new();
    let mut after: Option<InstanceUuid> = None;
    loop {
        let page = nova.instances(cell, which, after.as_ref(), limit).await.unwrap();
        after = page.last().map(|r| r.instance.uuid.clone());
        let last = page.len() < limit;
        if !page.is_empty() {
            pages.push(page);
        }
        if last {
            return pages;
        }
        assert!(pages.len() < 100, "the keyset does not advance");
    }
}

fn assert_read_only<T: std::fmt::Debug>(result: Result<T, sqlx::Error>) {
    let err = result.expect_err("a write through a reader's session succeeded");
    let number = err
        .as_database_error()
        .and_then(|e| e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .map(sqlx::mysql::MySqlDatabaseError::number);
    // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    assert_eq!(number, Some(1792), "{err}");
}

/// The server, and the scratch databases of one trial (`{prefix}_{name}`).
#[derive(Clone)]
struct Server {
    url: Url,
    admin: MySqlPool,
    prefix: String,
}

impl Server {
    /// Creates `{prefix}_{name}`, runs `scripts` in it, and returns its URL.
    async fn database(&self, name: &str, scripts: &[&str]) -> String {
        let db = format!("{}_{name}", self.prefix);
        self.admin
            .execute(AssertSqlSafe(format!("CREATE DATABASE `{db}` CHARACTER SET utf8")))
            .await
            .unwrap();
        let mut url = self.url.clone();
        url.set_path(&db);
        let mut conn = MySqlConnection::connect(url.as_str()).await.unwrap();
        for script in scripts {
            sqlx::raw_sql(AssertSqlSafe(script.to_string()))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        conn.close().await.unwrap();
        url.to_string()
    }

    async fn drop_all(&self) {
        let like = format!("{}\\_%", self.prefix.replace('_', "\\_"));
        let names: Vec<(String,)> =
            sqlx::query_as("SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE ?")
                .bind(like)
                .fetch_all(&self.admin)
                .await
                .unwrap();
        for (name,) in names {
            self.admin
                .execute(AssertSqlSafe(format!("DROP DATABASE `{name}`")))
                .await
                .unwrap();
        }
    }
}

/// Runs `body` with scratch databases of its own, dropped afterwards whether
/// it passed or not.
async fn with_server<F, Fut>(server: String, body: F)
where
    F: FnOnce(Server) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let url = Url::parse(&server).expect("NETCACHE_TEST_MYSQL_URL is a URL");
    let admin = MySqlPoolOptions::new()
        .max_connections(2)
        .connect(url.as_str())
        .await
        .expect("the MySQL server of NETCACHE_TEST_MYSQL_URL");
    let server = Server {
        url,
        admin,
        prefix: format!("netcache_nova_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
    };
    let outcome = tokio::spawn(body(server.clone())).await;
    server.drop_all().await;
    server.admin.close().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}
