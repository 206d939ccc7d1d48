//! The crate's integration tests, one test binary: a module per area. Tests that
//! need PostgreSQL or a real Keystone are in the `external` target; the start-up
//! log's test is in `startup_log`, alone in its process.

mod chaos;
mod cli;
mod common;
mod compute_api;
mod connections;
mod crash_safety;
mod database_outage;
mod demo;
mod e2e;
mod events_audit;
mod keystone_auth;
mod network_visibility;
mod neutron_down;
mod operations;
mod policy;
mod quotas;
mod races;
mod rebuild;
mod security_groups;
mod seed_scenario;
mod server_actions;
mod server_lists;
mod state_actions;
