//! `quota::Quotas`: the limits in force, what a boot may create (Nova's
//! `check_num_instances_quota`, min/max count and its message), one more key
//! pair, a server's metadata, and the range a new limit must fall in.

use netcache_domain::quota::{BadLimit, Cost, QuotaLimit, QuotaSet, Quotas, Refusal, Resource, ServerCount, Usage};

use super::*;

const ALICE: &str = "alice";
const BOB: &str = "bob";
/// m1.tiny: 1 core, 512 MB.
const TINY: Cost = Cost { vcpus: 1, ram_mb: 512 };
/// m1.medium: 2 cores, 4096 MB.
const MEDIUM: Cost = Cost { vcpus: 2, ram_mb: 4096 };

fn limit(user: Option<&str>, resource: Resource, hard_limit: i64) -> QuotaLimit {
    QuotaLimit {
        project_id: ProjectId::from("proj"),
        user_id: user.map(str::to_owned),
        resource,
        hard_limit,
    }
}

/// `count` servers of `user`'s on flavor `flavor_ref`, costing `cost` each if they keep their flavor.
fn servers(user: &str, flavor_ref: &str, cost: Option<Cost>, count: i64) -> ServerCount {
    ServerCount {
        user_id: user.into(),
        flavor_ref: flavor_ref.into(),
        cost,
        servers: count,
    }
}

/// The project's limits on what servers use (instances, cores, RAM), all lifted.
fn servers_unlimited() -> Vec<QuotaLimit> {
    vec![
        limit(None, Resource::Instances, -1),
        limit(None, Resource::Cores, -1),
        limit(None, Resource::Ram, -1),
    ]
}

fn usage(instances: i64, cores: i64, ram: i64) -> Usage {
    Usage {
        instances,
        cores,
        ram,
        ..Usage::default()
    }
}

#[test]
fn defaults_are_novas_and_listed_by_name() {
    let defaults = QuotaSet::default();
    let listed: Vec<(&str, i64)> = defaults.iter().map(|(r, v)| (r.name(), v)).collect();
    assert_eq!(
        listed,
        [
            ("cores", 20),
            ("fixed_ips", -1),
            ("floating_ips", -1),
            ("injected_file_content_bytes", 10240),
            ("injected_file_path_bytes", 255),
            ("injected_files", 5),
            ("instances", 10),
            ("key_pairs", 100),
            ("metadata_items", 128),
            ("ram", 51200),
            ("security_group_rules", -1),
            ("security_groups", -1),
            ("server_group_members", 10),
            ("server_groups", 10),
        ]
    );
    for (resource, _) in defaults.iter() {
        assert_eq!(resource.name().parse::<Resource>(), Ok(resource));
    }
    assert!("networks".parse::<Resource>().is_err());
}

#[test]
fn a_users_limit_falls_back_to_the_projects_then_the_default() {
    let defaults = QuotaSet::default();
    let limits = [
        limit(None, Resource::Ram, 5120),
        limit(None, Resource::Cores, 4),
        limit(Some(ALICE), Resource::Ram, 2048),
    ];
    let quotas = Quotas::new(&defaults, &limits);
    let project = quotas.project();
    assert_eq!((project.get(Resource::Ram), project.get(Resource::Cores)), (5120, 4));
    assert_eq!(project.get(Resource::Instances), 10, "the default");
    let alice = quotas.user(ALICE);
    assert_eq!((alice.get(Resource::Ram), alice.get(Resource::Cores)), (2048, 4));
    assert_eq!(quotas.user(BOB), project, "a user without limits has the project's");
}

#[test]
fn usage_is_counted_from_servers_and_their_flavors() {
    let counts = [servers(ALICE, "1", None, 2), servers(BOB, "3", None, 1)];
    assert_eq!(Usage::of_servers(&counts, None), usage(3, 4, 5120));
    assert_eq!(Usage::of_servers(&counts, Some(ALICE)), usage(2, 2, 1024));
    assert_eq!(Usage::of_servers(&counts, Some("carol")), usage(0, 0, 0));
    assert_eq!(usage(3, 4, 5120).in_use(Resource::KeyPairs), 0, "shown as 0, as Nova");
}

