//! netcache for an existing Nova cloud: what Nova's own records prove about
//! the ports carrying an instance's `device_id` ([`audit_instance`]), and when
//! GC may act on a finding ([`Sightings`]). The I/O is in `netcache-nova`.

mod audit;
mod records;
mod sightings;

#[cfg(test)]
mod tests;

pub use audit::{Finding, FindingKind, GcPlan, InstanceAudit, PortFacts, audit_instance, owned_by_nova};
pub use records::{
    ACTION_RUNS_AT_MOST, ALLOCATING_ACTIONS, CachedVif, InstanceRecords, NovaAction, NovaInstance, NovaVif,
};
pub use sightings::Sightings;
