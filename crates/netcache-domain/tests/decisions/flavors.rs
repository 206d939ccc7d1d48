//! `flavor`: which flavors a caller sees, and Nova's list of them (filters,
//! sort keys, marker, limit).

use std::collections::{BTreeMap, BTreeSet};

use netcache_domain::flavor::{Flavor, ListQuery, MarkerNotFound, SortKey, built_in_snapshot, list};

use super::*;

fn flavor(id: &str, name: &str, ram_mb: i64, disk_gb: i64, public: bool, projects: &[&str]) -> Flavor {
    Flavor {
        id: id.into(),
        name: name.into(),
        ram_mb,
        vcpus: 1,
        disk_gb,
        ephemeral_gb: 0,
        swap_mb: 0,
        rxtx_factor: 1.0,
        is_public: public,
        description: None,
        extra_specs: BTreeMap::new(),
        projects: projects.iter().map(|p| (*p).to_owned()).collect::<BTreeSet<_>>(),
    }
}

/// In creation order: b (public), a (private to p1), c (private to p2), d (public).
fn catalog() -> Vec<Flavor> {
    vec![
        flavor("b", "small", 512, 10, true, &[]),
        flavor("a", "mine", 2048, 20, false, &["p1"]),
        flavor("c", "theirs", 4096, 40, false, &["p2"]),
        flavor("d", "big", 8192, 80, true, &[]),
    ]
}

fn ids(flavors: Result<Vec<Flavor>, MarkerNotFound>) -> Vec<String> {
    flavors.unwrap().into_iter().map(|f| f.id).collect()
}

#[test]
fn a_member_sees_public_flavors_and_those_his_project_may_use() {
    let p1 = ProjectId::from("p1");
    assert_eq!(ids(list(catalog(), &ListQuery::new(&p1, false))), ["a", "b", "d"]);
    let p3 = ProjectId::from("p3");
    assert_eq!(ids(list(catalog(), &ListQuery::new(&p3, false))), ["b", "d"]);
    assert!(catalog()[2].visible_to(&ProjectId::from("p2"), false));
    assert!(!catalog()[2].visible_to(&p1, false));
    assert!(catalog()[2].visible_to(&p1, true), "an admin sees every flavor");
}

#[test]
fn an_admin_chooses_public_private_or_all() {
    let admin = ProjectId::from("p2");
    let public = ListQuery::new(&admin, true);
    assert_eq!(
        ids(list(catalog(), &public)),
        ["b", "c", "d"],
        "public, and his project's"
    );
    let private = ListQuery {
        is_public: Some(false),
        ..public.clone()
    };
    assert_eq!(ids(list(catalog(), &private)), ["a", "c"]);
    let all = ListQuery {
        is_public: None,
        ..public
    };
    assert_eq!(ids(list(catalog(), &all)), ["a", "b", "c", "d"]);
}

#[test]
fn filters_sort_keys_marker_and_limit_as_nova() {
    let p = ProjectId::from("admin");
    let all = ListQuery {
        is_public: None,
        ..ListQuery::new(&p, true)
    };
    let min = ListQuery {
        min_ram: Some(2048),
        min_disk: Some(40),
        ..all.clone()
    };
    assert_eq!(ids(list(catalog(), &min)), ["c", "d"]);
    let by_ram_desc = ListQuery {
        sort_key: SortKey::Ram,
        descending: true,
        ..all.clone()
    };
    assert_eq!(ids(list(catalog(), &by_ram_desc)), ["d", "c", "a", "b"]);
    let created = ListQuery {
        sort_key: SortKey::Created,
        ..all.clone()
    };
    assert_eq!(ids(list(catalog(), &created)), ["b", "a", "c", "d"], "creation order");
    let after_a = ListQuery {
        sort_key: SortKey::Created,
        marker: Some("a"),
        limit: Some(1),
        ..all.clone()
    };
    assert_eq!(ids(list(catalog(), &after_a)), ["c"]);
    let matcher = |name: &str| name.starts_with('m') || name.starts_with('b');
    let named = ListQuery {
        name: Some(&matcher),
        ..all.clone()
    };
    assert_eq!(ids(list(catalog(), &named)), ["a", "d"]);
    let unknown = ListQuery {
        marker: Some("zz"),
        ..all
    };
    assert_eq!(list(catalog(), &unknown), Err(MarkerNotFound));
    let p1 = ProjectId::from("p1");
    let hidden = ListQuery {
        marker: Some("c"),
        ..ListQuery::new(&p1, false)
    };
    assert_eq!(
        list(catalog(), &hidden),
        Err(MarkerNotFound),
        "a marker the caller cannot see"
    );
}

#[test]
fn sort_keys_are_novas_names() {
    assert_eq!(SortKey::parse("memory_mb"), Some(SortKey::Ram));
    assert_eq!(SortKey::parse("id"), Some(SortKey::Created));
    assert_eq!(SortKey::parse("ram"), None);
}

#[test]
fn a_flavor_snapshot_keeps_what_a_server_needs_and_built_ins_have_one() {
    let mut f = flavor("x", "custom", 1024, 5, true, &[]);
    f.extra_specs.insert("hw:cpu_policy".into(), "dedicated".into());
    let snap = f.snapshot();
    assert_eq!((snap.name.as_str(), snap.ram_mb, snap.disk_gb), ("custom", 1024, 5));
    assert_eq!(snap.extra_specs, f.extra_specs);
    let tiny = built_in_snapshot("1").unwrap();
    assert_eq!((tiny.name.as_str(), tiny.vcpus, tiny.ram_mb), ("m1.tiny", 1, 512));
    assert_eq!(built_in_snapshot("6"), None);
}
