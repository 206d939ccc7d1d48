//! Filters and pagination.

use super::*;

/// Answers a port list with one port per `device_id` asked for.
fn echo_ports(seen: &Seen, _: usize) -> Reply {
    let ports: Vec<Value> = seen
        .param_values("device_id")
        .iter()
        .map(|d| port_json(&format!("port-{d}"), d))
        .collect();
    Reply::json(200, json!({"ports": ports}))
}

#[tokio::test]
async fn port_filters_are_query_parameters() {
    let neutron = Stub::start(echo_ports).await;
    let filter = PortFilter {
        device_ids: vec!["a".into(), "b".into()],
        project_id: Some(ProjectId::from("proj")),
        device_owner: Some("compute:nova".into()),
        tags: vec!["netcache:owner=dep".into(), "x".into()],
        tags_any: vec!["y".into(), "z".into()],
        ..PortFilter::default()
    };
    let ports = client(noauth_config(&neutron.url)).list_ports(&filter).await.unwrap();
    assert_eq!(ports.len(), 2);
    let seen = &neutron.seen()[0];
    assert_eq!(seen.path, "/v2.0/ports");
    assert_eq!(seen.param_values("device_id"), ["a", "b"]);
    assert_eq!(seen.param_values("tags"), ["netcache:owner=dep,x"]);
    assert_eq!(seen.param_values("tags-any"), ["y,z"]);
    assert_eq!(seen.param_values("project_id"), ["proj"]);
    assert_eq!(seen.param_values("device_owner"), ["compute:nova"]);
    assert!(seen.param_values("id").is_empty());
}

#[tokio::test]
async fn long_id_lists_are_split_into_chunks() {
    let neutron = Stub::start(echo_ports).await;
    let device_ids: Vec<String> = (0..250).map(|i| format!("dev-{i}")).collect();
    let filter = PortFilter {
        device_ids: device_ids.clone(),
        tags: vec!["t".into()],
        ..PortFilter::default()
    };
    let ports = client(noauth_config(&neutron.url)).list_ports(&filter).await.unwrap();
    assert_eq!(ports.len(), 250);
    let seen = neutron.seen();
    let sizes: Vec<_> = seen.iter().map(|s| s.param_values("device_id").len()).collect();
    assert_eq!(sizes, [100, 100, 50]);
    assert!(seen.iter().all(|s| s.param_values("tags") == ["t"]));
    let asked: Vec<String> = seen.iter().flat_map(|s| s.param_values("device_id")).collect();
    assert_eq!(asked, device_ids);
}

#[tokio::test]
async fn chunk_size_is_configurable() {
    let neutron = Stub::start(|_, _| Reply::json(200, json!({"floatingips": []}))).await;
    let mut config = noauth_config(&neutron.url);
    config.filter_chunk_size = 2;
    let filter = FloatingIpFilter {
        port_ids: (0..5).map(|i| PortId::from(format!("p{i}"))).collect(),
        ..FloatingIpFilter::default()
    };
    client(config).list_floating_ips(&filter).await.unwrap();
    let sizes: Vec<_> = neutron.seen().iter().map(|s| s.param_values("port_id").len()).collect();
    assert_eq!(sizes, [2, 2, 1]);
}

#[tokio::test]
async fn next_links_are_followed_on_our_endpoint() {
    let neutron = Stub::start(|seen, _| match seen.param_values("marker").first().map(String::as_str) {
        None => Reply::json(200, json!({
            "ports": [port_json("p1", "d"), port_json("p2", "d")],
            "ports_links": [{"rel": "next", "href": "http://neutron.internal:9696/v2.0/ports?device_id=d&limit=2&marker=p2"}]
        })),
        Some("p2") => Reply::json(200, json!({
            "ports": [port_json("p3", "d")],
            "ports_links": [{"rel": "previous", "href": "http://neutron.internal:9696/v2.0/ports?device_id=d&limit=2&marker=p3&page_reverse=True"}]
        })),
        Some(other) => panic!("unexpected marker {other}"),
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.page_size = Some(2);
    let filter = PortFilter {
        device_ids: vec!["d".into()],
        ..PortFilter::default()
    };
    let ports = client(config).list_ports(&filter).await.unwrap();
    let ids: Vec<_> = ports.iter().map(|p| p.id.as_str().to_owned()).collect();
    assert_eq!(ids, ["p1", "p2", "p3"]);
    let seen = neutron.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].param_values("limit"), ["2"]);
    assert_eq!(seen[1].query, "device_id=d&limit=2&marker=p2");
}

