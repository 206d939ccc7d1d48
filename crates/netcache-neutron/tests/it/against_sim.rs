//! `HttpNeutron` (no auth) against the embedded Neutron simulator over real HTTP.

use std::time::Duration;

use netcache_domain::neutron::extension;
use netcache_domain::{NetworkId, PortId, ProjectId, SubnetId};
use netcache_neutron::{
    Auth, ClientConfig, Error, FixedIpRequest, HttpNeutron, NetworkFilter, NeutronApi, PortCreate, PortFilter,
    PortUpdate, SecurityGroupFilter, SubnetFilter,
};
use neutron_sim::{FaultAction, FaultRule, NeutronSim, RunningSim, SimConfig};

async fn start() -> anyhow::Result<(RunningSim, neutron_sim::DefaultTopology, HttpNeutron)> {
    let sim = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse()?).await?;
    let topology = sim.handle().create_default_topology("proj");
    let api = HttpNeutron::new(ClientConfig::new(Auth::none(sim.url().parse()?)))?;
    Ok((sim, topology, api))
}

fn create_request(topology: &neutron_sim::DefaultTopology, device_id: &str, tags: Vec<String>) -> PortCreate {
    PortCreate {
        network_id: NetworkId::from(topology.private_network_id.as_str()),
        project_id: Some(ProjectId::from(topology.project_id.as_str())),
        fixed_ips: vec![FixedIpRequest {
            subnet_id: Some(SubnetId::from(topology.private_subnet_id.as_str())),
            ip_address: None,
        }],
        device_id: device_id.to_owned(),
        device_owner: "compute:nova".into(),
        binding_host_id: Some("host1".into()),
        name: Some("netcache-port".into()),
        tags,
        security_groups: None,
    }
}

