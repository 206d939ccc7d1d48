//! The crate's integration tests, one test binary: a module per area
//! (`tests/metrics.rs` stays apart: it owns the process-wide metrics recorder).

mod against_sim;
mod http_client;
