//! Floating IPs through a router.

use super::*;

case!(floating_ip_association, |api| {
    let ext = api.network(json!({"router:external": true})).await;
    let ext_sub = api.subnet(&ext, "172.24.40.0/24", json!({"enable_dhcp": false})).await;
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.100.0.0/24", json!({})).await;
    let device = uuid::Uuid::new_v4().to_string();
    let port = api
        .port(json!({"network_id": net, "device_id": device, "device_owner": "compute:nova", "binding:host_id": "h1"}))
        .await;
    let pid = s(&port["id"]);
    // Not reachable without a router.
    let body = json!({"floatingip": {"floating_network_id": ext, "port_id": pid}});
    let (st, v) = api.call(Method::POST, "/v2.0/floatingips", Some(&body)).await;
    assert_eq!(st, 404);
    assert_error(
        &v,
        "ExternalGatewayForFloatingIPNotFound",
        &format!(
            "External network {ext} is not reachable from subnet {}.  Therefore, cannot associate Port {pid} with a Floating IP.",
            s(&sub["id"])
        ),
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/floatingips",
            Some(&json!({"floatingip": {"floating_network_id": net}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "BadRequest",
        &format!("Bad floatingip request: Network {net} is not a valid external network."),
    );

    let v = api
        .ok(
            Method::POST,
            "/v2.0/routers",
            Some(&json!({"router": {"name": uniq("r"), "external_gateway_info": {"network_id": ext}}})),
            201,
        )
        .await;
    let router = s(&v["router"]["id"]);
    assert_eq!(v["router"]["external_gateway_info"]["network_id"], ext.as_str());
    assert_eq!(
        v["router"]["external_gateway_info"]["external_fixed_ips"][0]["subnet_id"],
        ext_sub["id"]
    );
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/routers/{router}/add_router_interface"),
            Some(&json!({"subnet_id": sub["id"]})),
            200,
        )
        .await;
    assert_eq!(v["id"], router.as_str());
    assert_eq!(v["subnet_id"], sub["id"]);
    assert_eq!(v["network_id"], net.as_str());

    let v = api.ok(Method::POST, "/v2.0/floatingips", Some(&body), 201).await;
    let f = &v["floatingip"];
    let fid = s(&f["id"]);
    let fip_addr = s(&f["floating_ip_address"]);
    assert!(fip_addr.starts_with("172.24.40."), "{f}");
    assert_eq!(f["port_id"], pid.as_str());
    assert_eq!(f["router_id"], router.as_str());
    assert_eq!(f["fixed_ip_address"], port["fixed_ips"][0]["ip_address"]);
    assert_eq!(f["floating_network_id"], ext.as_str());
    assert_eq!(f["status"], "DOWN");
    let pd = &f["port_details"];
    for k in [
        "name",
        "network_id",
        "mac_address",
        "admin_state_up",
        "status",
        "device_id",
        "device_owner",
    ] {
        assert_eq!(pd[k], port[k], "port_details.{k}");
    }
    assert_eq!(pd.as_object().map(serde_json::Map::len), Some(7));
    // Filters.
    for q in [
        format!("port_id={pid}"),
        format!("floating_ip_address={fip_addr}"),
        format!(
            "fixed_ip_address={}&floating_network_id={ext}",
            s(&f["fixed_ip_address"])
        ),
    ] {
        let v = api
            .ok(Method::GET, &format!("/v2.0/floatingips?{q}&fields=id"), None, 200)
            .await;
        assert_eq!(v, json!({"floatingips": [{"id": fid}]}), "{q}");
    }
    // Disassociate and reassociate.
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/floatingips/{fid}"),
            Some(&json!({"floatingip": {"port_id": null}})),
            200,
        )
        .await;
    assert_eq!(v["floatingip"]["port_id"], Value::Null);
    assert_eq!(v["floatingip"]["port_details"], Value::Null);
    assert_eq!(v["floatingip"]["fixed_ip_address"], Value::Null);
    assert_eq!(v["floatingip"]["router_id"], Value::Null);
    let v = api
        .ok(Method::GET, &format!("/v2.0/floatingips?port_id={pid}"), None, 200)
        .await;
    assert_eq!(v, json!({"floatingips": []}));
    let v = api
        .ok(
            Method::PUT,
            &format!("/v2.0/floatingips/{fid}"),
            Some(&json!({"floatingip": {"port_id": pid}})),
            200,
        )
        .await;
    assert_eq!(v["floatingip"]["port_id"], pid.as_str());
    assert_eq!(v["floatingip"]["port_details"]["mac_address"], port["mac_address"]);
    // The FIP's port revision is not bumped by association.
    let v = api
        .ok(
            Method::GET,
            &format!("/v2.0/ports/{pid}?fields=revision_number"),
            None,
            200,
        )
        .await;
    assert_eq!(v["port"]["revision_number"], port["revision_number"]);
    // Router in use while it has an interface.
    let (st, v) = api.call(Method::DELETE, &format!("/v2.0/routers/{router}"), None).await;
    assert_eq!(st, 409);
    assert_eq!(v["NeutronError"]["type"], "RouterInUse");
    // Tear down.
    api.ok(Method::DELETE, &format!("/v2.0/floatingips/{fid}"), None, 204)
        .await;
    let (st, _) = api.call(Method::GET, &format!("/v2.0/floatingips/{fid}"), None).await;
    assert_eq!(st, 404);
    api.ok(Method::DELETE, &format!("/v2.0/ports/{pid}"), None, 204).await;
    api.ok(
        Method::PUT,
        &format!("/v2.0/routers/{router}/remove_router_interface"),
        Some(&json!({"subnet_id": sub["id"]})),
        200,
    )
    .await;
    api.ok(Method::DELETE, &format!("/v2.0/routers/{router}"), None, 204)
        .await;
    api.cleanup(&net).await;
    api.cleanup(&ext).await;
});

// What Nova's floating IP proxies rely on: a floating IP made for a project
// (by an admin), moved from one port to another while associated, and a
// second one refused for a fixed IP that has one.
case!(floating_ip_reassociation, |api| {
    let ext = api.network(json!({"router:external": true})).await;
    api.subnet(&ext, "172.24.41.0/24", json!({"enable_dhcp": false})).await;
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.101.0.0/24", json!({})).await;
    let v = api
        .ok(
            Method::POST,
            "/v2.0/routers",
            Some(&json!({"router": {"name": uniq("r"), "external_gateway_info": {"network_id": ext}}})),
            201,
        )
        .await;
    let router = s(&v["router"]["id"]);
    let iface = json!({"subnet_id": sub["id"]});
    api.ok(
        Method::PUT,
        &format!("/v2.0/routers/{router}/add_router_interface"),
        Some(&iface),
        200,
    )
    .await;
    let mut ports = Vec::new();
    for _ in 0..2 {
        let device = uuid::Uuid::new_v4().to_string();
        ports.push(
            api.port(json!({"network_id": net, "device_id": device, "device_owner": "compute:nova"}))
                .await,
        );
    }
    let project = uuid::Uuid::new_v4().simple().to_string();
    let body = json!({"floatingip": {"floating_network_id": ext, "project_id": project}});
    let v = api.ok(Method::POST, "/v2.0/floatingips", Some(&body), 201).await;
    let a = &v["floatingip"];
    let aid = s(&a["id"]);
    assert_eq!(a["project_id"], project.as_str());
    assert_eq!(a["port_id"], Value::Null);
    assert_eq!(a["port_details"], Value::Null);
    let v = api
        .ok(
            Method::GET,
            &format!(
                "/v2.0/floatingips?floating_ip_address={}&project_id={project}&fields=id",
                s(&a["floating_ip_address"])
            ),
            None,
            200,
        )
        .await;
    assert_eq!(v, json!({"floatingips": [{"id": aid}]}));
    for port in &ports {
        let fixed = &port["fixed_ips"][0]["ip_address"];
        let assoc = json!({"floatingip": {"port_id": port["id"], "fixed_ip_address": fixed}});
        let v = api
            .ok(Method::PUT, &format!("/v2.0/floatingips/{aid}"), Some(&assoc), 200)
            .await;
        assert_eq!(v["floatingip"]["port_id"], port["id"]);
        assert_eq!(&v["floatingip"]["fixed_ip_address"], fixed);
        assert_eq!(v["floatingip"]["port_details"]["device_id"], port["device_id"]);
    }
    let v = api
        .ok(
            Method::POST,
            "/v2.0/floatingips",
            Some(&json!({"floatingip": {"floating_network_id": ext}})),
            201,
        )
        .await;
    let bid = s(&v["floatingip"]["id"]);
    let assoc = json!({"floatingip": {"port_id": ports[1]["id"]}});
    let (st, v) = api
        .call(Method::PUT, &format!("/v2.0/floatingips/{bid}"), Some(&assoc))
        .await;
    assert_eq!(st, 409, "{v}");
    assert_eq!(v["NeutronError"]["type"], "FloatingIPPortAlreadyAssociated");
    // Tear down.
    for fip in [&aid, &bid] {
        api.ok(Method::DELETE, &format!("/v2.0/floatingips/{fip}"), None, 204)
            .await;
    }
    for port in &ports {
        api.ok(Method::DELETE, &format!("/v2.0/ports/{}", s(&port["id"])), None, 204)
            .await;
    }
    api.ok(
        Method::PUT,
        &format!("/v2.0/routers/{router}/remove_router_interface"),
        Some(&iface),
        200,
    )
    .await;
    api.ok(Method::DELETE, &format!("/v2.0/routers/{router}"), None, 204)
        .await;
    api.cleanup(&net).await;
    api.cleanup(&ext).await;
});
