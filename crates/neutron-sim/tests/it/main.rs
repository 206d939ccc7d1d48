//! The crate's integration tests, one test binary: a module per area. The HTTP
//! conformance cases are the `conformance` target.

mod api;
mod common;
mod faults;
mod notifier;
