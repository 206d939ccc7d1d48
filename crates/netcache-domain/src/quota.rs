//! Nova's quotas, as its database driver keeps them and its API shows them at
//! microversion 2.1: limits per project, and per user within a project, over the
//! defaults (the deployment's, or the values an admin set of the `default`
//! quota class in their place); usage counted from the servers and key pairs
//! themselves (never stored, as Nova counts since Pike); and the decisions made
//! with them — how many servers a boot may create, whether a key pair or a
//! server's metadata fits, what an admin may set a limit to.
//!
//! Nova's arithmetic is kept, quirks included, since they show in its answers:
//! a negative limit is unlimited, a refused boot reports the booting user's
//! usage, and a key pair's limit is the smaller of the project's and the user's
//! (so -1 in either is unlimited).

use std::fmt;
use std::str::FromStr;

use crate::ProjectId;
use crate::flavor::{self, FlavorSnapshot};
use crate::server::Server;

/// The limit that means "no limit".
pub const UNLIMITED: i64 = -1;

/// What a server counts against.
const SERVER_RESOURCES: [Resource; 3] = [Resource::Cores, Resource::Instances, Resource::Ram];

/// A quota Nova keeps. The nova-network ones (`fixed_ips`, `floating_ips`,
/// `security_groups`, `security_group_rules`) are still shown at 2.1, unlimited
/// and never counted, as Nova shows them since nova-network is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    Cores,
    FixedIps,
    FloatingIps,
    InjectedFileContentBytes,
    InjectedFilePathBytes,
    InjectedFiles,
    Instances,
    KeyPairs,
    MetadataItems,
    Ram,
    SecurityGroupRules,
    SecurityGroups,
    ServerGroupMembers,
    ServerGroups,
}

impl Resource {
    /// Every resource, in Nova's order (by name), as its views list them.
    pub const ALL: [Self; 14] = [
        Self::Cores,
        Self::FixedIps,
        Self::FloatingIps,
        Self::InjectedFileContentBytes,
        Self::InjectedFilePathBytes,
        Self::InjectedFiles,
        Self::Instances,
        Self::KeyPairs,
        Self::MetadataItems,
        Self::Ram,
        Self::SecurityGroupRules,
        Self::SecurityGroups,
        Self::ServerGroupMembers,
        Self::ServerGroups,
    ];

    /// Nova's name of the resource (the key in its quota sets).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Cores => "cores",
            Self::FixedIps => "fixed_ips",
            Self::FloatingIps => "floating_ips",
            Self::InjectedFileContentBytes => "injected_file_content_bytes",
            Self::InjectedFilePathBytes => "injected_file_path_bytes",
            Self::InjectedFiles => "injected_files",
            Self::Instances => "instances",
            Self::KeyPairs => "key_pairs",
            Self::MetadataItems => "metadata_items",
            Self::Ram => "ram",
            Self::SecurityGroupRules => "security_group_rules",
            Self::SecurityGroups => "security_groups",
            Self::ServerGroupMembers => "server_group_members",
            Self::ServerGroups => "server_groups",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Resource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| format!("unknown quota resource {s:?}"))
    }
}

/// A value for every resource: limits, or the deployment's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaSet([i64; Resource::ALL.len()]);

impl QuotaSet {
    #[must_use]
    pub fn get(&self, resource: Resource) -> i64 {
        self.0[resource as usize]
    }

    #[must_use]
    pub fn with(mut self, resource: Resource, value: i64) -> Self {
        self.0[resource as usize] = value;
        self
    }

    /// Every resource with its value, in Nova's order.
    pub fn iter(&self) -> impl Iterator<Item = (Resource, i64)> + '_ {
        Resource::ALL.into_iter().map(|r| (r, self.get(r)))
    }

    /// These values with `values` in place of theirs (a quota class's over the
    /// deployment's defaults, as Nova's `get_class_quotas` reads them).
    #[must_use]
    pub fn with_values(self, values: &[(Resource, i64)]) -> Self {
        values.iter().fold(self, |set, &(r, v)| set.with(r, v))
    }
}

