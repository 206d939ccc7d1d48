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
    let counts = [
        ServerCount {
            user_id: ALICE.into(),
            flavor_ref: "1".into(),
            cost: None,
            servers: 2,
        },
        ServerCount {
            user_id: BOB.into(),
            flavor_ref: "3".into(),
            cost: None,
            servers: 1,
        },
    ];
    assert_eq!(Usage::of_servers(&counts, None), usage(3, 4, 5120));
    assert_eq!(Usage::of_servers(&counts, Some(ALICE)), usage(2, 2, 1024));
    assert_eq!(Usage::of_servers(&counts, Some("carol")), usage(0, 0, 0));
    assert_eq!(usage(3, 4, 5120).in_use(Resource::KeyPairs), 0, "shown as 0, as Nova");
}

#[test]
fn servers_that_keep_their_flavor_are_counted_from_it_not_the_built_in_one() {
    let counts = [
        ServerCount {
            user_id: ALICE.into(),
            flavor_ref: "1".into(),
            cost: Some(MEDIUM),
            servers: 2,
        },
        ServerCount {
            user_id: ALICE.into(),
            flavor_ref: "gone".into(),
            cost: Some(TINY),
            servers: 1,
        },
        ServerCount {
            user_id: BOB.into(),
            flavor_ref: "unknown".into(),
            cost: None,
            servers: 1,
        },
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
    let unlimited = [
        limit(None, Resource::Instances, -1),
        limit(None, Resource::Cores, -1),
        limit(None, Resource::Ram, -1),
    ];
    assert!(
        Quotas::new(&defaults, &[]).limits_servers(ALICE),
        "Nova's defaults limit them"
    );
    assert!(!Quotas::new(&defaults, &unlimited).limits_servers(ALICE));
    let mut alices_ram = unlimited.to_vec();
    alices_ram.push(limit(Some(ALICE), Resource::Ram, 4096));
    assert!(
        Quotas::new(&defaults, &alices_ram).limits_servers(ALICE),
        "a user's own limit"
    );
    assert!(!Quotas::new(&defaults, &alices_ram).limits_servers(BOB));
    let mut key_pairs = unlimited.to_vec();
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
    want: Result<u32, &'static str>,
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
        self.want.map_err(str::to_owned)
    }
}

#[test]
fn boots_fit_the_quotas_as_nova_counts_them() {
    let alone = |instances, cores, ram| (usage(instances, cores, ram), usage(instances, cores, ram));
    check(&[
        BootCase {
            name: "room for it",
            limits: vec![],
            usage: alone(9, 9, 9 * 512),
            cost: TINY,
            min_max: (1, 1),
            want: Ok(1),
        },
        BootCase {
            name: "instances full",
            limits: vec![],
            usage: alone(10, 10, 5120),
            cost: TINY,
            min_max: (1, 1),
            want: Err("Quota exceeded for instances: Requested 1, but already used 10 of 10 instances"),
        },
        BootCase {
            name: "cores set to 0",
            limits: vec![limit(None, Resource::Cores, 0)],
            usage: alone(0, 0, 0),
            cost: TINY,
            min_max: (1, 1),
            want: Err("Quota exceeded for cores: Requested 1, but already used 0 of 0 cores"),
        },
        BootCase {
            name: "ram set to 0",
            limits: vec![limit(None, Resource::Ram, 0)],
            usage: alone(0, 0, 0),
            cost: TINY,
            min_max: (1, 1),
            want: Err("Quota exceeded for ram: Requested 512, but already used 0 of 0 ram"),
        },
        BootCase {
            name: "several resources over: named together, in order",
            limits: vec![limit(None, Resource::Cores, 1), limit(None, Resource::Ram, 1024)],
            usage: alone(1, 1, 512),
            cost: MEDIUM,
            min_max: (1, 1),
            want: Err(
                "Quota exceeded for cores, ram: Requested 2, 4096, but already used 1, 512 of 1, 1024 cores, ram",
            ),
        },
        BootCase {
            name: "max does not fit, min does: as many as fit",
            limits: vec![],
            usage: alone(7, 7, 7 * 512),
            cost: TINY,
            min_max: (2, 5),
            want: Ok(3),
        },
        BootCase {
            name: "cores allow fewer than instances",
            limits: vec![limit(None, Resource::Cores, 5)],
            usage: alone(1, 2, 1024),
            cost: MEDIUM,
            min_max: (1, 4),
            want: Ok(1),
        },
        BootCase {
            name: "min does not fit: the range is named",
            limits: vec![],
            usage: alone(8, 8, 8 * 512),
            cost: TINY,
            min_max: (3, 5),
            want: Err("Quota exceeded for instances: Requested 3-5, but already used 8 of 10 instances"),
        },
        BootCase {
            name: "unlimited resources never refuse",
            limits: vec![
                limit(None, Resource::Instances, -1),
                limit(None, Resource::Cores, -1),
                limit(None, Resource::Ram, -1),
            ],
            usage: alone(500, 500, 500 * 512),
            cost: TINY,
            min_max: (10, 10),
            want: Ok(10),
        },
        BootCase {
            name: "a user's own limit, below the project's",
            limits: vec![limit(Some(ALICE), Resource::Instances, 2)],
            usage: (usage(5, 5, 2560), usage(2, 2, 1024)),
            cost: TINY,
            min_max: (1, 1),
            want: Err("Quota exceeded for instances: Requested 1, but already used 2 of 2 instances"),
        },
        BootCase {
            // Nova reports the booting user's usage against the project's limit.
            name: "the project full of another user's servers",
            limits: vec![],
            usage: (usage(10, 10, 5120), usage(4, 4, 2048)),
            cost: TINY,
            min_max: (1, 1),
            want: Err("Quota exceeded for instances: Requested 1, but already used 4 of 10 instances"),
        },
        BootCase {
            // Nova would retry the same request forever here; it is refused.
            name: "a retry that would not shrink the request",
            limits: vec![],
            usage: (usage(10, 10, 5120), usage(4, 4, 2048)),
            cost: TINY,
            min_max: (1, 6),
            want: Err("Quota exceeded for instances: Requested 1-6, but already used 4 of 10 instances"),
        },
    ]);
}

