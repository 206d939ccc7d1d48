//! Tidy tests: rules of the code base that `cargo test --workspace` checks, so
//! that review need not. Each rule reads the workspace's files as text and is
//! shown failing on a small example of its breach:
//!
//! - [`circles`]: no module of a crate names (by a `crate::` path) a module
//!   that names it back, directly or round a longer circle;
//! - [`domain_purity`]: `netcache-domain` reads no clock, draws no random
//!   number and does no I/O (ids and times are passed in), and depends only
//!   on data crates;
//! - [`sleeps`]: test code waits only through `netcache_testenv::poll`; any
//!   other sleep says why on the line before (`// tidy: allow sleep — …`);
//! - [`narrow_interfaces`]: the API's handlers reach compute only through its
//!   narrow traits, which only `AppState` names;
//! - [`invariants`]: every numbered invariant of `docs/ARCHITECTURE.md` is
//!   cited (`invariant N`) by a test, and every test it names exists.

#[cfg(test)]
mod circles;
#[cfg(test)]
mod domain_purity;
#[cfg(test)]
mod invariants;
#[cfg(test)]
mod narrow_interfaces;
#[cfg(test)]
mod sleeps;
#[cfg(test)]
mod source;