/// Nova's defaults (`[quota]` in nova.conf).
impl Default for QuotaSet {
    fn default() -> Self {
        let set = Self([UNLIMITED; Resource::ALL.len()]);
        [
            (Resource::Instances, 10),
            (Resource::Cores, 20),
            (Resource::Ram, 50 * 1024),
            (Resource::MetadataItems, 128),
            (Resource::InjectedFiles, 5),
            (Resource::InjectedFileContentBytes, 10 * 1024),
            (Resource::InjectedFilePathBytes, 255),
            (Resource::KeyPairs, 100),
            (Resource::ServerGroups, 10),
            (Resource::ServerGroupMembers, 10),
        ]
        .into_iter()
        .fold(set, |set, (r, v)| set.with(r, v))
    }
}

/// The quota class whose values are every project's defaults (Nova's
/// `_DEFAULT_QUOTA_NAME`): an admin's values of it replace the deployment's.
pub const DEFAULT_CLASS: &str = "default";

/// What the store keeps that sets one project's limits, read together: the
/// [`DEFAULT_CLASS`]'s values and the project's own limits and its users'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectLimits {
    /// The values an admin set of the `default` class, by resource.
    pub default_class: Vec<(Resource, i64)>,
    /// The project's own limits (first) and its users', by user then resource.
    pub limits: Vec<QuotaLimit>,
}

impl ProjectLimits {
    /// Nova's `get_defaults`: the `default` class's values, else `deployment`'s.
    #[must_use]
    pub fn defaults(&self, deployment: &QuotaSet) -> QuotaSet {
        deployment.clone().with_values(&self.default_class)
    }
}

/// A limit an admin set: the project's own (`user_id` none) or one of its users'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaLimit {
    pub project_id: ProjectId,
    pub user_id: Option<String>,
    pub resource: Resource,
    pub hard_limit: i64,
}

/// Live servers of a project of one user and flavor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerCount {
    pub user_id: String,
    pub flavor_ref: String,
    /// What each costs, from the flavor snapshot the servers keep (`None`:
    /// servers recorded without one, which cost what the built-in flavor does).
    pub cost: Option<Cost>,
    pub servers: i64,
}

/// What a server of a flavor costs: one instance, its cores and its RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cost {
    pub vcpus: i64,
    pub ram_mb: i64,
}

impl Cost {
    /// What a server of this flavor costs.
    #[must_use]
    pub fn of(flavor: &FlavorSnapshot) -> Self {
        Self {
            vcpus: flavor.vcpus,
            ram_mb: flavor.ram_mb,
        }
    }

    /// What a server without a snapshot of its flavor costs: that of the
    /// built-in flavor `flavor_ref` (nothing but the instance for another).
    #[must_use]
    pub fn of_built_in(flavor_ref: &str) -> Self {
        flavor::built_in_snapshot(flavor_ref).map_or(Self { vcpus: 0, ram_mb: 0 }, |f| Self::of(&f))
    }
}

/// The usage Nova counts: servers, their cores and RAM. Everything else is
/// shown as 0 in use (key pairs too: Nova shows them so in its quota views).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub instances: i64,
    pub cores: i64,
    pub ram: i64,
    /// Server groups (of the project, or the user's in it), set by the caller.
    pub server_groups: i64,
}

impl Usage {
    /// The usage of a project's servers (`user`: only that user's).
    #[must_use]
    pub fn of_servers(counts: &[ServerCount], user: Option<&str>) -> Self {
        counts
            .iter()
            .filter(|c| user.is_none_or(|u| c.user_id == u))
            .fold(Self::default(), |usage, c| {
                let cost = c.cost.unwrap_or_else(|| Cost::of_built_in(&c.flavor_ref));
                Self {
                    instances: usage.instances + c.servers,
                    cores: usage.cores + c.servers * cost.vcpus,
                    ram: usage.ram + c.servers * cost.ram_mb,
                    server_groups: 0,
                }
            })
    }

    /// This usage without `other`'s, which it includes.
    #[must_use]
    pub fn less(&self, other: &Self) -> Self {
        Self {
            instances: self.instances - other.instances,
            cores: self.cores - other.cores,
            ram: self.ram - other.ram,
            server_groups: self.server_groups - other.server_groups,
        }
    }

    #[must_use]
    pub fn in_use(&self, resource: Resource) -> i64 {
        match resource {
            Resource::Instances => self.instances,
            Resource::Cores => self.cores,
            Resource::Ram => self.ram,
            Resource::ServerGroups => self.server_groups,
            _ => 0,
        }
    }
}

