//! Which ports of a Nova instance Nova's own records prove it allocated, and
//! what the others are (the rule and its evidence: docs/ARCHITECTURE.md,
//! "netcache for an existing Nova cloud").
//!
//! Nova writes a `virtual_interfaces` row for each port it allocates or is
//! given, inside the build or interface attach that does it; its heal task
//! writes only the info cache (and binds the port in Neutron). So a port in the
//! cache with no VIF row is one heal adopted: a ghost. A VIF row counts only if
//! it was written while an allocating action of the instance ran:
//! `nova-manage db online_data_migrations` rebuilds VIF rows from the cache
//! (`fill_virtual_interface_list`), and such rows prove nothing. Where the rows
//! cannot decide, the finding is `Undecided` and nothing is done.

use std::collections::HashSet;
use std::net::IpAddr;

use chrono::{DateTime, Utc};

use super::records::{ALLOCATING_ACTIONS, InstanceRecords, NovaVif};
use crate::neutron::Port;
use crate::{InstanceUuid, PortId};

/// What a port (or a cache entry, or a VIF row) of an instance is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// In the info cache (Nova shows it), but Nova never allocated it.
    GhostShown,
    /// Carries the instance's `device_id`, Nova never allocated it, the cache does not show it.
    GhostHidden,
    /// Carries the `device_id` of a deleted instance, which never recorded it.
    Leaked,
    /// A cache entry or VIF row whose port no longer exists.
    Stale,
    /// Allocated, existing and bound, but the cache does not show it.
    Missing,
    /// Nova's records cannot decide: nothing is done.
    Undecided,
}

impl FindingKind {
    pub const ALL: [Self; 6] = [
        Self::GhostShown,
        Self::GhostHidden,
        Self::Leaked,
        Self::Stale,
        Self::Missing,
        Self::Undecided,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GhostShown => "ghost_shown",
            Self::GhostHidden => "ghost_hidden",
            Self::Leaked => "leaked",
            Self::Stale => "stale",
            Self::Missing => "missing",
            Self::Undecided => "undecided",
        }
    }

    /// Whether the finding is drift (the audit exits 2); `Undecided` is not.
    #[must_use]
    pub fn is_drift(self) -> bool {
        self != Self::Undecided
    }
}

/// What `netcache nova gc` does with a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GcPlan {
    /// Delete the port (`If-Match` on the judged revision).
    DeletePort,
    /// Delete the port, then tell Nova `network-vif-deleted` so it drops it from its cache.
    DeletePortAndTellNova,
    /// Report only.
    Nothing,
}

impl GcPlan {
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::DeletePort => "delete the port (If-Match on its revision)",
            Self::DeletePortAndTellNova => {
                "delete the port (If-Match on its revision), then tell Nova (network-vif-deleted, network-changed)"
            }
            Self::Nothing => "nothing: reported only",
        }
    }
}

/// The port's state when it was judged, for the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PortFacts {
    pub device_owner: String,
    pub binding_host: Option<String>,
    pub status: String,
    pub addresses: Vec<IpAddr>,
    pub revision: u64,
    pub created_at: Option<DateTime<Utc>>,
}

impl From<&Port> for PortFacts {
    fn from(port: &Port) -> Self {
        Self {
            device_owner: port.device_owner.clone(),
            binding_host: port.binding_host_id.clone().filter(|h| !h.is_empty()),
            status: port.status.clone(),
            addresses: port.fixed_ips.iter().map(|ip| ip.ip_address).collect(),
            revision: port.revision_number,
            created_at: port.created_at,
        }
    }
}

/// One finding of the audit.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub instance: InstanceUuid,
    pub port: Option<PortId>,
    /// The Neutron port as judged; `None` when it no longer exists.
    pub port_facts: Option<PortFacts>,
    /// The rows and fields the finding rests on.
    pub why: String,
    pub plan: GcPlan,
}

impl Finding {
    /// The revision the port was judged at: gc deletes only at this revision.
    #[must_use]
    pub fn revision(&self) -> Option<u64> {
        self.port_facts.as_ref().map(|f| f.revision)
    }
}

/// What the audit of one instance found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstanceAudit {
    pub findings: Vec<Finding>,
    /// Nova was working on the instance (`task_state` set): its ports were not judged.
    pub busy: bool,
}

