//! Flavors: seeded with the built-in five, unique by id and by name among live
//! ones, soft-deleted; their extra specs and projects; a server's snapshot.

use std::collections::BTreeMap;

use netcache_domain::flavor::{Flavor, FlavorSnapshot, built_in_snapshot};
use netcache_domain::quota::{Cost, ServerCount};

use super::*;

/// Soft-deletes flavor `id` at `at(seconds)`.
fn delete_flavor(id: &str, seconds: i64) -> Change {
    Change::DeleteFlavor {
        id: id.into(),
        at: at(seconds),
    }
}

fn custom(id: &str, name: &str) -> Flavor {
    Flavor {
        id: id.into(),
        name: name.into(),
        ram_mb: 1000,
        vcpus: 3,
        disk_gb: 7,
        ephemeral_gb: 2,
        swap_mb: 128,
        rxtx_factor: 2.5,
        is_public: false,
        description: Some("a \"quoted\" ünïcode one".into()),
        extra_specs: BTreeMap::from([
            ("hw:cpu_policy".into(), "dedicated".into()),
            ("k".into(), String::new()),
        ]),
        projects: ["p1".to_owned(), "p2".to_owned()].into(),
    }
}

pub async fn the_built_in_flavors_are_seeded(db: &Db) {
    let flavors = db.store.flavors().await.unwrap();
    let ids: Vec<&str> = flavors.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    for flavor in &flavors {
        assert_eq!(Some(flavor.snapshot()), built_in_snapshot(&flavor.id), "{flavor:?}");
        assert!(flavor.is_public && flavor.projects.is_empty() && flavor.extra_specs.is_empty());
        assert_eq!((flavor.rxtx_factor, flavor.description.as_deref()), (1.0, None));
    }
}

pub async fn flavors_round_trip_and_are_unique_among_live_ones(db: &Db) {
    let flavor = custom("x-1", "custom");
    commit(&*db.store, vec![Change::InsertFlavor(flavor.clone())]).await;
    assert_eq!(
        db.store.flavor("x-1").await.unwrap(),
        Some(flavor.clone()),
        "every field kept"
    );
    assert_eq!(
        db.store.flavors().await.unwrap().last(),
        Some(&flavor),
        "in creation order"
    );
    assert_eq!(db.store.flavor("X-1").await.unwrap(), None, "ids are exact");

    assert_conflict(
        db.store
            .commit(vec![Change::InsertFlavor(custom("x-1", "other"))])
            .await,
    );
    assert_conflict(
        db.store
            .commit(vec![Change::InsertFlavor(custom("x-2", "custom"))])
            .await,
    );

    commit(&*db.store, vec![delete_flavor("x-1", 1)]).await;
    assert_eq!(db.store.flavor("x-1").await.unwrap(), None);
    assert_eq!(db.store.flavors().await.unwrap().len(), 5, "gone from the list");
    assert_not_found(db.store.commit(vec![delete_flavor("x-1", 1)]).await);
    // A deleted flavor's id and name are free again.
    let again = Flavor {
        is_public: true,
        projects: Default::default(),
        ..custom("x-1", "custom")
    };
    commit(&*db.store, vec![Change::InsertFlavor(again.clone())]).await;
    assert_eq!(
        db.store.flavor("x-1").await.unwrap(),
        Some(again.clone()),
        "not the deleted one's specs and projects"
    );
    if let Some(reopened) = db.reopen().await {
        assert_eq!(reopened.flavor("x-1").await.unwrap(), Some(again));
    }
}

pub async fn flavor_access_and_extra_specs_change_only_live_flavors(db: &Db) {
    let flavor = Flavor {
        extra_specs: BTreeMap::new(),
        projects: Default::default(),
        ..custom("f", "f")
    };
    commit(&*db.store, vec![Change::InsertFlavor(flavor)]).await;
    let access = |project: &str| Change::AddFlavorAccess {
        id: "f".into(),
        project_id: project.into(),
    };
    commit(&*db.store, vec![access("p1"), access("p2")]).await;
    assert_conflict(db.store.commit(vec![access("p1")]).await);
    let remove = |project: &str| Change::RemoveFlavorAccess {
        id: "f".into(),
        project_id: project.into(),
    };
    commit(&*db.store, vec![remove("p1")]).await;
    assert_not_found(db.store.commit(vec![remove("p1")]).await);

    let specs = |pairs: &[(&str, &str)]| Change::SetFlavorExtraSpecs {
        id: "f".into(),
        specs: pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
    };
    commit(&*db.store, vec![specs(&[("a", "1"), ("b", "2")]), specs(&[("a", "3")])]).await;
    let delete_spec = |key: &str| Change::DeleteFlavorExtraSpec {
        id: "f".into(),
        key: key.into(),
    };
    commit(&*db.store, vec![delete_spec("b")]).await;
    assert_not_found(db.store.commit(vec![delete_spec("b")]).await);
    let describe = Change::SetFlavorDescription {
        id: "f".into(),
        description: None,
    };
    commit(&*db.store, vec![describe]).await;

    let stored = db.store.flavor("f").await.unwrap().unwrap();
    assert_eq!(stored.projects, ["p2".to_owned()].into());
    assert_eq!(stored.extra_specs, BTreeMap::from([("a".to_owned(), "3".to_owned())]));
    assert_eq!(stored.description, None);

    commit(&*db.store, vec![delete_flavor("f", 2)]).await;
    for change in [
        access("p3"),
        remove("p2"),
        specs(&[("c", "1")]),
        delete_spec("a"),
        Change::SetFlavorDescription {
            id: "f".into(),
            description: Some("d".into()),
        },
    ] {
        assert_not_found(db.store.commit(vec![change]).await);
    }
}

pub async fn a_server_keeps_its_flavor_snapshot_and_is_counted_from_it(db: &Db) {
    let flavor = Flavor {
        is_public: true,
        ..custom("big", "big")
    };
    let kept = Server {
        flavor_ref: "big".into(),
        flavor: Some(flavor.snapshot()),
        ..bare_server("p", at(1))
    };
    // A row from before servers kept their flavor: the built-in one's.
    let old = Server {
        flavor_ref: "2".into(),
        flavor: None,
        ..bare_server("p", at(2))
    };
    commit(
        &*db.store,
        vec![
            Change::InsertFlavor(flavor),
            Change::InsertServer(kept.clone()),
            Change::InsertServer(old.clone()),
        ],
    )
    .await;
    commit(&*db.store, vec![delete_flavor("big", 3)]).await;
    assert_eq!(
        db.store.server(kept.id).await.unwrap(),
        Some(kept.clone()),
        "the snapshot outlives the flavor"
    );
    let old_read = db.store.server(old.id).await.unwrap().unwrap();
    assert_eq!(old_read.flavor, built_in_snapshot("2"));
    let counts = db.store.server_counts(&ProjectId::from("p")).await.unwrap();
    assert_eq!(
        counts,
        [
            ServerCount {
                user_id: kept.user_id.clone(),
                flavor_ref: "2".into(),
                cost: None,
                servers: 1,
            },
            ServerCount {
                user_id: kept.user_id.clone(),
                flavor_ref: "big".into(),
                cost: Some(Cost { vcpus: 3, ram_mb: 1000 }),
                servers: 1,
            },
        ]
    );
    let snapshot: &FlavorSnapshot = kept.flavor.as_ref().unwrap();
    assert_eq!(snapshot.extra_specs.len(), 2);
}