/// Why a quota refuses, in Nova's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Nova's `TooManyInstances`: the resources over, with what was asked,
    /// used and allowed of each (comma-separated, as Nova joins them).
    TooManyInstances {
        overs: String,
        requested: String,
        used: String,
        allowed: String,
    },
    /// Nova's answer when a user's key pairs are at the quota.
    KeyPairs,
    /// Nova's `MetadataLimitExceeded`.
    MetadataItems { allowed: i64 },
    /// Nova's `OnsetFileLimitExceeded`: more personality files than allowed.
    InjectedFiles,
    /// Nova's `OnsetFilePathLimitExceeded`.
    InjectedFilePath { allowed: i64 },
    /// Nova's `OnsetFileContentLimitExceeded`.
    InjectedFileContent { allowed: i64 },
    /// Nova's answer when a project's (or user's) server groups are at the quota.
    ServerGroups,
    /// Nova's answer when a boot would put one more server of the user in a
    /// group than the quota allows.
    ServerGroupMembers,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyInstances {
                overs,
                requested,
                used,
                allowed,
            } => write!(
                f,
                "Quota exceeded for {overs}: Requested {requested}, but already used {used} of {allowed} {overs}"
            ),
            Self::KeyPairs => f.write_str("Quota exceeded, too many key pairs."),
            Self::MetadataItems { allowed } => write!(f, "Maximum number of metadata items exceeds {allowed}"),
            Self::InjectedFiles => f.write_str("Personality file limit exceeded"),
            Self::InjectedFilePath { allowed } => write!(f, "Personality file path exceeds maximum {allowed}"),
            Self::InjectedFileContent { allowed } => write!(f, "Personality file content exceeds maximum {allowed}"),
            Self::ServerGroups => f.write_str("Quota exceeded, too many server groups."),
            Self::ServerGroupMembers => f.write_str("Quota exceeded, too many servers in group"),
        }
    }
}

/// Nova's 400 for a limit outside what may be set (unless forced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadLimit {
    BelowUsage {
        resource: Resource,
        limit: i64,
        minimum: i64,
    },
    AboveMaximum {
        resource: Resource,
        limit: i64,
        maximum: i64,
    },
}

impl fmt::Display for BadLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BelowUsage {
                resource,
                limit,
                minimum,
            } => write!(
                f,
                "Quota limit {limit} for {resource} must be greater than or equal to already used and reserved {minimum}."
            ),
            Self::AboveMaximum {
                resource,
                limit,
                maximum,
            } => write!(
                f,
                "Quota limit {limit} for {resource} must be less than or equal to {maximum}."
            ),
        }
    }
}

/// Nova counts any negative limit as unlimited.
fn unlimited(value: i64) -> bool {
    value <= UNLIMITED
}

/// Nova's `_sum_quota_values` / `_sub_quota_values`: unlimited if either is.
fn combine(a: i64, b: i64, op: fn(i64, i64) -> i64) -> i64 {
    if unlimited(a) || unlimited(b) {
        UNLIMITED
    } else {
        op(a, b)
    }
}

/// The limits in force in one project: the defaults, the project's own limits
/// and its users' (`limits` holds the project's rows only).
#[derive(Clone, Debug)]
pub struct Quotas<'a> {
    defaults: QuotaSet,
    limits: &'a [QuotaLimit],
}

impl<'a> Quotas<'a> {
    #[must_use]
    pub fn new(defaults: &QuotaSet, limits: &'a [QuotaLimit]) -> Self {
        Self {
            defaults: defaults.clone(),
            limits,
        }
    }

    /// The limits the store read for a project: `deployment`'s defaults under
    /// the `default` class's values, under the project's and its users' own.
    #[must_use]
    pub fn of(deployment: &QuotaSet, stored: &'a ProjectLimits) -> Self {
        Self {
            defaults: stored.defaults(deployment),
            limits: &stored.limits,
        }
    }

    fn stored(&self, user: Option<&str>, resource: Resource) -> Option<i64> {
        self.limits
            .iter()
            .find(|l| l.resource == resource && l.user_id.as_deref() == user)
            .map(|l| l.hard_limit)
    }

    /// Nova's `get_project_quotas`: the project's limit, else the default.
    #[must_use]
    pub fn project(&self) -> QuotaSet {
        Resource::ALL
            .into_iter()
            .fold(self.defaults.clone(), |set, r| match self.stored(None, r) {
                Some(limit) => set.with(r, limit),
                None => set,
            })
    }