/// Whether a port's owner is Nova's (`compute:<zone>`), or none yet (Nova
/// creates a port with only its `device_id`, and sets the owner when it binds it).
#[must_use]
pub fn owned_by_nova(port: &Port) -> bool {
    port.device_owner.is_empty() || port.device_owner.starts_with("compute:")
}

/// Whether a VIF row was written while an allocating action of the instance ran.
fn proven(records: &InstanceRecords, vif: &NovaVif, now: DateTime<Utc>) -> bool {
    allocating_actions(records).any(|a| a.spans(vif.created_at, now))
}

fn allocating_actions(records: &InstanceRecords) -> impl Iterator<Item = &super::records::NovaAction> {
    records
        .actions
        .iter()
        .filter(|a| ALLOCATING_ACTIONS.contains(&a.action.as_str()))
}

/// Why the instance's VIF rows cannot be trusted to list every port Nova
/// allocated, if they cannot.
fn untrusted_because(records: &InstanceRecords, now: DateTime<Utc>) -> Option<String> {
    let unproven: Vec<&str> = records
        .vifs
        .iter()
        .filter(|v| !v.deleted && !proven(records, v, now))
        .map(|v| v.port_id.as_str())
        .collect();
    if !unproven.is_empty() {
        return Some(format!(
            "virtual_interfaces rows {} were written outside every create/attach_interface action of the instance \
             (rebuilt from the cache, e.g. by online_data_migrations): they prove nothing",
            unproven.join(", ")
        ));
    }
    // An instance older than Nova's VIF records has a cache and no rows of its
    // build: the rows' absence then proves nothing.
    let recorded_at_build = records
        .actions
        .iter()
        .filter(|a| a.action == "create")
        .any(|create| records.vifs.iter().any(|v| create.spans(v.created_at, now)));
    if !recorded_at_build && !records.cache.is_empty() {
        return Some(
            "no virtual_interfaces row of the instance was written during its create action \
             (an instance older than Nova's VIF records, or its action log was purged)"
                .to_owned(),
        );
    }
    None
}

/// Whether Nova is working on the instance: a task state (a build has one
/// until it is done), or an interface attach that may still run (it sets no
/// task state, and its port carries the `device_id` before its VIF row is
/// written).
fn is_busy(records: &InstanceRecords, now: DateTime<Utc>) -> bool {
    records.instance.task_state.is_some()
        || records
            .actions
            .iter()
            .any(|a| a.action == "attach_interface" && a.may_run(now))
}

/// Judges one instance's ports: `ports` are the Neutron ports carrying its
/// `device_id`. A port another service owns is never judged.
#[must_use]
pub fn audit_instance(records: &InstanceRecords, ports: &[Port], now: DateTime<Utc>) -> InstanceAudit {
    if records.instance.deleted {
        return InstanceAudit {
            findings: audit_deleted(records, ports),
            busy: false,
        };
    }
    if is_busy(records, now) {
        return InstanceAudit {
            findings: Vec::new(),
            busy: true,
        };
    }
    InstanceAudit {
        findings: audit_live(records, ports, now),
        busy: false,
    }
}

fn finding(
    kind: FindingKind,
    records: &InstanceRecords,
    port_id: &PortId,
    port: Option<&Port>,
    why: String,
    plan: GcPlan,
) -> Finding {
    Finding {
        kind,
        instance: records.instance.uuid.clone(),
        port: Some(port_id.clone()),
        port_facts: port.map(PortFacts::from),
        why,
        plan,
    }
}

