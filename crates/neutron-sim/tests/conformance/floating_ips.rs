//! Floating IPs through a router.

use super::*;

impl Api {
    /// A router with its gateway on the external network `ext`: its body.
    async fn router(&self, ext: &str) -> Value {
        let body = json!({"router": {"name": uniq("r"), "external_gateway_info": {"network_id": ext}}});
        self.post("/v2.0/routers", body).await["router"].clone()
    }
    /// `add_router_interface` or `remove_router_interface` for `subnet`: the answer.
    async fn router_interface(&self, router: &str, action: &str, subnet: &Value) -> Value {
        let path = format!("/v2.0/routers/{router}/{action}");
        self.put(&path, json!({"subnet_id": subnet["id"]})).await
    }
    /// Detaches the router from `subnet` and deletes it, then both networks with
    /// what is left on them.
    async fn remove_routing(&self, router: &str, subnet: &Value, nets: [&str; 2]) {
        self.router_interface(router, "remove_router_interface", subnet).await;
        self.delete(&format!("/v2.0/routers/{router}")).await;
        for net in nets {
            self.cleanup(net).await;
        }
    }
}

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
    let v = api.expect(Method::POST, "/v2.0/floatingips", Some(&body), 404).await;
    assert_error(
        &v,
        "ExternalGatewayForFloatingIPNotFound",
        &format!(
            "External network {ext} is not reachable from subnet {}.  Therefore, cannot associate Port {pid} with a Floating IP.",
            s(&sub["id"])
        ),
    );
    let internal = json!({"floatingip": {"floating_network_id": net}});
    let v = api
        .expect(Method::POST, "/v2.0/floatingips", Some(&internal), 400)
        .await;
    assert_error(
        &v,
        "BadRequest",
        &format!("Bad floatingip request: Network {net} is not a valid external network."),
    );

    let r = api.router(&ext).await;
    let router = s(&r["id"]);
    assert_eq!(r["external_gateway_info"]["network_id"], ext.as_str());
    assert_eq!(
        r["external_gateway_info"]["external_fixed_ips"][0]["subnet_id"],
        ext_sub["id"]
    );
    let v = api.router_interface(&router, "add_router_interface", &sub).await;
    assert_eq!(v["id"], router.as_str());
    assert_eq!(v["subnet_id"], sub["id"]);
    assert_eq!(v["network_id"], net.as_str());

    let v = api.post("/v2.0/floatingips", body).await;
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
        let v = api.get(&format!("/v2.0/floatingips?{q}&fields=id")).await;
        assert_eq!(v, json!({"floatingips": [{"id": fid}]}), "{q}");
    }
    // Disassociate and reassociate.
    let fip_path = format!("/v2.0/floatingips/{fid}");
    let v = api.put(&fip_path, json!({"floatingip": {"port_id": null}})).await;
    for k in ["port_id", "port_details", "fixed_ip_address", "router_id"] {
        assert_eq!(v["floatingip"][k], Value::Null, "{k}");
    }
    let v = api.get(&format!("/v2.0/floatingips?port_id={pid}")).await;
    assert_eq!(v, json!({"floatingips": []}));
    let v = api.put(&fip_path, json!({"floatingip": {"port_id": pid}})).await;
    assert_eq!(v["floatingip"]["port_id"], pid.as_str());
    assert_eq!(v["floatingip"]["port_details"]["mac_address"], port["mac_address"]);
    // The FIP's port revision is not bumped by association.
    let v = api.get(&format!("/v2.0/ports/{pid}?fields=revision_number")).await;
    assert_eq!(v["port"]["revision_number"], port["revision_number"]);
    // Router in use while it has an interface.
    let v = api
        .expect(Method::DELETE, &format!("/v2.0/routers/{router}"), None, 409)
        .await;
    assert_eq!(v["NeutronError"]["type"], "RouterInUse");
    // Tear down.
    api.delete(&fip_path).await;
    api.expect(Method::GET, &fip_path, None, 404).await;
    api.delete(&format!("/v2.0/ports/{pid}")).await;
    api.remove_routing(&router, &sub, [&net, &ext]).await;
});

// What Nova's floating IP proxies rely on: a floating IP made for a project
// (by an admin), moved from one port to another while associated, and a
// second one refused for a fixed IP that has one.
case!(floating_ip_reassociation, |api| {
    let ext = api.network(json!({"router:external": true})).await;
    api.subnet(&ext, "172.24.41.0/24", json!({"enable_dhcp": false})).await;
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.101.0.0/24", json!({})).await;
    let router = s(&api.router(&ext).await["id"]);
    api.router_interface(&router, "add_router_interface", &sub).await;
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
    let v = api.post("/v2.0/floatingips", body).await;
    let a = &v["floatingip"];
    let aid = s(&a["id"]);
    assert_eq!(a["project_id"], project.as_str());
    assert_eq!(a["port_id"], Value::Null);
    assert_eq!(a["port_details"], Value::Null);
    let address = s(&a["floating_ip_address"]);
    let v = api
        .get(&format!(
            "/v2.0/floatingips?floating_ip_address={address}&project_id={project}&fields=id"
        ))
        .await;
    assert_eq!(v, json!({"floatingips": [{"id": aid}]}));
    for port in &ports {
        let fixed = &port["fixed_ips"][0]["ip_address"];
        let assoc = json!({"floatingip": {"port_id": port["id"], "fixed_ip_address": fixed}});
        let v = api.put(&format!("/v2.0/floatingips/{aid}"), assoc).await;
        assert_eq!(v["floatingip"]["port_id"], port["id"]);
        assert_eq!(&v["floatingip"]["fixed_ip_address"], fixed);
        assert_eq!(v["floatingip"]["port_details"]["device_id"], port["device_id"]);
    }
    let v = api
        .post("/v2.0/floatingips", json!({"floatingip": {"floating_network_id": ext}}))
        .await;
    let bid = s(&v["floatingip"]["id"]);
    let assoc = json!({"floatingip": {"port_id": ports[1]["id"]}});
    let v = api
        .expect(Method::PUT, &format!("/v2.0/floatingips/{bid}"), Some(&assoc), 409)
        .await;
    assert_eq!(v["NeutronError"]["type"], "FloatingIPPortAlreadyAssociated");
    // Tear down.
    for fip in [&aid, &bid] {
        api.delete(&format!("/v2.0/floatingips/{fip}")).await;
    }
    for port in &ports {
        api.delete(&format!("/v2.0/ports/{}", s(&port["id"]))).await;
    }
    api.remove_routing(&router, &sub, [&net, &ext]).await;
});