    /// Nova's `get_user_quotas`: the user's limit, else the project's.
    #[must_use]
    pub fn user(&self, user: &str) -> QuotaSet {
        Resource::ALL
            .into_iter()
            .fold(self.project(), |set, r| match self.stored(Some(user), r) {
                Some(limit) => set.with(r, limit),
                None => set,
            })
    }

    /// Nova's `get_settable_quotas`: the range a new limit of `resource` must
    /// fall in. A project's is at least what it uses and what its users' limits
    /// add up to, with no maximum; a user's is at least what the user uses and
    /// at most what the project's limit leaves over its users' limits (plus the
    /// user's own). `in_use` is the project's usage, or the user's.
    #[must_use]
    pub fn settable(&self, user: Option<&str>, in_use: &Usage, resource: Resource) -> (i64, i64) {
        let limit = self.project().get(resource);
        let given_to_users: i64 = self
            .limits
            .iter()
            .filter(|l| l.resource == resource && l.user_id.is_some())
            .map(|l| l.hard_limit)
            .sum();
        let remains = limit - given_to_users;
        match user {
            None => (
                combine(limit, remains, |a, b| a - b).max(in_use.in_use(resource)),
                UNLIMITED,
            ),
            Some(user) => {
                let own = self.stored(Some(user), resource).unwrap_or(0);
                (in_use.in_use(resource), combine(remains, own, |a, b| a + b))
            }
        }
    }

    /// Nova's `_validate_quota_limit` of a new limit against [`Self::settable`]
    /// (only -1 itself counts as infinite there).
    pub fn check_new_limit(
        &self,
        user: Option<&str>,
        in_use: &Usage,
        resource: Resource,
        limit: i64,
    ) -> Result<(), BadLimit> {
        let infinite = |v: i64| if v == UNLIMITED { i128::MAX } else { i128::from(v) };
        let (minimum, maximum) = self.settable(user, in_use, resource);
        if infinite(limit) < infinite(minimum) {
            return Err(BadLimit::BelowUsage {
                resource,
                limit,
                minimum,
            });
        }
        if infinite(limit) > infinite(maximum) {
            return Err(BadLimit::AboveMaximum {
                resource,
                limit,
                maximum,
            });
        }
        Ok(())
    }

    /// Whether the servers `user` boots count against any limit, the project's
    /// or the user's: if not, no count of them can refuse a boot.
    #[must_use]
    pub fn limits_servers(&self, user: &str) -> bool {
        let (project, user) = (self.project(), self.user(user));
        SERVER_RESOURCES
            .iter()
            .any(|&r| project.get(r) != UNLIMITED || user.get(r) != UNLIMITED)
    }