#[tokio::test]
async fn a_pagination_loop_is_protocol() {
    let neutron = Stub::start(|_, _| {
        Reply::json(
            200,
            json!({
                "networks": [],
                "networks_links": [{"rel": "next", "href": "http://x/v2.0/networks?marker=same"}]
            }),
        )
    })
    .await;
    let err = client(noauth_config(&neutron.url))
        .list_networks(&NetworkFilter::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert_eq!(neutron.count(), 2);
}

#[tokio::test]
async fn network_and_subnet_filters() {
    let neutron = Stub::start(|seen, _| match seen.path.as_str() {
        "/v2.0/networks" => Reply::json(
            200,
            json!({"networks": [{
            "id": "ext", "name": "public", "project_id": "admin", "shared": false,
            "router:external": true, "mtu": 1500, "subnets": ["s1"]}]}),
        ),
        _ => Reply::json(
            200,
            json!({"subnets": [{
            "id": "s1", "network_id": "ext", "cidr": "172.24.4.0/24", "gateway_ip": "172.24.4.1",
            "enable_dhcp": false, "dns_nameservers": [], "host_routes": [], "ipv6_address_mode": null}]}),
        ),
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    let nets = api
        .list_networks(&NetworkFilter {
            external: Some(true),
            name: Some("public".into()),
            ..NetworkFilter::default()
        })
        .await
        .unwrap();
    assert!(nets[0].external);
    let subnets = api
        .list_subnets(&SubnetFilter {
            network_ids: vec![NetworkId::from("ext"), NetworkId::from("other")],
            ..SubnetFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(subnets[0].cidr.to_string(), "172.24.4.0/24");

    let seen = neutron.seen();
    assert_eq!(seen[0].param_values("router:external"), ["true"]);
    assert_eq!(seen[0].param_values("name"), ["public"]);
    assert_eq!(seen[1].param_values("network_id"), ["ext", "other"]);
}

/// A token source that counts its tokens and never expires them.
struct CountingSource {
    endpoint: String,
    issued: Arc<Mutex<u32>>,
}

#[async_trait::async_trait]
impl netcache_neutron::TokenSource for CountingSource {
    async fn issue(&self) -> netcache_neutron::Result<netcache_neutron::Token> {
        let mut issued = self.issued.lock().unwrap();
        *issued += 1;
        Ok(netcache_neutron::Token {
            value: format!("tok-{issued}"),
            endpoint: self.endpoint.parse().unwrap(),
            lifetime: None,
        })
    }
}

#[tokio::test]
async fn custom_token_source_is_cached_and_renewed_on_401() {
    let neutron = neutron_refusing(&["tok-1"]).await;
    let issued = Arc::new(Mutex::new(0));
    let source = CountingSource {
        endpoint: neutron.url.clone(),
        issued: issued.clone(),
    };
    let api = client(ClientConfig::new(Auth::Custom(Arc::new(source))));
    for _ in 0..3 {
        api.list_extensions().await.unwrap();
    }
    assert_eq!(*issued.lock().unwrap(), 2);
    let tokens = neutron.tokens();
    assert_eq!(tokens, ["tok-1", "tok-2", "tok-2", "tok-2"]);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let target = Stub::start(|_, _| Reply::json(201, json!({"port": port_json("p", "d")}))).await;
    let location = format!("{}/v2.0/ports", target.url);
    let neutron = Stub::start(move |_, _| Reply::raw(307, "").header("location", &location)).await;
    let err = client(noauth_config(&neutron.url))
        .create_port(&create_request())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert_eq!(target.count(), 0);
}