#[test]
fn servers_that_keep_their_flavor_are_counted_from_it_not_the_built_in_one() {
    let counts = [
        servers(ALICE, "1", Some(MEDIUM), 2),
        servers(ALICE, "gone", Some(TINY), 1),
        servers(BOB, "unknown", None, 1),
    ];
    assert_eq!(Usage::of_servers(&counts, Some(ALICE)), usage(3, 5, 8704));
    assert_eq!(
        Usage::of_servers(&counts, Some(BOB)),
        usage(1, 0, 0),
        "no snapshot and no built-in flavor: the instance alone"
    );
}

#[test]
fn servers_are_counted_only_where_a_limit_applies_to_them() {
    let defaults = QuotaSet::default();
    let unlimited = servers_unlimited();
    assert!(
        Quotas::new(&defaults, &[]).limits_servers(ALICE),
        "Nova's defaults limit them"
    );
    assert!(!Quotas::new(&defaults, &unlimited).limits_servers(ALICE));
    let mut alices_ram = unlimited.clone();
    alices_ram.push(limit(Some(ALICE), Resource::Ram, 4096));
    assert!(
        Quotas::new(&defaults, &alices_ram).limits_servers(ALICE),
        "a user's own limit"
    );
    assert!(!Quotas::new(&defaults, &alices_ram).limits_servers(BOB));
    let mut key_pairs = unlimited.clone();
    key_pairs.push(limit(None, Resource::KeyPairs, 1));
    assert!(
        !Quotas::new(&defaults, &key_pairs).limits_servers(ALICE),
        "only cores, instances and RAM count servers"
    );
}

struct BootCase {
    name: &'static str,
    limits: Vec<QuotaLimit>,
    /// The project's usage, then the user's (Alice's).
    usage: (Usage, Usage),
    cost: Cost,
    min_max: (u32, u32),
    /// Given last, by [`BootCase::fits`] or [`BootCase::refused`].
    want: Option<Result<u32, &'static str>>,
}

impl BootCase {
    /// Alice boots one m1.tiny under Nova's default limits, with `usage` in
    /// use (the project's, then hers). Each row then says what differs, and
    /// what fits or why it is refused.
    fn new(name: &'static str, usage: (Usage, Usage)) -> Self {
        Self {
            name,
            limits: vec![],
            usage,
            cost: TINY,
            min_max: (1, 1),
            want: None,
        }
    }
    fn limits(self, limits: Vec<QuotaLimit>) -> Self {
        Self { limits, ..self }
    }
    fn of(self, cost: Cost) -> Self {
        Self { cost, ..self }
    }
    /// Asks for at least `min` servers and at most `max`.
    fn count(self, min: u32, max: u32) -> Self {
        Self {
            min_max: (min, max),
            ..self
        }
    }
    fn fits(self, servers: u32) -> Self {
        Self {
            want: Some(Ok(servers)),
            ..self
        }
    }
    fn refused(self, message: &'static str) -> Self {
        Self {
            want: Some(Err(message)),
            ..self
        }
    }
}

impl Case for BootCase {
    type Decision = Result<u32, String>;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let defaults = QuotaSet::default();
        let (min, max) = self.min_max;
        Quotas::new(&defaults, &self.limits)
            .servers(ALICE, (&self.usage.0, &self.usage.1), self.cost, min, max)
            .map_err(|refusal| refusal.to_string())
    }
    fn expected(&self) -> Self::Decision {
        self.want.expect("every row says its decision").map_err(str::to_owned)
    }
}

