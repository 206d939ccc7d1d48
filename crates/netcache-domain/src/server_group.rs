//! Nova's server groups: a project's named set of servers with a placement
//! policy, and the scheduler's decision for a member (Nova's
//! `ServerGroupAffinityFilter`, `ServerGroupAntiAffinityFilter` and the soft
//! policies' weighers) as a pure function of where the other members are.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{HostName, ProjectId, ServerId};

/// A group's placement policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupPolicy {
    /// Every member on one host; a member that cannot go there fails.
    Affinity,
    /// No two members (or no more than `max_server_per_host`) on one host.
    AntiAffinity,
    /// Together where possible, never a failure.
    SoftAffinity,
    /// Apart where possible, never a failure.
    SoftAntiAffinity,
}

impl GroupPolicy {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Affinity => "affinity",
            Self::AntiAffinity => "anti-affinity",
            Self::SoftAffinity => "soft-affinity",
            Self::SoftAntiAffinity => "soft-anti-affinity",
        }
    }
}

impl fmt::Display for GroupPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GroupPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::Affinity,
            Self::AntiAffinity,
            Self::SoftAffinity,
            Self::SoftAntiAffinity,
        ]
        .into_iter()
        .find(|p| p.name() == s)
        .ok_or_else(|| format!("unknown server group policy {s:?}"))
    }
}

/// A server group as stored. `generation` advances with every member that
/// joins or is placed, so a placement decided from one read of the members is
/// recorded only if no other was recorded since (a compare-and-swap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerGroup {
    pub id: Uuid,
    pub name: String,
    pub project_id: ProjectId,
    pub user_id: String,
    pub policy: GroupPolicy,
    /// Nova's only rule (2.64), of anti-affinity groups only.
    pub max_server_per_host: Option<u32>,
    pub created_at: DateTime<Utc>,
    pub generation: i64,
}

/// A live member of a group: its server, whose it is, and where it is placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    pub server_id: ServerId,
    pub user_id: String,
    pub host: Option<HostName>,
}

/// Where a member of `group` goes, among `candidates` (the hosts it may use, in
/// the order the scheduler would try them), given the hosts of the group's other
/// members, in the order they joined. `None`: a hard policy cannot be met, Nova's
/// `NoValidHost`.
#[must_use]
pub fn place(group: &ServerGroup, others: &[HostName], candidates: &[HostName]) -> Option<HostName> {
    let on = |host: &HostName| others.iter().filter(|h| *h == host).count();
    match group.policy {
        // Nova's affinity filter: any host while no member has one, then only
        // the members' host (the first member's: all share it).
        GroupPolicy::Affinity => match others.first() {
            None => candidates.first().cloned(),
            Some(first) => candidates.iter().find(|h| *h == first).cloned(),
        },
        GroupPolicy::AntiAffinity => {
            let most = group.max_server_per_host.unwrap_or(1) as usize;
            candidates.iter().find(|h| on(h) < most).cloned()
        }
        // The soft weighers: the most members (affinity) or the fewest; ties in
        // the scheduler's order.
        GroupPolicy::SoftAffinity => candidates
            .iter()
            .enumerate()
            .max_by_key(|(i, h)| (on(h), std::cmp::Reverse(*i)))
            .map(|(_, h)| h.clone()),
        GroupPolicy::SoftAntiAffinity => candidates
            .iter()
            .enumerate()
            .min_by_key(|(i, h)| (on(h), *i))
            .map(|(_, h)| h.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(policy: GroupPolicy, max_server_per_host: Option<u32>) -> ServerGroup {
        ServerGroup {
            id: Uuid::nil(),
            name: "g".into(),
            project_id: ProjectId::from("p"),
            user_id: "u".into(),
            policy,
            max_server_per_host,
            created_at: DateTime::UNIX_EPOCH,
            generation: 0,
        }
    }

    fn hosts(names: &[&str]) -> Vec<HostName> {
        names.iter().map(|n| HostName::from(*n)).collect()
    }

    #[test]
    fn affinity_follows_the_first_member_or_fails() {
        let g = group(GroupPolicy::Affinity, None);
        let all = hosts(&["a", "b"]);
        assert_eq!(place(&g, &[], &all), Some("a".into()));
        assert_eq!(place(&g, &hosts(&["b"]), &all), Some("b".into()));
        assert_eq!(place(&g, &hosts(&["c"]), &all), None, "the members' host is not ours");
    }

    #[test]
    fn anti_affinity_spreads_up_to_the_rule_then_fails() {
        let all = hosts(&["a", "b"]);
        let one = group(GroupPolicy::AntiAffinity, None);
        assert_eq!(place(&one, &hosts(&["a"]), &all), Some("b".into()));
        assert_eq!(place(&one, &hosts(&["a", "b"]), &all), None);
        let two = group(GroupPolicy::AntiAffinity, Some(2));
        assert_eq!(place(&two, &hosts(&["a", "b"]), &all), Some("a".into()));
        assert_eq!(place(&two, &hosts(&["a", "b", "a", "b"]), &all), None);
    }

    #[test]
    fn soft_policies_prefer_and_never_fail() {
        let all = hosts(&["a", "b", "c"]);
        let soft = group(GroupPolicy::SoftAffinity, None);
        assert_eq!(place(&soft, &hosts(&["b", "b", "c"]), &all), Some("b".into()));
        assert_eq!(place(&soft, &hosts(&["z"]), &all), Some("a".into()));
        let apart = group(GroupPolicy::SoftAntiAffinity, None);
        assert_eq!(place(&apart, &hosts(&["a", "b"]), &all), Some("c".into()));
        assert_eq!(place(&apart, &hosts(&["a", "b", "c", "a"]), &all), Some("b".into()));
        assert_eq!(place(&apart, &[], &[]), None, "no host at all");
    }

    #[test]
    fn policies_read_back_by_name() {
        for p in ["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"] {
            assert_eq!(p.parse::<GroupPolicy>().unwrap().name(), p);
        }
        assert!("legacy".parse::<GroupPolicy>().is_err());
    }
}