    /// Nova's `check_num_instances_quota`: how many servers of `cost`, from `min`
    /// to `max`, `user` may boot given the project's and the user's usage. The
    /// project's usage is held to the project's limits and the user's to the
    /// user's; over either, as many as fit if that is at least `min`, else
    /// Nova's `TooManyInstances`, which reports the user's usage (whichever
    /// limit was passed) against the limit passed.
    pub fn servers(&self, user: &str, usage: (&Usage, &Usage), cost: Cost, min: u32, max: u32) -> Result<u32, Refusal> {
        let (project_usage, user_usage) = usage;
        let (project, user) = (self.project(), self.user(user));
        let mut max = max;
        loop {
            let delta = |r: Resource| match r {
                Resource::Cores => i64::from(max) * cost.vcpus,
                Resource::Ram => i64::from(max) * cost.ram_mb,
                _ => i64::from(max),
            };
            let mut overs = Vec::new();
            let mut over_user = false;
            for r in SERVER_RESOURCES {
                let (p, u) = (project.get(r), user.get(r));
                if p >= 0 && p < project_usage.in_use(r) + delta(r) {
                    overs.push(r);
                } else if u >= 0 && u < user_usage.in_use(r) + delta(r) {
                    overs.push(r);
                    over_user = true;
                }
            }
            if overs.is_empty() {
                return Ok(max);
            }
            let quotas = if over_user { &user } else { &project };
            let instances_headroom = quotas.get(Resource::Instances) - user_usage.in_use(Resource::Instances);
            // Nova's `get_headroom`: an unlimited cores or RAM quota has the
            // instances' headroom in that unit.
            let headroom = |r: Resource| match r {
                Resource::Instances => instances_headroom,
                _ if quotas.get(r) == UNLIMITED => {
                    let per_server = if r == Resource::Cores { cost.vcpus } else { cost.ram_mb };
                    if delta(r) == 0 {
                        instances_headroom
                    } else {
                        instances_headroom * per_server
                    }
                }
                _ => quotas.get(r) - user_usage.in_use(r),
            };
            let mut allowed = instances_headroom;
            if cost.vcpus > 0 {
                allowed = allowed.min(headroom(Resource::Cores).div_euclid(cost.vcpus));
            }
            if cost.ram_mb > 0 {
                allowed = allowed.min(headroom(Resource::Ram).div_euclid(cost.ram_mb));
            }
            // Nova retries with as many as fit; one that would not shrink the
            // request (Nova would recurse without end) is refused instead.
            if allowed > 0 && i64::from(min) <= allowed && allowed < i64::from(max) {
                max = u32::try_from(allowed).unwrap_or(max);
                continue;
            }
            let requested = |r: Resource| match r {
                Resource::Instances if min == max => min.to_string(),
                Resource::Instances => format!("{min}-{max}"),
                _ => delta(r).to_string(),
            };
            let join = |f: &dyn Fn(Resource) -> String| overs.iter().map(|r| f(*r)).collect::<Vec<_>>().join(", ");
            return Err(Refusal::TooManyInstances {
                overs: join(&|r| r.name().to_owned()),
                requested: join(&requested),
                used: join(&|r| (quotas.get(r) - headroom(r)).to_string()),
                allowed: join(&|r| quotas.get(r).to_string()),
            });
        }
    }

    /// Nova's check of a boot's or rebuild's personality files: their count,
    /// then the longest path and the longest contents (as sent: base64), each
    /// against the smaller of the project's limit and the user's.
    pub fn injected_files(&self, user: &str, files: &[InjectedFile]) -> Result<(), Refusal> {
        if files.is_empty() {
            return Ok(());
        }
        let limit = |resource| self.project().get(resource).min(self.user(user).get(resource));
        let over = |limit: i64, size: usize| limit >= 0 && limit < i64::try_from(size).unwrap_or(i64::MAX);
        if over(limit(Resource::InjectedFiles), files.len()) {
            return Err(Refusal::InjectedFiles);
        }
        let longest = |size: fn(&InjectedFile) -> usize| files.iter().map(size).max().unwrap_or(0);
        let path_limit = limit(Resource::InjectedFilePathBytes);
        if over(path_limit, longest(|f| f.path.len())) {
            return Err(Refusal::InjectedFilePath { allowed: path_limit });
        }
        let content_limit = limit(Resource::InjectedFileContentBytes);
        if over(content_limit, longest(|f| f.contents.len())) {
            return Err(Refusal::InjectedFileContent { allowed: content_limit });
        }
        Ok(())
    }

    /// Nova's check of one more key pair for `user`, who has `count`: against
    /// the smaller of this project's limit and the user's in it.
    pub fn key_pair(&self, user: &str, count: i64) -> Result<(), Refusal> {
        let limit = self
            .project()
            .get(Resource::KeyPairs)
            .min(self.user(user).get(Resource::KeyPairs));
        if limit >= 0 && limit < count + 1 {
            return Err(Refusal::KeyPairs);
        }
        Ok(())
    }

    /// Nova's check of one more server group of `user`, with the project's
    /// `project` groups and the user's `own` in it.
    pub fn server_group(&self, user: &str, project: i64, own: i64) -> Result<(), Refusal> {
        let over = |limit: i64, count: i64| limit >= 0 && limit < count + 1;
        if over(self.project().get(Resource::ServerGroups), project)
            || over(self.user(user).get(Resource::ServerGroups), own)
        {
            return Err(Refusal::ServerGroups);
        }
        Ok(())
    }

    /// Nova's check of `adding` more servers of `user` in a group where the
    /// user has `members` (Nova counts a group's members by user).
    pub fn server_group_members(&self, user: &str, members: i64, adding: i64) -> Result<(), Refusal> {
        let limit = self
            .project()
            .get(Resource::ServerGroupMembers)
            .min(self.user(user).get(Resource::ServerGroupMembers));
        if limit >= 0 && limit < members + adding {
            return Err(Refusal::ServerGroupMembers);
        }
        Ok(())
    }