#[test]
fn boots_fit_the_quotas_as_nova_counts_them() {
    let alone = |instances, cores, ram| (usage(instances, cores, ram), usage(instances, cores, ram));
    check(&[
        BootCase::new("room for it", alone(9, 9, 9 * 512)).fits(1),
        BootCase::new("instances full", alone(10, 10, 5120))
            .refused("Quota exceeded for instances: Requested 1, but already used 10 of 10 instances"),
        BootCase::new("cores set to 0", alone(0, 0, 0))
            .limits(vec![limit(None, Resource::Cores, 0)])
            .refused("Quota exceeded for cores: Requested 1, but already used 0 of 0 cores"),
        BootCase::new("ram set to 0", alone(0, 0, 0))
            .limits(vec![limit(None, Resource::Ram, 0)])
            .refused("Quota exceeded for ram: Requested 512, but already used 0 of 0 ram"),
        BootCase::new("several resources over: named together, in order", alone(1, 1, 512))
            .limits(vec![limit(None, Resource::Cores, 1), limit(None, Resource::Ram, 1024)])
            .of(MEDIUM)
            .refused("Quota exceeded for cores, ram: Requested 2, 4096, but already used 1, 512 of 1, 1024 cores, ram"),
        BootCase::new("max does not fit, min does: as many as fit", alone(7, 7, 7 * 512))
            .count(2, 5)
            .fits(3),
        BootCase::new("cores allow fewer than instances", alone(1, 2, 1024))
            .limits(vec![limit(None, Resource::Cores, 5)])
            .of(MEDIUM)
            .count(1, 4)
            .fits(1),
        BootCase::new("min does not fit: the range is named", alone(8, 8, 8 * 512))
            .count(3, 5)
            .refused("Quota exceeded for instances: Requested 3-5, but already used 8 of 10 instances"),
        BootCase::new("unlimited resources never refuse", alone(500, 500, 500 * 512))
            .limits(servers_unlimited())
            .count(10, 10)
            .fits(10),
        BootCase::new(
            "a user's own limit, below the project's",
            (usage(5, 5, 2560), usage(2, 2, 1024)),
        )
        .limits(vec![limit(Some(ALICE), Resource::Instances, 2)])
        .refused("Quota exceeded for instances: Requested 1, but already used 2 of 2 instances"),
        // Nova reports the booting user's usage against the project's limit.
        BootCase::new(
            "the project full of another user's servers",
            (usage(10, 10, 5120), usage(4, 4, 2048)),
        )
        .refused("Quota exceeded for instances: Requested 1, but already used 4 of 10 instances"),
        // Nova would retry the same request forever here; it is refused.
        BootCase::new(
            "a retry that would not shrink the request",
            (usage(10, 10, 5120), usage(4, 4, 2048)),
        )
        .count(1, 6)
        .refused("Quota exceeded for instances: Requested 1-6, but already used 4 of 10 instances"),
    ]);
}

struct LimitCase {
    name: &'static str,
    limits: Vec<QuotaLimit>,
    /// `None`: the project's limit; else this user's.
    user: Option<&'static str>,
    in_use: Usage,
    new: (Resource, i64),
    /// Given last, by [`LimitCase::want`].
    want: Option<Result<(), BadLimit>>,
}

impl LimitCase {
    /// The project's limit of a resource set to a new value, nothing in use
    /// and no limit set. Each row then says what differs, and the decision.
    fn new(name: &'static str, new: (Resource, i64)) -> Self {
        Self {
            name,
            limits: vec![],
            user: None,
            in_use: Usage::default(),
            new,
            want: None,
        }
    }
    fn limits(self, limits: Vec<QuotaLimit>) -> Self {
        Self { limits, ..self }
    }
    fn of(self, user: &'static str) -> Self {
        Self {
            user: Some(user),
            ..self
        }
    }
    fn using(self, in_use: Usage) -> Self {
        Self { in_use, ..self }
    }
    fn want(self, want: Result<(), BadLimit>) -> Self {
        Self {
            want: Some(want),
            ..self
        }
    }
}

impl Case for LimitCase {
    type Decision = Result<(), BadLimit>;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Self::Decision {
        let defaults = QuotaSet::default();
        let (resource, value) = self.new;
        Quotas::new(&defaults, &self.limits).check_new_limit(self.user, &self.in_use, resource, value)
    }
    fn expected(&self) -> Self::Decision {
        self.want.clone().expect("every row says its decision")
    }
}

