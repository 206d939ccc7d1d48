//! The service's wiring and the CLI's commands beneath the binary: settings
//! (defaults < TOML < `NETCACHE_*` < flags), the app that wires the crates into
//! a service (`app`), the one-off commands (`ops`), the companion for an
//! existing Nova cloud (`nova`), the client commands, the demo, and scratch
//! PostgreSQL databases for the tools and tests. The binary (`netcache`) only
//! parses flags and dispatches here, to the bench (`netcache-bench`) and to the
//! chaos harness (`netcache-chaos`).

pub mod app;
pub mod client;
pub mod demo;
pub mod nova;
pub mod ops;
pub mod scratch_pg;
pub mod settings;