    /// Nova's check of a server's metadata item count against the project's
    /// limit and the user's; the refusal names the project's.
    pub fn metadata(&self, user: &str, items: usize) -> Result<(), Refusal> {
        let items = i64::try_from(items).unwrap_or(i64::MAX);
        let project = self.project().get(Resource::MetadataItems);
        let own = self.user(user).get(Resource::MetadataItems);
        if (project >= 0 && project < items) || (own >= 0 && own < items) {
            return Err(Refusal::MetadataItems { allowed: project });
        }
        Ok(())
    }
}

/// A personality file of a boot or rebuild (before 2.57): a path in the guest
/// and its contents in base64. A guest writes it to its disk; the fake guest
/// has none, so only the quota sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectedFile {
    pub path: String,
    pub contents: String,
}

/// Servers a batch records for a user of a project: the store checks them
/// again inside that batch's transaction, under the project's quota lock.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerClaim {
    pub project_id: ProjectId,
    pub user_id: String,
    /// The deployment's defaults (`[quota]`; the store holds the `default`
    /// class's values that replace them, and the limits set).
    pub defaults: QuotaSet,
    pub count: u32,
    pub cost: Cost,
}

impl ServerClaim {
    /// The lock claims on the same usage take in turn: the project's servers.
    #[must_use]
    pub fn lock(&self) -> String {
        format!("servers:{}", self.project_id)
    }

    /// Whether any limit applies to these servers: if none does, the store
    /// neither counts nor takes the project's lock.
    #[must_use]
    pub fn is_limited(&self, stored: &ProjectLimits) -> bool {
        Quotas::of(&self.defaults, stored).limits_servers(&self.user_id)
    }

    /// Whether the servers fit, given the project's limits and its live servers
    /// counted inside the claim's batch, after the batch `recorded` its own new
    /// servers (judged last, the claim's lock is held only through its count and
    /// the commit): those are the claim, not usage it must fit beside.
    pub fn judge(&self, stored: &ProjectLimits, counted: &[ServerCount], recorded: &[&Server]) -> Result<(), Refusal> {
        let own: Vec<ServerCount> = recorded
            .iter()
            .filter(|s| s.project_id == self.project_id && !s.is_deleted())
            .map(|s| ServerCount {
                user_id: s.user_id.clone(),
                flavor_ref: s.flavor_ref.clone(),
                cost: s.flavor.as_ref().map(Cost::of),
                servers: 1,
            })
            .collect();
        let before = |user: Option<&str>| Usage::of_servers(counted, user).less(&Usage::of_servers(&own, user));
        let usage = (&before(None), &before(Some(&self.user_id)));
        Quotas::of(&self.defaults, stored)
            .servers(&self.user_id, usage, self.cost, self.count, self.count)
            .map(|_| ())
    }
}

/// One more key pair for a user, under the limits of the project it is made
/// in: checked again inside the batch's transaction, under the user's lock.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPairClaim {
    pub project_id: ProjectId,
    pub user_id: String,
    pub defaults: QuotaSet,
}

impl KeyPairClaim {
    /// The lock claims on the same usage take in turn: the user's key pairs.
    #[must_use]
    pub fn lock(&self) -> String {
        format!("key_pairs:{}", self.user_id)
    }

    /// Whether one more fits, given the project's limits and the user's count.
    pub fn judge(&self, stored: &ProjectLimits, key_pairs: i64) -> Result<(), Refusal> {
        Quotas::of(&self.defaults, stored).key_pair(&self.user_id, key_pairs)
    }
}

/// One more server group of a user in a project: checked again inside the
/// batch's transaction, under the project's server-group lock.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerGroupClaim {
    pub project_id: ProjectId,
    pub user_id: String,
    pub defaults: QuotaSet,
}

impl ServerGroupClaim {
    /// The lock claims on the same usage take in turn: the project's groups.
    #[must_use]
    pub fn lock(&self) -> String {
        format!("server_groups:{}", self.project_id)
    }

