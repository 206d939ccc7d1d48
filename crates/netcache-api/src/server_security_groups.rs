//! `GET /v2.1/servers/{id}/os-security-groups` (Nova's
//! `ServerSecurityGroupController.index` at 2.1): the groups of the server's
//! ports, whole, sorted by owner and name, with their ingress rules in Nova's
//! form. Ansible's `openstack.cloud.server` reads it on every run after the first.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use netcache_domain::neutron::{SecurityGroup, SecurityGroupRule};
use serde::Serialize;

use crate::error::ApiResult;
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}/os-security-groups", get(index))
}

#[derive(Serialize)]
struct GroupList<'a> {
    security_groups: Vec<GroupView<'a>>,
}

#[derive(Serialize)]
struct GroupView<'a> {
    id: &'a str,
    name: &'a str,
    description: &'a str,
    tenant_id: &'a str,
    rules: Vec<RuleView<'a>>,
}

/// A rule as Nova shows it: from a group (`group` set, `ip_range` empty) or
/// from addresses (the other way round).
#[derive(Serialize)]
struct RuleView<'a> {
    id: &'a str,
    parent_group_id: &'a str,
    ip_protocol: Option<&'a str>,
    from_port: Option<i32>,
    to_port: Option<i32>,
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

async fn index(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Response> {
    let server = caller
        .server(&state, &id, "os_compute_api:os-security-groups:list")
        .await?;
    let found = state.compute.security_groups_in_full(server.id).await?;
    let known: HashMap<&str, &SecurityGroup> = found
        .groups
        .iter()
        .chain(&found.remote)
        .map(|g| (g.id.as_str(), g))
        .collect();
    let mut groups: Vec<GroupView<'_>> = found.groups.iter().map(|g| group_view(g, &known)).collect();
    groups.sort_by(|a, b| (a.tenant_id, a.name).cmp(&(b.tenant_id, b.name)));
    Ok(Json(GroupList {
        security_groups: groups,
    })
    .into_response())
}

fn group_view<'a>(group: &'a SecurityGroup, known: &HashMap<&str, &'a SecurityGroup>) -> GroupView<'a> {
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
fn rule_view<'a>(
    parent: &'a str,
    rule: &'a SecurityGroupRule,
    known: &HashMap<&str, &'a SecurityGroup>,
) -> Option<RuleView<'a>> {
    let protocol = rule.protocol.as_deref();
    // A protocol without ports spans all of them: TCP's and UDP's 1-65535, -1 for others.
    let (from_port, to_port) = match (protocol, rule.port_range_min, rule.port_range_max) {
        (Some(p), None, None) if p.eq_ignore_ascii_case("tcp") || p.eq_ignore_ascii_case("udp") => {
            (Some(1), Some(65535))
        }
        (Some(_), None, None) => (Some(-1), Some(-1)),
        (_, min, max) => (min.map(i32::from), max.map(i32::from)),
    };
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
            let cidr = rule.remote_ip_prefix.as_deref().unwrap_or("0.0.0.0/0");
            (GroupRef::default(), IpRange { cidr: Some(cidr) })
        }
    };
    Some(RuleView {
        id: &rule.id,
        parent_group_id: parent,
        ip_protocol: protocol,
        from_port,
        to_port,
        group,
        ip_range,
    })
}
