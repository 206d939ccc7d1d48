use super::*;

fn aggregate(id: i64, zone: Option<&str>, hosts: &[&str]) -> Aggregate {
    Aggregate {
        id,
        uuid: Uuid::nil(),
        name: format!("agg{id}"),
        hosts: hosts.iter().map(|h| HostName::from(*h)).collect(),
        metadata: zone.map(|z| (ZONE_KEY.to_owned(), z.to_owned())).into_iter().collect(),
        created_at: DateTime::<Utc>::UNIX_EPOCH,
        updated_at: None,
    }
}

fn all(list: Vec<Aggregate>) -> Aggregates {
    Aggregates { generation: 0, list }
}

fn zone(z: Option<&str>) -> MetadataUpdate {
    [(ZONE_KEY.to_owned(), z.map(str::to_owned))].into_iter().collect()
}

fn host(h: &str) -> HostName {
    HostName::from(h)
}

#[test]
fn a_host_is_in_its_aggregates_zone_else_the_default() {
    let aggregates = all(vec![
        aggregate(1, None, &["h1"]),
        aggregate(2, Some("az1"), &["h1", "h2"]),
    ]);
    assert_eq!(aggregates.zone_of(&host("h1"), "nova"), "az1");
    assert_eq!(aggregates.zone_of(&host("h2"), "nova"), "az1");
    assert_eq!(aggregates.zone_of(&host("h3"), "nova"), "nova");
}

#[test]
fn names_are_unique_but_an_aggregate_keeps_its_own() {
    let aggregates = all(vec![aggregate(1, None, &[]), aggregate(2, None, &[])]);
    assert_eq!(
        aggregates.check_name(None, "agg1"),
        Err(Refusal::NameExists("agg1".into()))
    );
    assert_eq!(aggregates.check_name(Some(1), "agg1"), Ok(()));
    assert_eq!(
        aggregates.check_name(Some(2), "agg1").unwrap_err().to_string(),
        "Aggregate agg1 already exists."
    );
}

#[test]
fn a_host_is_never_in_two_zones() {
    let aggregates = all(vec![aggregate(1, Some("az1"), &["h1"]), aggregate(2, Some("az2"), &[])]);
    let refused = aggregates.check_add_host(2, &host("h1"), 0).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Cannot add host to aggregate 2. Reason: One or more hosts already in availability zone(s) ['az1']."
    );
    // An aggregate of the same zone, or of none, may take it.
    let same = all(vec![
        aggregate(1, Some("az1"), &["h1"]),
        aggregate(2, Some("az1"), &[]),
        aggregate(3, None, &[]),
    ]);
    assert_eq!(same.check_add_host(2, &host("h1"), 0), Ok(()));
    assert_eq!(same.check_add_host(3, &host("h1"), 5), Ok(()));
    // Nor may a zone be given to an aggregate whose host is in another.
    let both = all(vec![aggregate(1, Some("az1"), &["h1"]), aggregate(2, None, &["h1"])]);
    let refused = both
        .check_update(2, None, &zone(Some("az2")), ZoneAction::Update, &HashSet::new())
        .unwrap_err();
    assert!(
        matches!(
            refused,
            Refusal::Zone {
                action: ZoneAction::Update,
                id: 2,
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(
        both.check_update(2, None, &zone(Some("az1")), ZoneAction::Update, &HashSet::new()),
        Ok(())
    );
}

#[test]
fn a_zone_is_never_unnamed() {
    let aggregates = all(vec![aggregate(1, Some("az1"), &[])]);
    let refused = aggregates
        .check_update(1, None, &zone(None), ZoneAction::UpdateMetadata, &HashSet::new())
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Cannot update metadata of aggregate 1. Reason: Aggregate agg1 does not support empty named availability zone."
    );
}

#[test]
fn servers_never_change_zone() {
    let busy: HashSet<HostName> = [host("h1")].into_iter().collect();
    let aggregates = all(vec![
        aggregate(1, Some("az1"), &["h1"]),
        aggregate(2, Some("az2"), &[]),
        aggregate(3, None, &["h2"]),
    ]);
    // A rename of the zone of a host with servers.
    let refused = aggregates
        .check_update(1, None, &zone(Some("az9")), ZoneAction::Update, &busy)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Cannot update aggregate 1. Reason: One or more hosts contain instances in this zone."
    );
    assert_eq!(
        aggregates.check_update(1, Some("new"), &zone(Some("az1")), ZoneAction::Update, &busy),
        Ok(())
    );
    assert_eq!(
        aggregates.check_update(3, None, &zone(Some("az3")), ZoneAction::Update, &HashSet::new()),
        Ok(())
    );
    // A host with servers leaving the zone, or joining one from the default.
    let refused = aggregates.check_remove_host(1, &host("h1"), 2).unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("Cannot remove host from aggregate 1. Reason: The host cannot be removed from the aggregate as the availability zone of the host would change from 'az1' to 'None' but the host already has 2 instance(s)."),
        "{refused}"
    );
    assert!(refused.to_string().ends_with("to achieve this.."), "{refused}");
    let refused = aggregates.check_add_host(2, &host("h2"), 1).unwrap_err();
    assert!(refused.to_string().contains("from 'None' to 'az2'"), "{refused}");
    // Without servers, both are free.
    assert_eq!(aggregates.check_remove_host(1, &host("h1"), 0), Ok(()));
    assert_eq!(aggregates.check_add_host(2, &host("h2"), 0), Ok(()));
}

#[test]
fn hosts_are_added_once_removed_if_there_and_aggregates_deleted_empty() {
    let aggregates = all(vec![aggregate(1, None, &["h1"]), aggregate(2, None, &[])]);
    assert_eq!(
        aggregates.check_add_host(1, &host("h1"), 0).unwrap_err().to_string(),
        "Aggregate 1 already has host h1."
    );
    assert_eq!(
        aggregates.check_remove_host(2, &host("h1"), 0),
        Err(Refusal::HostAbsent {
            id: 2,
            host: host("h1")
        })
    );
    assert_eq!(
        aggregates.check_remove_host(7, &host("h1"), 0),
        Err(Refusal::NotFound(7))
    );
    assert_eq!(
        aggregates.check_delete(1).unwrap_err().to_string(),
        "Cannot remove host from aggregate 1. Reason: Host aggregate is not empty."
    );
    assert_eq!(aggregates.check_delete(2), Ok(()));
    assert_eq!(
        aggregates.check_delete(-1).unwrap_err().to_string(),
        "Aggregate -1 could not be found."
    );
}