fn audit_live(records: &InstanceRecords, ports: &[Port], now: DateTime<Utc>) -> Vec<Finding> {
    let uuid = &records.instance.uuid;
    let allocated: HashSet<&PortId> = records.vifs.iter().filter(|v| !v.deleted).map(|v| &v.port_id).collect();
    let cached: HashSet<&PortId> = records.cache.iter().map(|c| &c.port_id).collect();
    let untrusted = untrusted_because(records, now);
    let neutron = |id: &PortId| ports.iter().find(|p| &p.id == id);
    let mut findings = Vec::new();
    for entry in &records.cache {
        let id = &entry.port_id;
        let port = neutron(id);
        let Some(port) = port else {
            findings.push(finding(
                FindingKind::Stale,
                records,
                id,
                None,
                format!("instance_info_caches of {uuid} shows port {id}, which Neutron does not have"),
                GcPlan::Nothing,
            ));
            continue;
        };
        if allocated.contains(id) {
            continue;
        }
        let undecided = |why: String| finding(FindingKind::Undecided, records, id, Some(port), why, GcPlan::Nothing);
        let shown = format!("instance_info_caches of {uuid} shows port {id}, which has no virtual_interfaces row");
        if !owned_by_nova(port) {
            findings.push(undecided(format!("{shown}, but its owner is {:?}", port.device_owner)));
        } else if entry.preserve_on_delete {
            findings.push(undecided(format!(
                "{shown}, but the cache marks it as given by a user (preserve_on_delete)"
            )));
        } else if let Some(why) = &untrusted {
            findings.push(undecided(format!("{shown}; {why}")));
        } else {
            findings.push(finding(
                FindingKind::GhostShown,
                records,
                id,
                Some(port),
                format!(
                    "{shown} (every VIF row of the instance was written during its create/attach_interface actions; \
                     heal adopts a port without writing one)"
                ),
                GcPlan::DeletePortAndTellNova,
            ));
        }
    }
    for port in ports.iter().filter(|p| !cached.contains(&p.id)) {
        let id = &port.id;
        if allocated.contains(id) {
            if port.binding_host_id.as_deref().is_some_and(|h| !h.is_empty()) {
                findings.push(finding(
                    FindingKind::Missing,
                    records,
                    id,
                    Some(port),
                    format!(
                        "port {id} has a virtual_interfaces row of {uuid} and is bound to {}, \
                         but instance_info_caches does not show it",
                        port.binding_host_id.as_deref().unwrap_or_default()
                    ),
                    GcPlan::Nothing,
                ));
            }
            continue;
        }
        if !owned_by_nova(port) {
            continue;
        }
        let hidden = format!(
            "port {id} carries device_id {uuid} (owner {:?}), has no virtual_interfaces row and is not in the cache",
            port.device_owner
        );
        findings.push(match &untrusted {
            Some(why) => finding(
                FindingKind::Undecided,
                records,
                id,
                Some(port),
                format!("{hidden}; {why}"),
                GcPlan::Nothing,
            ),
            None => finding(
                FindingKind::GhostHidden,
                records,
                id,
                Some(port),
                hidden,
                GcPlan::DeletePort,
            ),
        });
    }
    for vif in records.vifs.iter().filter(|v| !v.deleted) {
        if !cached.contains(&vif.port_id) && neutron(&vif.port_id).is_none() {
            findings.push(finding(
                FindingKind::Stale,
                records,
                &vif.port_id,
                None,
                format!(
                    "virtual_interfaces row of {uuid} names port {}, which Neutron does not have",
                    vif.port_id
                ),
                GcPlan::Nothing,
            ));
        }
    }
    findings
}

fn audit_deleted(records: &InstanceRecords, ports: &[Port]) -> Vec<Finding> {
    let uuid = &records.instance.uuid;
    let deleted_at = records
        .instance
        .deleted_at
        .map_or_else(|| "an unknown time".to_owned(), |t| t.to_rfc3339());
    ports
        .iter()
        .filter(|p| owned_by_nova(p))
        .map(|port| {
            let id = &port.id;
            let recorded = records.vifs.iter().any(|v| &v.port_id == id);
            let given = records.cache.iter().any(|c| &c.port_id == id && c.preserve_on_delete);
            let on = format!("port {id} carries device_id {uuid}, an instance deleted at {deleted_at}");
            if recorded || given {
                finding(
                    FindingKind::Undecided,
                    records,
                    id,
                    Some(port),
                    format!(
                        "{on}; Nova recorded the port (virtual_interfaces or a user's port in the cache): \
                         it may be a user's port whose unbind failed"
                    ),
                    GcPlan::Nothing,
                )
            } else {
                finding(
                    FindingKind::Leaked,
                    records,
                    id,
                    Some(port),
                    format!("{on}; no virtual_interfaces row or cache entry of it ever named the port"),
                    GcPlan::DeletePort,
                )
            }
        })
        .collect()
}
