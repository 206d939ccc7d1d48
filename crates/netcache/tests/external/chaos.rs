//! `netcache chaos` with two processes sharing PostgreSQL (`NETCACHE_TEST_PG_URL`,
//! CI tier 2), kill -9 included: a short fixed-seed run that must end without a
//! violated invariant. CI's chaos tier adds runs of a seed that changes with every
//! commit (`scripts/chaos-soak.sh`).

use crate::common::chaos::{assert_clean, chaos};

pub async fn a_short_postgres_run_with_two_processes_and_three_kills_violates_no_invariant(url: String) {
    let output = chaos(&[
        "--seed",
        "9002",
        "--ops",
        "300",
        "--rate",
        "20",
        "--concurrency",
        "4",
        "--processes",
        "2",
        "--database",
        &url,
        "--kills",
        "3",
        "--settle-timeout",
        "45",
        "--request-timeout",
        "20",
    ]);
    assert_clean(&output);
}