    /// Whether one more fits, given the project's limits and its groups'
    /// count, the project's and the user's.
    pub fn judge(&self, stored: &ProjectLimits, project: i64, own: i64) -> Result<(), Refusal> {
        Quotas::of(&self.defaults, stored).server_group(&self.user_id, project, own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server of `user` in `project` (m1.tiny), as a boot's batch records it.
    fn new_server(project: &str, user: &str) -> Server {
        Server {
            project_id: ProjectId::from(project),
            user_id: user.into(),
            ..crate::fixtures::server()
        }
    }

    #[test]
    fn a_claim_is_judged_beside_the_usage_before_its_batch_recorded_it() {
        let claim = |count| ServerClaim {
            project_id: ProjectId::from("proj"),
            user_id: "alice".into(),
            defaults: QuotaSet::default(),
            count,
            cost: Cost { vcpus: 1, ram_mb: 512 },
        };
        let limit = |user: Option<&str>, hard_limit| QuotaLimit {
            project_id: ProjectId::from("proj"),
            user_id: user.map(str::to_owned),
            resource: Resource::Instances,
            hard_limit,
        };
        let limits = ProjectLimits {
            default_class: Vec::new(),
            limits: vec![limit(None, 3), limit(Some("alice"), 2)],
        };
        let tiny = |user: &str, servers| ServerCount {
            user_id: user.into(),
            flavor_ref: "1".into(),
            cost: None,
            servers,
        };
        let (mine, yours) = (new_server("proj", "alice"), new_server("proj", "alice"));
        let elsewhere = new_server("other", "alice");
        // Bob had 1; the batch recorded Alice's 2: counted 3, of which 2 are the claim.
        let counted = [tiny("alice", 2), tiny("bob", 1)];
        assert_eq!(claim(2).judge(&limits, &counted, &[&mine, &yours]), Ok(()));
        assert_eq!(
            claim(2).judge(&limits, &counted, &[&mine, &yours, &elsewhere]),
            Ok(()),
            "another project's new server is not this claim's"
        );
        // Counted without its own, the same claim is Alice's 4th of a limit of 2.
        assert!(
            matches!(
                claim(2).judge(&limits, &counted, &[]),
                Err(Refusal::TooManyInstances { .. })
            ),
            "servers counted that the batch did not record are usage"
        );
        // Bob's 2nd server now would make the project's 4th.
        let counted = [tiny("alice", 2), tiny("bob", 2)];
        assert!(matches!(
            claim(2).judge(&limits, &counted, &[&mine, &yours]),
            Err(Refusal::TooManyInstances { .. })
        ));
    }

    #[test]
    fn the_default_class_stands_in_for_the_deployments_defaults() {
        let claim = ServerClaim {
            project_id: ProjectId::from("proj"),
            user_id: "alice".into(),
            defaults: QuotaSet::default(),
            count: 2,
            cost: Cost { vcpus: 1, ram_mb: 512 },
        };
        let (mine, yours) = (new_server("proj", "alice"), new_server("proj", "alice"));
        let counted = [ServerCount {
            user_id: "alice".into(),
            flavor_ref: "1".into(),
            cost: None,
            servers: 2,
        }];
        let mut stored = ProjectLimits::default();
        assert!(claim.is_limited(&stored), "Nova's 10 instances");
        assert_eq!(claim.judge(&stored, &counted, &[&mine, &yours]), Ok(()));
        stored.default_class = vec![(Resource::Instances, 1), (Resource::KeyPairs, 7)];
        assert_eq!(stored.defaults(&QuotaSet::default()).get(Resource::KeyPairs), 7);
        assert_eq!(stored.defaults(&QuotaSet::default()).get(Resource::Cores), 20);
        assert!(matches!(
            claim.judge(&stored, &counted, &[&mine, &yours]),
            Err(Refusal::TooManyInstances { .. })
        ));
        // The project's own limit is over the class's.
        stored.limits = vec![QuotaLimit {
            project_id: ProjectId::from("proj"),
            user_id: None,
            resource: Resource::Instances,
            hard_limit: 2,
        }];
        assert_eq!(claim.judge(&stored, &counted, &[&mine, &yours]), Ok(()));
        let unlimited = [Resource::Instances, Resource::Cores, Resource::Ram].map(|r| (r, UNLIMITED));
        let open = ProjectLimits {
            default_class: unlimited.to_vec(),
            limits: Vec::new(),
        };
        assert!(!claim.is_limited(&open), "no limit: neither counted nor locked");
    }
}
