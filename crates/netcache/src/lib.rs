//! The `netcache` binary's library: configuration, service wiring, the CLI's
//! client commands and the demo. `main.rs` only parses flags and dispatches.

pub mod app;
pub mod bench;
pub mod chaos;
pub mod client;
pub mod demo;
pub mod nova;
pub mod ops;
pub mod scratch_pg;
pub mod settings;
