//! The crate's tests that need something outside the process: a PostgreSQL
//! server (`NETCACHE_TEST_PG_URL`: two processes on one database, heal shared
//! by three, chaos with several processes) or a real Keystone (`NETCACHE_TEST_KEYSTONE_URL`). A
//! `harness = false` target (`netcache-testenv`): each test is an
//! `async fn(value_of_the_variable)` listed below; without its variable it is
//! reported ignored, with `NETCACHE_TEST_REQUIRE_ENV=1` failed. A `#[test]` here
//! would never run.

#[path = "../it/common/mod.rs"]
mod common;

mod chaos;
mod heal_shards;
mod keystone_real;
mod two_processes;

use std::process::ExitCode;

use netcache_testenv::{KEYSTONE_URL, PG_URL, needs_env};

fn main() -> ExitCode {
    netcache_testenv::run(vec![
        needs_env!(
            PG_URL,
            two_processes::a_restarting_process_leaves_a_live_processs_build_alone
        ),
        needs_env!(
            PG_URL,
            two_processes::an_attach_through_one_process_and_a_delete_through_the_other_leak_nothing
        ),
        needs_env!(PG_URL, two_processes::a_build_sees_plug_events_the_other_process_took),
        needs_env!(
            PG_URL,
            two_processes::a_lost_node_lock_stops_new_work_until_it_is_held_again
        ),
        needs_env!(
            PG_URL,
            heal_shards::three_processes_share_a_heal_sweep_and_a_dead_ones_shard
        ),
        needs_env!(
            PG_URL,
            chaos::a_short_postgres_run_with_two_processes_and_three_kills_violates_no_invariant
        ),
        needs_env!(KEYSTONE_URL, keystone_real::real_keystone_tokens_decide_who_does_what),
    ])
}
