//! The crate's integration tests, one test binary: a module per area.

mod attaches;
mod audit;
mod boots;
mod edits;
mod event_races;
mod gc;
mod heal;
mod heal_shards;
mod late_binds;
mod passes;
mod plug_events;
mod resumed_builds;
mod runner;
mod server_groups;
mod services;
mod support;