struct LimitCase {
    name: &'static str,
    limits: Vec<QuotaLimit>,
    /// `None`: the project's limit; else this user's.
    user: Option<&'static str>,
    in_use: Usage,
    new: (Resource, i64),
    want: Result<(), BadLimit>,
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
        self.want.clone()
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
    check(&[
        LimitCase {
            name: "above usage",
            limits: vec![],
            user: None,
            in_use: usage(3, 3, 1536),
            new: (Instances, 3),
            want: Ok(()),
        },
        LimitCase {
            name: "below usage",
            limits: vec![],
            user: None,
            in_use: usage(3, 3, 1536),
            new: (Instances, 2),
            want: below(Instances, 2, 3),
        },
        LimitCase {
            name: "unlimited is above any usage",
            limits: vec![],
            user: None,
            in_use: usage(3, 3, 1536),
            new: (Instances, -1),
            want: Ok(()),
        },
        LimitCase {
            name: "a project's limit covers what its users were given",
            limits: vec![limit(Some(ALICE), Ram, 2048), limit(Some(BOB), Ram, 1024)],
            user: None,
            in_use: usage(0, 0, 0),
            new: (Ram, 3000),
            want: below(Ram, 3000, 3072),
        },
        LimitCase {
            name: "a user's limit within the project's room",
            limits: vec![limit(None, Ram, 5120), limit(Some(BOB), Ram, 1024)],
            user: Some(ALICE),
            in_use: usage(0, 0, 0),
            new: (Ram, 4096),
            want: Ok(()),
        },
        LimitCase {
            name: "a user's limit beyond the project's room",
            limits: vec![limit(None, Ram, 5120), limit(Some(BOB), Ram, 1024)],
            user: Some(ALICE),
            in_use: usage(0, 0, 0),
            new: (Ram, 4097),
            want: Err(BadLimit::AboveMaximum {
                resource: Ram,
                limit: 4097,
                maximum: 4096,
            }),
        },
        LimitCase {
            name: "a user's own limit counts towards the room",
            limits: vec![limit(None, Ram, 5120), limit(Some(ALICE), Ram, 2048)],
            user: Some(ALICE),
            in_use: usage(0, 0, 0),
            new: (Ram, 5120),
            want: Ok(()),
        },
        LimitCase {
            name: "a user's limit below the user's usage",
            limits: vec![],
            user: Some(ALICE),
            in_use: usage(2, 2, 1024),
            new: (Instances, 1),
            want: below(Instances, 1, 2),
        },
    ]);
    assert_eq!(
        BadLimit::BelowUsage {
            resource: Instances,
            limit: 2,
            minimum: 3
        }
        .to_string(),
        "Quota limit 2 for instances must be greater than or equal to already used and reserved 3."
    );
    assert_eq!(
        BadLimit::AboveMaximum {
            resource: Ram,
            limit: 4097,
            maximum: 4096
        }
        .to_string(),
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
