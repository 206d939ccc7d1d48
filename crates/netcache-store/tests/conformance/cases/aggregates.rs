//! Host aggregates: read whole with their hosts and metadata, a name unique
//! across processes, and every write of an existing aggregate applied only at
//! the generation its decision read, so of two racing writes one wins.

use std::collections::BTreeMap;

use netcache_domain::HostName;
use netcache_domain::aggregate::{AggregateWrite, NewAggregate, ZONE_KEY};

use super::*;

fn new(name: &str, zone: Option<&str>) -> NewAggregate {
    NewAggregate {
        uuid: uuid::Uuid::new_v4(),
        name: name.to_owned(),
        availability_zone: zone.map(str::to_owned),
        created_at: at(0),
    }
}

fn add(id: i64, host: &str) -> AggregateWrite {
    AggregateWrite::AddHost {
        id,
        host: HostName::from(host),
    }
}

pub async fn aggregates_round_trip_with_hosts_and_metadata(db: &Db) {
    let store = &*db.store;
    let empty = store.aggregates().await.unwrap();
    assert!(empty.list.is_empty());
    let plain = store.create_aggregate(&new("plain", None)).await.unwrap();
    let zoned = store.create_aggregate(&new("zoned", Some("az1"))).await.unwrap();
    assert!(zoned.id > plain.id);
    assert_eq!(zoned.availability_zone(), Some("az1"));

    let generation = store.aggregates().await.unwrap().generation;
    assert!(store.write_aggregate(generation, &add(zoned.id, "h2")).await.unwrap());
    assert!(
        store
            .write_aggregate(generation + 1, &add(zoned.id, "h1"))
            .await
            .unwrap()
    );
    let metadata: BTreeMap<String, Option<String>> = [
        (ZONE_KEY.to_owned(), Some("az2".to_owned())),
        ("k".to_owned(), Some("v".to_owned())),
    ]
    .into_iter()
    .collect();
    let update = AggregateWrite::Update {
        id: zoned.id,
        name: Some("renamed".into()),
        metadata,
        at: at(5),
    };
    assert!(store.write_aggregate(generation + 2, &update).await.unwrap());
    let read = store.aggregates().await.unwrap();
    assert_eq!(read.generation, generation + 3);
    assert_eq!(
        read.list,
        vec![plain.clone(), {
            let mut z = zoned.clone();
            z.name = "renamed".into();
            z.hosts = vec![HostName::from("h2"), HostName::from("h1")];
            z.metadata = [
                (ZONE_KEY.to_owned(), "az2".to_owned()),
                ("k".to_owned(), "v".to_owned()),
            ]
            .into();
            z.updated_at = Some(at(5));
            z
        }]
    );

    // A metadata key removed, a host removed, an aggregate deleted.
    let remove = AggregateWrite::Update {
        id: zoned.id,
        name: None,
        metadata: [("k".to_owned(), None)].into(),
        at: at(6),
    };
    assert!(store.write_aggregate(read.generation, &remove).await.unwrap());
    let host = AggregateWrite::RemoveHost {
        id: zoned.id,
        host: HostName::from("h2"),
    };
    assert!(store.write_aggregate(read.generation + 1, &host).await.unwrap());
    assert!(
        store
            .write_aggregate(read.generation + 2, &AggregateWrite::Delete { id: plain.id })
            .await
            .unwrap()
    );
    let read = store.aggregates().await.unwrap();
    assert_eq!(read.list.len(), 1);
    let zoned = &read.list[0];
    assert_eq!(
        (zoned.name.as_str(), zoned.hosts.as_slice()),
        ("renamed", [HostName::from("h1")].as_slice())
    );
    assert_eq!(zoned.metadata, [(ZONE_KEY.to_owned(), "az2".to_owned())].into());

    // Gone or absent: not found, and nothing applied.
    let missing = store
        .write_aggregate(read.generation, &AggregateWrite::Delete { id: plain.id })
        .await;
    assert!(matches!(missing, Err(Error::NotFound(_))), "{missing:?}");
    let absent = AggregateWrite::RemoveHost {
        id: zoned.id,
        host: HostName::from("h9"),
    };
    assert!(matches!(
        store.write_aggregate(read.generation, &absent).await,
        Err(Error::NotFound(_))
    ));
    assert_eq!(store.aggregates().await.unwrap(), read);
    if let Some(reopened) = db.reopen().await {
        assert_eq!(reopened.aggregates().await.unwrap(), read);
    }
}

pub async fn an_aggregate_name_is_unique_across_processes(db: &Db) {
    let other = db.reopen().await.unwrap_or_else(|| db.store.clone());
    let (one, two) = (new("same", None), new("same", Some("az1")));
    let (a, b) = tokio::join!(db.store.create_aggregate(&one), other.create_aggregate(&two));
    let outcomes = [a.is_ok(), b.is_ok()];
    assert_eq!(outcomes.iter().filter(|ok| **ok).count(), 1, "{a:?} {b:?}");
    assert!(matches!(a.err().or(b.err()), Some(Error::Conflict(_))));
    let other_name = db.store.create_aggregate(&new("other", None)).await.unwrap();
    let read = db.store.aggregates().await.unwrap();
    assert_eq!(read.list.len(), 2);
    let rename = AggregateWrite::Update {
        id: other_name.id,
        name: Some("same".into()),
        metadata: BTreeMap::new(),
        at: at(1),
    };
    assert!(matches!(
        db.store.write_aggregate(read.generation, &rename).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(db.store.aggregates().await.unwrap(), read, "nothing applied");
}

pub async fn racing_aggregate_writes_one_wins(db: &Db) {
    let other = db.reopen().await.unwrap_or_else(|| db.store.clone());
    let first = db.store.create_aggregate(&new("a", Some("az1"))).await.unwrap();
    let second = db.store.create_aggregate(&new("b", Some("az2"))).await.unwrap();
    let read = db.store.aggregates().await.unwrap();
    // The same host into two zones, each decided from the same read.
    let (one, two) = (add(first.id, "h1"), add(second.id, "h1"));
    let (a, b) = tokio::join!(
        db.store.write_aggregate(read.generation, &one),
        other.write_aggregate(read.generation, &two)
    );
    let won = [a.unwrap(), b.unwrap()];
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let after = db.store.aggregates().await.unwrap();
    assert_eq!(after.generation, read.generation + 1);
    let holding: Vec<i64> = after
        .list
        .iter()
        .filter(|a| !a.hosts.is_empty())
        .map(|a| a.id)
        .collect();
    assert_eq!(holding.len(), 1);
    // A host added twice, at a fresh generation each time: the key refuses it.
    let id = holding[0];
    assert!(matches!(
        db.store.write_aggregate(after.generation, &add(id, "h1")).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(db.store.aggregates().await.unwrap(), after);
}