#[test]
fn new_limits_respect_usage_and_the_projects_room() {
    use Resource::{Instances, Ram};
    let below = |resource, limit, minimum| {
        Err(BadLimit::BelowUsage {
            resource,
            limit,
            minimum,
        })
    };
    let above = |resource, limit, maximum| {
        Err(BadLimit::AboveMaximum {
            resource,
            limit,
            maximum,
        })
    };
    // 5120 MB for the project, 1024 of them Bob's.
    let bobs_share = vec![limit(None, Ram, 5120), limit(Some(BOB), Ram, 1024)];
    check(&[
        LimitCase::new("above usage", (Instances, 3))
            .using(usage(3, 3, 1536))
            .want(Ok(())),
        LimitCase::new("below usage", (Instances, 2))
            .using(usage(3, 3, 1536))
            .want(below(Instances, 2, 3)),
        LimitCase::new("unlimited is above any usage", (Instances, -1))
            .using(usage(3, 3, 1536))
            .want(Ok(())),
        LimitCase::new("a project's limit covers what its users were given", (Ram, 3000))
            .limits(vec![limit(Some(ALICE), Ram, 2048), limit(Some(BOB), Ram, 1024)])
            .want(below(Ram, 3000, 3072)),
        LimitCase::new("a user's limit within the project's room", (Ram, 4096))
            .limits(bobs_share.clone())
            .of(ALICE)
            .want(Ok(())),
        LimitCase::new("a user's limit beyond the project's room", (Ram, 4097))
            .limits(bobs_share.clone())
            .of(ALICE)
            .want(above(Ram, 4097, 4096)),
        LimitCase::new("a user's own limit counts towards the room", (Ram, 5120))
            .limits(vec![limit(None, Ram, 5120), limit(Some(ALICE), Ram, 2048)])
            .of(ALICE)
            .want(Ok(())),
        LimitCase::new("a user's limit below the user's usage", (Instances, 1))
            .of(ALICE)
            .using(usage(2, 2, 1024))
            .want(below(Instances, 1, 2)),
    ]);
    let message = |bad: Result<(), BadLimit>| bad.unwrap_err().to_string();
    assert_eq!(
        message(below(Instances, 2, 3)),
        "Quota limit 2 for instances must be greater than or equal to already used and reserved 3."
    );
    assert_eq!(
        message(above(Ram, 4097, 4096)),
        "Quota limit 4097 for ram must be less than or equal to 4096."
    );
}

#[test]
fn key_pairs_and_metadata_are_held_to_the_smaller_limit() {
    let defaults = QuotaSet::default();
    let none = Quotas::new(&defaults, &[]);
    assert_eq!(none.key_pair(ALICE, 99), Ok(()));
    assert_eq!(none.key_pair(ALICE, 100), Err(Refusal::KeyPairs));
    assert_eq!(Refusal::KeyPairs.to_string(), "Quota exceeded, too many key pairs.");
    let users = [limit(Some(ALICE), Resource::KeyPairs, 2)];
    let quotas = Quotas::new(&defaults, &users);
    assert_eq!(quotas.key_pair(ALICE, 2), Err(Refusal::KeyPairs));
    assert_eq!(quotas.key_pair(BOB, 2), Ok(()));
    // -1 anywhere is unlimited (Nova takes the smaller value).
    let open = [
        limit(None, Resource::KeyPairs, -1),
        limit(Some(ALICE), Resource::KeyPairs, 2),
    ];
    assert_eq!(Quotas::new(&defaults, &open).key_pair(ALICE, 50), Ok(()));

    assert_eq!(none.metadata(ALICE, 128), Ok(()));
    let refused = none.metadata(ALICE, 129).unwrap_err();
    assert_eq!(refused.to_string(), "Maximum number of metadata items exceeds 128");
    let alices = [limit(Some(ALICE), Resource::MetadataItems, 1)];
    assert_eq!(
        Quotas::new(&defaults, &alices).metadata(ALICE, 2),
        Err(Refusal::MetadataItems { allowed: 128 }),
        "over the user's limit, the project's is named"
    );
}

#[test]
fn server_groups_and_their_members_are_held_to_the_project_and_the_user() {
    let defaults = QuotaSet::default();
    let none = Quotas::new(&defaults, &[]);
    assert_eq!(none.server_group(ALICE, 9, 9), Ok(()));
    assert_eq!(none.server_group(ALICE, 10, 0), Err(Refusal::ServerGroups));
    assert_eq!(
        Refusal::ServerGroups.to_string(),
        "Quota exceeded, too many server groups."
    );
    let alices = [limit(Some(ALICE), Resource::ServerGroups, 1)];
    let quotas = Quotas::new(&defaults, &alices);
    assert_eq!(quotas.server_group(ALICE, 1, 1), Err(Refusal::ServerGroups));
    assert_eq!(quotas.server_group(BOB, 1, 1), Ok(()));

    assert_eq!(none.server_group_members(ALICE, 9, 1), Ok(()));
    assert_eq!(none.server_group_members(ALICE, 9, 2), Err(Refusal::ServerGroupMembers));
    assert_eq!(
        Refusal::ServerGroupMembers.to_string(),
        "Quota exceeded, too many servers in group"
    );
    let open = [limit(None, Resource::ServerGroupMembers, -1)];
    assert_eq!(
        Quotas::new(&defaults, &open).server_group_members(ALICE, 500, 1),
        Ok(())
    );
}
