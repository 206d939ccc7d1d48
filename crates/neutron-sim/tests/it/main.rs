//! The crate's integration tests, one test binary: a module per area.

mod api;
mod common;
mod conformance;
mod faults;
mod notifier;
