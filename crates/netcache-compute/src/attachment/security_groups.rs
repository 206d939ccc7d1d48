//! Security groups as Nova has them with Neutron: a boot's groups resolved by
//! name or id among its project's (before the boot is accepted), Nova's
//! `addSecurityGroup`/`removeSecurityGroup` as a durable operation over every
//! interface's port, and the groups a server shows (its ports': by name in its
//! view, whole in its `os-security-groups`).
//!
//! The operation is safe to run again from the start: a port already in (or out
//! of) the group is left alone, so a resumed one finishes the ports a dead
//! process did not reach.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::neutron::{Port, SecurityGroup, extension};
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::security_group::{self, Unresolved};
use netcache_domain::vif::{PortDetails, VifRecord};
use netcache_domain::{ProjectId, ServerId};
use netcache_neutron::{PortFilter, PortUpdate, SecurityGroupFilter};
use tokio::time::Instant;
use tracing::info;

use crate::config::CrashPoint;
use crate::runner::Outcome;
use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::{Compute, Error, RequestContext, Result};

/// Names of security groups by id, reused for a while (as the network catalog
/// is) so a server's view costs no Neutron call for groups seen lately.
pub(crate) struct GroupNames {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, String)>>,
}

impl GroupNames {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn remember(&self, groups: &[SecurityGroup]) {
        let now = Instant::now();
        let mut entries = self.entries.lock().expect("group names");
        for g in groups {
            entries.insert(g.id.clone(), (now, g.name.clone()));
        }
    }

    /// The known, fresh name of each id; the others are missing.
    fn fresh(&self, ids: &[&String]) -> (HashMap<String, String>, Vec<String>) {
        let entries = self.entries.lock().expect("group names");
        let mut known = HashMap::new();
        let mut missing = Vec::new();
        for id in ids {
            match entries.get(*id) {
                Some((at, name)) if at.elapsed() < self.ttl => {
                    known.insert((*id).clone(), name.clone());
                }
                _ => missing.push((*id).clone()),
            }
        }
        (known, missing)
    }
}

/// A server's attached interfaces (not a user's port still being bound).
fn interfaces(vifs: Vec<VifRecord>) -> Vec<VifRecord> {
    vifs.into_iter()
        .filter(|v| v.is_attached() && !v.is_mid_attach())
        .collect()
}

/// The ids of the groups of a server's interfaces as Nova counts them: per port
/// in interface order, each of its groups (a group of two ports twice).
fn interface_group_ids(vifs: Vec<VifRecord>) -> Vec<String> {
    let mut vifs = interfaces(vifs);
    vifs.sort_by_key(|v| v.position);
    vifs.into_iter()
        .filter_map(|v| v.details)
        .flat_map(|d| d.security_groups)
        .collect()
}

/// Groups as Nova's `os-security-groups` lists them: a server's, a project's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecurityGroupsInFull {
    /// Each group whole (a server's: per port, each of its groups, a group of
    /// two ports twice; one Neutron no longer has is left out).
    pub groups: Vec<SecurityGroup>,
    /// The other groups their ingress rules name (ids, names and owners only);
    /// one Neutron no longer has is missing.
    pub remote: Vec<SecurityGroup>,
}

/// `addSecurityGroup`/`removeSecurityGroup`; at the cap its request is answered
/// with the cause.
pub(crate) struct SecurityGroupStep;

#[async_trait::async_trait]
impl OperationStep for SecurityGroupStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::AnswerWithCause
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        let OperationParams::SecurityGroup { group_id, add } = &op.params else {
            unreachable!("the security group step runs security group operations");
        };
        cx.compute
            .run_security_group(op, group_id, *add)
            .await
            .map(|()| Next::Done)
    }
}

/// A server's security groups: its addSecurityGroup and removeSecurityGroup
/// actions, and the groups it is in.
#[async_trait]
pub trait ServerSecurityGroupOps: Send + Sync {
    /// Nova's `addSecurityGroup` (`add`) or `removeSecurityGroup`: the group, by
    /// name or id among the server's project's, put on every interface's port or
    /// taken off. Nova's refusals come before anything is recorded; then the
    /// change is an operation (409 while another one runs), and the answer waits
    /// for it, as Nova answers once Neutron has the ports changed.
    async fn change_security_group(
        &self,
        ctx: &RequestContext,
        server_id: ServerId,
        name: &str,
        add: bool,
    ) -> Result<()>;

    /// Names of the groups of each server's interfaces, as Nova shows them: per
    /// port in interface order, each of its groups (a group of two ports twice;
    /// a group Neutron no longer has is left out). One Neutron call at most,
    /// for names not seen lately.
    async fn security_groups_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, Vec<String>>>;

