//! The crate's integration tests, one test binary: a module per area.

mod boots;
mod edits;
mod gc;
mod heal;
mod passes;
mod support;
