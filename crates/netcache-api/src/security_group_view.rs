//! Nova's views of Neutron security groups (`os-security-groups`, a server's
//! and a project's): each group with its ingress rules alone, a rule from a
//! group naming that group (and left out if Neutron no longer has it), a rule
//! from addresses naming its range (anywhere when it has none), ports as Nova
//! reads them. Lists are sorted by owner and name.

use std::collections::HashMap;

use netcache_compute::SecurityGroupsInFull;
use netcache_domain::neutron::{SecurityGroup, SecurityGroupRule};
use netcache_domain::security_group_rule::{ANYWHERE, nova_ports};
use serde::Serialize;

#[derive(Serialize)]
pub(crate) struct GroupList<'a> {
    pub security_groups: Vec<GroupView<'a>>,
}

#[derive(Serialize)]
pub(crate) struct GroupView<'a> {
    id: &'a str,
    name: &'a str,
    description: &'a str,
    tenant_id: &'a str,
    rules: Vec<RuleView<'a>>,
}

/// A rule as Nova shows it: from a group (`group` set, `ip_range` empty) or
/// from addresses (the other way round).
#[derive(Serialize)]
pub(crate) struct RuleView<'a> {
    id: &'a str,
    parent_group_id: &'a str,
    ip_protocol: Option<&'a str>,
    from_port: Option<i64>,
    to_port: Option<i64>,
    group: GroupRef<'a>,
    ip_range: IpRange<'a>,
}

#[derive(Default, Serialize)]
struct GroupRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant_id: Option<&'a str>,
}

#[derive(Default, Serialize)]
struct IpRange<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cidr: Option<&'a str>,
}

/// The groups sorted as Nova sorts them, each with its rules' sources from
/// `found` (the groups and the others their rules name).
pub(crate) fn sorted_views<'a>(found: &'a SecurityGroupsInFull, groups: &'a [SecurityGroup]) -> GroupList<'a> {
    let known = sources(found);
    let mut views: Vec<GroupView<'_>> = groups.iter().map(|g| group_view(g, &known)).collect();
    views.sort_by(|a, b| (a.tenant_id, a.name).cmp(&(b.tenant_id, b.name)));
    GroupList { security_groups: views }
}

/// Every group `found` holds, by id.
pub(crate) fn sources(found: &SecurityGroupsInFull) -> HashMap<&str, &SecurityGroup> {
    found
        .groups
        .iter()
        .chain(&found.remote)
        .map(|g| (g.id.as_str(), g))
        .collect()
}

pub(crate) fn group_view<'a>(group: &'a SecurityGroup, known: &HashMap<&str, &'a SecurityGroup>) -> GroupView<'a> {
    GroupView {
        id: &group.id,
        name: &group.name,
        description: &group.description,
        tenant_id: group.project_id.as_str(),
        rules: group
            .rules
            .iter()
            .filter(|r| r.ingress)
            .filter_map(|r| rule_view(&group.id, r, known))
            .collect(),
    }
}

/// Nova's form of a Neutron rule; `None` for one from a group Neutron no longer
/// has (Nova leaves it out).
pub(crate) fn rule_view<'a>(
    parent: &'a str,
    rule: &'a SecurityGroupRule,
    known: &HashMap<&str, &'a SecurityGroup>,
) -> Option<RuleView<'a>> {
    let (from_port, to_port) = nova_ports(rule);
    let (group, ip_range) = match &rule.remote_group_id {
        Some(remote) => {
            let source = known.get(remote.as_str())?;
            let group = GroupRef {
                name: Some(&source.name),
                tenant_id: Some(source.project_id.as_str()),
            };
            (group, IpRange::default())
        }
        None => {
            let cidr = rule.remote_ip_prefix.as_deref().unwrap_or(ANYWHERE);
            (GroupRef::default(), IpRange { cidr: Some(cidr) })
        }
    };
    Some(RuleView {
        id: &rule.id,
        parent_group_id: parent,
        ip_protocol: rule.protocol.as_deref(),
        from_port,
        to_port,
        group,
        ip_range,
    })
}