    /// The server's groups whole, as Nova's `os-security-groups` lists them:
    /// one Neutron call for the groups, and one for the others their rules
    /// name, if any.
    async fn security_groups_in_full(&self, server_id: ServerId) -> Result<SecurityGroupsInFull>;
}

#[async_trait]
impl ServerSecurityGroupOps for Arc<Compute> {
    async fn change_security_group(
        &self,
        ctx: &RequestContext,
        server_id: ServerId,
        name: &str,
        add: bool,
    ) -> Result<()> {
        let server = self.server(server_id).await?;
        let groups = self.project_groups(&server.project_id).await?;
        let group = security_group::resolve(&groups, name).map_err(|why| match why {
            Unresolved::Missing => Error::SecurityGroupNotFoundForProject {
                name: name.to_owned(),
                project: server.project_id.to_string(),
            },
            Unresolved::Ambiguous => Error::SecurityGroupAmbiguous(name.to_owned()),
        })?;
        let ids = interfaces(self.store.vifs(server_id).await?)
            .into_iter()
            .map(|v| v.port_id)
            .collect::<Vec<_>>();
        if ids.is_empty() {
            return Err(Error::NoPortsForSecurityGroups(server_id));
        }
        let ports = self
            .neutron
            .list_ports(&PortFilter {
                ids,
                ..PortFilter::default()
            })
            .await?;
        check_change(&ports, group, add).map_err(|e| {
            e.unwrap_or_else(|| Error::SecurityGroupNotAssociated {
                name: name.to_owned(),
                server: server_id,
            })
        })?;
        let params = OperationParams::SecurityGroup {
            group_id: group.id.clone(),
            add,
        };
        let op = self.new_operation(server_id, params, ctx);
        let start = Change::StartAction(ctx.action(server_id, action_name(add), self.clock.now()));
        self.submit_and_wait(op, vec![start]).await.map(drop)
    }

    async fn security_groups_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, Vec<String>>> {
        let mut records = self.store.vifs_of(servers).await?;
        let per_server: HashMap<ServerId, Vec<String>> = servers
            .iter()
            .map(|id| (*id, interface_group_ids(records.remove(id).unwrap_or_default())))
            .collect();
        let mut ids: Vec<&String> = per_server.values().flatten().collect();
        ids.sort();
        ids.dedup();
        let (mut names, missing) = self.group_names.fresh(&ids);
        let found = self.groups_by_id(&missing, false).await?;
        names.extend(found.into_iter().map(|g| (g.id, g.name)));
        Ok(per_server
            .into_iter()
            .map(|(server, groups)| {
                // Nova shows the id of a group without a name.
                let shown = groups
                    .into_iter()
                    .filter_map(|g| names.get(&g).map(|n| if n.is_empty() { g.clone() } else { n.clone() }))
                    .collect();
                (server, shown)
            })
            .collect())
    }

    async fn security_groups_in_full(&self, server_id: ServerId) -> Result<SecurityGroupsInFull> {
        let ids = interface_group_ids(self.store.vifs(server_id).await?);
        let found = self.groups_by_id(&ids, true).await?;
        let groups: Vec<SecurityGroup> = ids
            .iter()
            .filter_map(|id| found.iter().find(|g| g.id == *id).cloned())
            .collect();
        self.with_sources(groups).await
    }
}

impl Compute {
    /// The groups of `project` (Neutron makes its `default` one first if needed).
    async fn project_groups(&self, project: &ProjectId) -> Result<Vec<SecurityGroup>> {
        let groups = self
            .neutron
            .list_security_groups(&SecurityGroupFilter {
                project_id: Some(project.clone()),
                ..SecurityGroupFilter::default()
            })
            .await?;
        self.group_names.remember(&groups);
        Ok(groups)
    }

    /// Nova's check of a boot's groups (names or ids, duplicates already
    /// dropped): each must be one group of the project. Returns their ids, none
    /// when Neutron's default is meant (no group, or `default` alone).
    pub(crate) async fn resolve_boot_groups(&self, project: &ProjectId, requested: &[String]) -> Result<Vec<String>> {
        if security_group::neutron_default(requested) {
            return Ok(Vec::new());
        }
        let groups = self.project_groups(project).await?;
        let mut ids: Vec<String> = Vec::with_capacity(requested.len());
        for wanted in requested {
            let group = security_group::resolve(&groups, wanted).map_err(|why| match why {
                Unresolved::Missing => Error::SecurityGroupNotFound(wanted.clone()),
                Unresolved::Ambiguous => Error::SecurityGroupAmbiguous(wanted.clone()),
            })?;
            // A name and the id of one group are one group.
            if !ids.contains(&group.id) {
                ids.push(group.id.clone());
            }
        }
        Ok(ids)
    }

