//! Store conformance: every case runs on SQLite (a temp file and `sqlite::memory:`)
//! and, when `NETCACHE_TEST_PG_URL` is set (e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`), on PostgreSQL in a scratch
//! database per case; without it the PostgreSQL trials are reported ignored
//! (`NETCACHE_TEST_REQUIRE_ENV=1`: failed). A `harness = false` target
//! (`netcache-testenv`): a test here is a trial listed in `main`, a `#[test]`
//! would never run.

mod cases;
mod fixtures;
mod harness;
mod plans;
mod size;

use std::process::ExitCode;

use harness::conformance;
use netcache_testenv::{block_on, plain};

fn main() -> ExitCode {
    let mut trials = cases();
    trials.extend([
        plain("open::unknown_schemes_are_refused", || {
            block_on(open::unknown_schemes_are_refused());
        }),
        plain("open::one_process_owns_a_sqlite_file", || {
            block_on(open::one_process_owns_a_sqlite_file());
        }),
        plain("open::sqlite_file_is_created_durable_and_shared", || {
            block_on(open::sqlite_file_is_created_durable_and_shared());
        }),
        plain(
            "size::a_purge_after_3000_cycles_brings_the_database_back_within_10_percent",
            || block_on(size::a_purge_after_3000_cycles_brings_the_database_back_within_10_percent()),
        ),
    ]);
    trials.extend(plans::trials());
    netcache_testenv::run(trials)
}

conformance!(
    deployment_id_is_generated_once_and_stable,
    deployment_ids_differ_between_databases,
    servers_round_trip_every_field,
    timestamps_keep_microseconds_and_sort_in_time_order,
    servers_are_oldest_first_and_filtered,
    sorted_pages_are_keyset_pages_in_the_orders_of_novas_sort_keys,
    watched_servers_are_the_live_and_the_recently_deleted,
    update_server_compares_and_swaps_the_generation,
    access_ips_are_set_and_cleared_with_the_row,
    vifs_round_trip_by_position,
    missing_vifs_are_not_found,
    a_port_is_in_at_most_one_servers_records,
    releasing_vifs_span_servers,
    vifs_and_caches_of_a_set_of_servers_cost_one_statement_per_128,
    what_heal_found_of_a_cache_stands_at_its_generation_only,
    intents_round_trip_in_every_state,
    update_intent_requires_the_expected_state,
    pending_intents_span_servers_oldest_first,
    cache_writes_compare_and_swap_on_generation,
    actions_are_newest_first_with_events_in_order,
    ghost_sightings_upsert_by_port,
    a_failed_batch_applies_nothing,
    data_survives_reopen,
    concurrent_writers_on_one_row_one_wins,
    one_operation_per_server_with_a_fenced_owner,
    expired_leases_are_claimed_once_and_live_ones_never,
    a_renewed_lease_is_never_claimed,
    failed_attempts_are_recorded_by_the_owner,
    singleton_leases_have_one_holder,
    singleton_leases_expire_on_the_databases_clock,
    a_nodes_next_incarnation_releases_the_leases_of_its_earlier_ones,
    vif_changes_advance_the_cache_generation,
    ghost_sightings_skip_recorded_ports_and_busy_servers,
    keypairs_round_trip_per_user_by_name,
    a_keypair_name_is_unique_per_user,
    deleting_a_keypair_is_per_user_and_missing_ones_are_not_found,
    quota_limits_round_trip_per_project_and_user,
    quota_classes_round_trip_and_the_default_one_comes_with_a_projects_limits,
    a_claim_is_held_to_the_default_class_read_in_its_batch,
    quota_usage_counts_live_servers_and_key_pairs,
    a_quota_claim_applies_its_batch_only_if_it_fits,
    racing_quota_claims_never_pass_the_limit,
    the_built_in_flavors_are_seeded,
    flavors_round_trip_and_are_unique_among_live_ones,
    flavor_access_and_extra_specs_change_only_live_flavors,
    a_server_keeps_its_flavor_snapshot_and_is_counted_from_it,
    purge_removes_old_deleted_servers_with_their_rows_and_nothing_else,
    services_are_registered_once_per_host_by_any_process,
    a_service_is_up_while_its_heartbeat_is_ahead_of_the_databases_clock,
    service_changes_compare_and_swap_and_feed_the_scheduler,
    live_servers_are_counted_per_host_and_flavor,
    usage_windows_hold_the_servers_that_ran_in_them_by_project_then_id,
    server_groups_round_trip_per_project_and_are_deleted_with_their_members,
    group_members_are_live_servers_in_join_order,
    a_group_placement_is_recorded_only_at_the_generation_read,
    racing_placements_in_one_group_one_wins,
    a_server_group_claim_applies_only_if_it_fits,
    aggregates_round_trip_with_hosts_and_metadata,
    an_aggregate_name_is_unique_across_processes,
    racing_aggregate_writes_one_wins,
);

/// Not per backend: what `open` accepts.
mod open {
    use netcache_store::{Error, SqliteStore};

    pub async fn unknown_schemes_are_refused() {
        for url in [
            "mysql://root@localhost/netcache",
            "/var/lib/netcache.db",
            "file:netcache.db",
            "",
        ] {
            match netcache_store::open(url).await {
                Err(Error::UnsupportedUrl(u)) => assert_eq!(u, url),
                Err(other) => panic!("{url:?}: {other}"),
                Ok(_) => panic!("{url:?} opened"),
            }
        }
    }

    pub async fn one_process_owns_a_sqlite_file() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("owned.db").display());
        let first = netcache_store::open(&url).await.unwrap();
        let second = netcache_store::open(&url).await.unwrap();
        let lock = first.lock_node("host1").await.unwrap();
        match second.lock_node("other-hosts").await {
            Err(Error::NodeBusy(message)) => assert!(message.contains("owned.db"), "{message}"),
            other => panic!("a second owner was let in: {other:?}"),
        }
        drop(lock);
        second.lock_node("other-hosts").await.unwrap();
    }

    pub async fn sqlite_file_is_created_durable_and_shared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh.db");
        assert!(!path.exists());
        let url = format!("sqlite:{}", path.display());
        let store = SqliteStore::open(&url).await.unwrap();
        assert!(path.exists());

        let (journal,): (String,) = sqlx::query_as("PRAGMA journal_mode")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(journal, "wal");
        // 2 = FULL: the WAL is fsynced at every commit.
        let (synchronous,): (i64,) = sqlx::query_as("PRAGMA synchronous")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(synchronous, 2);
        let (foreign_keys,): (i64,) = sqlx::query_as("PRAGMA foreign_keys")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(foreign_keys, 1);
    }
}
