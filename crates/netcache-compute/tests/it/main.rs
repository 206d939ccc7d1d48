//! The crate's integration tests, one test binary: a module per area.

mod gc;
mod heal;
mod support;