    /// The change itself; its outcome goes to the waiting request, if any.
    async fn run_security_group(&self, op: &Operation, group_id: &str, add: bool) -> Result<()> {
        let result = self.apply_security_group(op, group_id, add).await;
        // Not an outcome: the operation stops here (crash) or is retried from the
        // ports (the database failed, Neutron's answer was lost, or a port changed
        // under its If-Match).
        let retried = |e: &Error| match e {
            Error::Crashed(_) | Error::Store(_) => true,
            Error::Neutron(e) => e.is_ambiguous() || e.status() == Some(412),
            _ => false,
        };
        if result.as_ref().is_err_and(retried) {
            return result;
        }
        let host = self.store.server(op.server_id).await?.and_then(|s| s.host);
        let failure = result.as_ref().err().map(ToString::to_string);
        let event = ActionEvent::finished(
            &format!(
                "compute_{}",
                if add {
                    "add_security_group"
                } else {
                    "remove_security_group"
                }
            ),
            self.clock.now(),
            failure.is_none(),
            failure,
            host.map(|h| h.to_string()),
        );
        self.add_event(op.server_id, &op.request_id, event).await?;
        self.keep_outcome(op.id, result.map(|()| Outcome::Applied));
        Ok(())
    }

    async fn apply_security_group(&self, op: &Operation, group_id: &str, add: bool) -> Result<()> {
        let if_match = self
            .neutron_features()
            .await?
            .extensions
            .contains(extension::REVISION_IF_MATCH);
        let mut changed = Vec::new();
        for vif in interfaces(self.store.vifs(op.server_id).await?) {
            let port = match self.neutron.show_port(&vif.port_id).await {
                Ok(port) => port,
                // Gone from Neutron: heal records it as lost; there is nothing to change.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            };
            let inside = port.security_groups.iter().any(|g| g == group_id);
            let port = if inside == add {
                port
            } else {
                let mut groups = port.security_groups.clone();
                if add {
                    groups.push(group_id.to_owned());
                } else {
                    groups.retain(|g| g != group_id);
                }
                let revision = if_match.then_some(port.revision_number);
                let updated = self
                    .neutron
                    .update_port(&port.id, &PortUpdate::security_groups(groups), revision)
                    .await
                    .map_err(refusal)?;
                self.crash_point(CrashPoint::AfterSecurityGroupApplied)?;
                updated
            };
            changed.push(Change::UpdateVif(VifRecord {
                details: Some(PortDetails::of(&port)),
                ..vif
            }));
        }
        self.commit(changed).await?;
        info!(server.id = %op.server_id, "Security group {group_id} {} the ports of server {}", if add { "added to" } else { "removed from" }, op.server_id);
        Ok(())
    }

    /// The groups of these ids that Neutron has (none asked: no call).
    pub(crate) async fn groups_by_id(&self, ids: &[String], in_full: bool) -> Result<Vec<SecurityGroup>> {
        let mut ids = ids.to_vec();
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found = self
            .neutron
            .list_security_groups(&SecurityGroupFilter {
                ids,
                in_full,
                ..SecurityGroupFilter::default()
            })
            .await?;
        self.group_names.remember(&found);
        Ok(found)
    }
}

fn action_name(add: bool) -> &'static str {
    if add { "addSecurityGroup" } else { "removeSecurityGroup" }
}

/// Nova's refusals of a change, from the server's ports as Neutron has them:
/// adding needs ports with port security and addresses and not in the group yet
/// (Neutron refuses a group twice); removing needs a port in the group (`None`:
/// no port is, which the caller names).
fn check_change(ports: &[Port], group: &SecurityGroup, add: bool) -> Result<(), Option<Error>> {
    let inside = |p: &Port| p.security_groups.contains(&group.id);
    if !add {
        return if ports.iter().any(inside) { Ok(()) } else { Err(None) };
    }
    if ports.iter().any(|p| !p.port_security_enabled || p.fixed_ips.is_empty()) {
        return Err(Some(Error::SecurityGroupCannotBeApplied(None)));
    }
    if ports.iter().any(inside) {
        return Err(Some(Error::SecurityGroupCannotBeApplied(Some(format!(
            "Invalid input for security_groups. Reason: Duplicate items in the list: '{}'.",
            group.id
        )))));
    }
    Ok(())
}

/// Neutron's definite refusal of a port's groups, as Nova answers it.
fn refusal(e: netcache_neutron::Error) -> Error {
    match e.status() {
        Some(400) => Error::SecurityGroupCannotBeApplied(Some(e.to_string())),
        _ => Error::Neutron(e),
    }
}
