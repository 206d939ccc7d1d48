//! The crate's integration tests, one test binary: a module per area.

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
mod keystone_real;
mod network_visibility;
mod operations;
mod policy;
mod quotas;
mod races;
mod rebuild;
mod secrets_in_logs;
mod security_groups;
mod seed_scenario;
mod server_actions;
mod server_lists;
mod state_actions;
mod two_processes;
