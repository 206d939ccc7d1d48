//! netcache for an existing Nova cloud, against fakes of Nova's records and
//! the embedded Neutron: the audit's findings, GC's actions and its safety,
//! and the audit's call budget.

mod cleanup;
mod safety;
mod scale;
mod support;