#[tokio::test]
async fn topology_is_read_through_http() -> anyhow::Result<()> {
    let (sim, topology, api) = start().await?;

    let extensions = api.list_extensions().await?;
    assert!(extensions.contains(extension::REVISION_IF_MATCH));
    assert!(extensions.contains("standard-attr-tag"));

    let external = api
        .list_networks(&NetworkFilter {
            external: Some(true),
            ..NetworkFilter::default()
        })
        .await?;
    assert_eq!(external.len(), 1);
    assert_eq!(external[0].id.as_str(), topology.public_network_id);
    assert!(external[0].external);

    let private = api
        .list_networks(&NetworkFilter {
            ids: vec![NetworkId::from(topology.private_network_id.as_str())],
            ..NetworkFilter::default()
        })
        .await?;
    assert_eq!(private.len(), 1);
    assert_eq!(private[0].subnet_ids.len(), 2);

    let subnets = api
        .list_subnets(&SubnetFilter {
            network_ids: vec![NetworkId::from(topology.private_network_id.as_str())],
            ..SubnetFilter::default()
        })
        .await?;
    assert_eq!(subnets.len(), 2);
    assert!(subnets.iter().any(|s| s.cidr.addr().is_ipv4()));
    assert!(subnets.iter().any(|s| s.cidr.addr().is_ipv6()));
    sim.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn port_round_trip() -> anyhow::Result<()> {
    let (sim, topology, api) = start().await?;
    let device = "11111111-1111-1111-1111-111111111111";
    let marker = vec!["netcache:owner=dep-1".to_owned(), "netcache:intent=abc".to_owned()];

    // Create, with the marker tags in the POST body.
    let created = api
        .create_port(&create_request(&topology, device, marker.clone()))
        .await?;
    assert_eq!(created.device_id, device);
    assert_eq!(created.binding_host_id.as_deref(), Some("host1"));
    assert_eq!(created.project_id.as_str(), "proj");
    assert!(marker.iter().all(|t| created.tags.contains(t)), "{:?}", created.tags);
    let subnet = api
        .list_subnets(&SubnetFilter {
            ids: vec![SubnetId::from(topology.private_subnet_id.as_str())],
            ..Default::default()
        })
        .await?;
    // Neutron also gives an address on every SLAAC subnet of the network, asked or not.
    let v4 = created
        .fixed_ips
        .iter()
        .find(|ip| ip.subnet_id == subnet[0].id)
        .expect("an address on the asked subnet");
    assert!(subnet[0].cidr.contains(&v4.ip_address));

    // Show.
    let shown = api.show_port(&created.id).await?;
    assert_eq!(shown.id, created.id);
    assert_eq!(shown.revision_number, created.revision_number);

    // List by device id (OR with one that has no port), and by marker tags.
    let by_device = api
        .list_ports(&PortFilter {
            device_ids: vec![device.into(), "other".into()],
            ..PortFilter::default()
        })
        .await?;
    assert_eq!(by_device.len(), 1);
    assert_eq!(by_device[0].id, created.id);
    let by_tags = api
        .list_ports(&PortFilter {
            tags: marker.clone(),
            ..PortFilter::default()
        })
        .await?;
    assert_eq!(by_tags.len(), 1);
    let none = api
        .list_ports(&PortFilter {
            tags_any: vec!["nobody".into()],
            ..PortFilter::default()
        })
        .await?;
    assert!(none.is_empty());

    // Update with If-Match: the current revision works, a stale one is refused (412).
    let release = PortUpdate {
        device_id: Some(String::new()),
        ..PortUpdate::default()
    };
    let unbound = api
        .update_port(&created.id, &release, Some(shown.revision_number))
        .await?;
    assert_eq!(unbound.device_id, "");
    assert!(unbound.revision_number > shown.revision_number);
    let stale = api
        .update_port(
            &created.id,
            &PortUpdate::bind(device, "compute:nova", "host2"),
            Some(shown.revision_number),
        )
        .await
        .unwrap_err();
    assert_eq!(stale.status(), Some(412), "{stale:?}");
    let bound = api
        .update_port(&created.id, &PortUpdate::bind(device, "compute:nova", "host2"), None)
        .await?;
    assert_eq!(bound.binding_host_id.as_deref(), Some("host2"));

    // Tags with ':' and '=' through the tag sub-resource.
    api.replace_port_tags(&created.id, &["netcache:extra=1".to_owned()])
        .await?;
    let tagged = api.show_port(&created.id).await?;
    assert!(tagged.tags.contains("netcache:extra=1"), "{:?}", tagged.tags);

    // Delete: stale revision refused, current accepted, then it is gone.
    let stale = api
        .delete_port(&created.id, Some(shown.revision_number))
        .await
        .unwrap_err();
    assert_eq!(stale.status(), Some(412), "{stale:?}");
    api.delete_port(&created.id, Some(tagged.revision_number)).await?;
    let gone = api.show_port(&created.id).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
    let again = api.delete_port(&created.id, None).await.unwrap_err();
    assert!(again.is_not_found(), "{again:?}");
    assert_eq!(again.kind(), Some("PortNotFound"));
    assert!(matches!(
        api.show_port(&PortId::from("no-such-port")).await,
        Err(Error::Rejected { status: 404, .. })
    ));

    sim.shutdown().await;
    Ok(())
}

/// Nova's unbind sends `"binding:host_id": null`; real Neutron 29 answers 200 and the
/// host becomes empty.
#[tokio::test]
async fn security_groups_are_listed_by_project_and_id_and_carried_by_ports() -> anyhow::Result<()> {
    let (sim, topology, api) = start().await?;
    let body = serde_json::json!({"security_group": {"name": "web", "project_id": "proj"}});
    let (status, created) = sim.handle().request("POST", "/v2.0/security-groups", Some(body));
    assert_eq!(status, 201, "{created}");
    let web = created["security_group"]["id"].as_str().unwrap().to_owned();
    let project = ProjectId::from("proj");
    let mut names: Vec<String> = api
        .list_security_groups(&SecurityGroupFilter {
            project_id: Some(project.clone()),
            ..SecurityGroupFilter::default()
        })
        .await?
        .into_iter()
        .inspect(|g| assert_eq!(g.project_id, project))
        .map(|g| g.name)
        .collect();
    names.sort();
    assert_eq!(names, ["default", "web"]);
    let by_id = api
        .list_security_groups(&SecurityGroupFilter {
            ids: vec![web.clone()],
            ..SecurityGroupFilter::default()
        })
        .await?;
    assert_eq!(by_id.len(), 1);
    assert_eq!(by_id[0].name, "web");

    let port = api
        .create_port(&PortCreate {
            security_groups: Some(vec![web.clone()]),
            ..create_request(&topology, "dev-sg", vec![])
        })
        .await?;
    assert_eq!(port.security_groups, std::slice::from_ref(&web));
    assert!(port.port_security_enabled);
    let port = api
        .update_port(
            &port.id,
            &PortUpdate::security_groups(vec![]),
            Some(port.revision_number),
        )
        .await?;
    assert!(port.security_groups.is_empty());
    sim.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn unbind_clears_the_host_with_null() -> anyhow::Result<()> {
    let (sim, topology, api) = start().await?;
    let created = api
        .create_port(&create_request(&topology, "dev-unbind", vec![]))
        .await?;
    assert_eq!(created.binding_host_id.as_deref(), Some("host1"));
    let unbound = api
        .update_port(&created.id, &PortUpdate::unbind(), Some(created.revision_number))
        .await?;
    assert_eq!(unbound.device_id, "");
    assert_eq!(unbound.device_owner, "");
    assert_eq!(unbound.binding_host_id, None);
    sim.shutdown().await;
    Ok(())
}

/// Nova bug 1258620: the create commits but its answer never comes. The client reports
/// the outcome as ambiguous, sends the POST exactly once, and the marker finds the port.
#[tokio::test]
async fn lost_create_answer_is_ambiguous_and_sent_once() -> anyhow::Result<()> {
    let (sim, topology, api) = start().await?;
    sim.handle()
        .add_fault(FaultRule::new("ports.create", FaultAction::CommitThenDrop).times(1));
    let mut config = ClientConfig::new(Auth::none(sim.url().parse()?));
    config.timeout = Duration::from_secs(1);
    let impatient = HttpNeutron::new(config)?;
    let marker = vec!["netcache:intent=lost".to_owned()];

    let err = impatient
        .create_port(&create_request(&topology, "dev-lost", marker.clone()))
        .await
        .unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(sim.handle().stats().calls("ports.create"), 1);

    let found = api
        .list_ports(&PortFilter {
            tags: marker,
            ..PortFilter::default()
        })
        .await?;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].device_id, "dev-lost");
    sim.shutdown().await;
    Ok(())
}
