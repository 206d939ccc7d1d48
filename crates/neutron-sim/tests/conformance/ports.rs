//! Ports: binding, dual stack, IP allocation.

use super::*;

case!(port_crud_binding_and_dual_stack, |api| {
    let net = api.network(json!({})).await;
    // A real Neutron allocates at random from the pool; the addresses asked for below lie
    // outside it, so no port made here can already hold them.
    let pool = json!({"allocation_pools": [{"start": "10.30.0.2", "end": "10.30.0.76"}]});
    let s4 = api.subnet(&net, "10.30.0.0/24", pool).await;
    let s6 = api.subnet(&net, "fd00:30::/64", slaac()).await;
    let device = uuid::Uuid::new_v4().to_string();
    // binding:profile is service-only by policy, even for admin.
    let body =
        json!({"network_id": net, "device_id": device, "binding:host_id": "host1", "binding:profile": {"k": "v"}});
    let v = api.port_refused(body, 403).await;
    assert_error(
        &v,
        "PolicyNotAuthorized",
        "(((rule:create_port and rule:create_port:device_id) and rule:create_port:binding:host_id) and rule:create_port:binding:profile) is disallowed by policy",
    );
    let p = api
        .port(json!({
            "network_id": net, "name": "p1", "description": "d", "device_id": device, "device_owner": "compute:nova",
            "binding:host_id": "host1", "binding:vnic_type": "normal",
        }))
        .await;
    let id = s(&p["id"]);
    assert_eq!(p["status"], "ACTIVE");
    assert_eq!(p["binding:vif_type"], "ovs");
    assert_eq!(p["binding:vif_details"]["port_filter"], true);
    assert_eq!(p["binding:vif_details"]["ovs_hybrid_plug"], false);
    assert_eq!(p["binding:host_id"], "host1");
    assert_eq!(p["binding:profile"], json!({}));
    assert_eq!(p["device_id"], device.as_str());
    assert_eq!(p["project_id"], "fake_project_id");
    assert_eq!(p["tenant_id"], "fake_project_id");
    assert_eq!(p["tags"], json!([]));
    assert_eq!(p["security_groups"].as_array().map(Vec::len), Some(1));
    let mac = s(&p["mac_address"]);
    assert!(mac.starts_with("fa:16:3e:") && mac.len() == 17, "{mac}");
    let ips = p["fixed_ips"].as_array().expect("fixed_ips");
    assert_eq!(ips.len(), 2, "{p}");
    assert_eq!(ips[0]["subnet_id"], s4["id"]);
    assert!(s(&ips[0]["ip_address"]).starts_with("10.30.0."));
    assert_eq!(ips[1]["subnet_id"], s6["id"]);
    assert_eq!(s(&ips[1]["ip_address"]), eui64("fd00:30::", &mac));
    assert!(is_timestamp(&p["created_at"]));
    let rev = p["revision_number"].as_u64().expect("rev");

    let path = format!("/v2.0/ports/{id}");
    let v = api.get(&path).await;
    assert_eq!(v["port"]["mac_address"], mac.as_str());
    let v = api.get(&format!("{path}?fields=id&fields=status")).await;
    assert_eq!(v, json!({"port": {"id": id, "status": "ACTIVE"}}));

    let profile = json!({"port": {"name": "x", "binding:profile": {}}});
    let v = api.expect(Method::PUT, &path, Some(&profile), 403).await;
    assert_error(
        &v,
        "PolicyNotAuthorized",
        "(rule:update_port and rule:update_port:binding:profile) is disallowed by policy",
    );
    let v = api.put(&path, json!({"port": {"name": "p1b"}})).await;
    assert_eq!(v["port"]["name"], "p1b");
    let rev2 = v["port"]["revision_number"].as_u64().expect("rev");
    assert!(rev2 > rev, "{rev2} > {rev}");
    let v = api.put(&path, json!({"port": {"binding:host_id": ""}})).await;
    assert_eq!(v["port"]["status"], "DOWN");
    assert_eq!(v["port"]["binding:vif_type"], "unbound");
    assert_eq!(v["port"]["binding:vif_details"], json!({}));
    let v = api
        .put(&path, json!({"port": {"device_id": "", "device_owner": ""}}))
        .await;
    assert_eq!(v["port"]["device_id"], "");

    // A port created without a host stays DOWN/unbound.
    let p2 = api
        .port(json!({"network_id": net, "fixed_ips": [{"subnet_id": s4["id"], "ip_address": "10.30.0.77"}]}))
        .await;
    assert_eq!(p2["status"], "DOWN");
    assert_eq!(p2["binding:vif_type"], "unbound");
    // The SLAAC subnet auto-addresses the port even when only an IPv4 address is requested.
    let slaac = json!({"subnet_id": s6["id"], "ip_address": eui64("fd00:30::", &s(&p2["mac_address"]))});
    assert_eq!(
        p2["fixed_ips"],
        json!([{"subnet_id": s4["id"], "ip_address": "10.30.0.77"}, slaac])
    );
    // Changing fixed IPs keeps the SLAAC address.
    let fixed_ips = json!({"port": {"fixed_ips": [{"ip_address": "10.30.0.78"}]}});
    let v = api.put(&format!("/v2.0/ports/{}", s(&p2["id"])), fixed_ips).await;
    assert_eq!(
        v["port"]["fixed_ips"],
        json!([{"subnet_id": s4["id"], "ip_address": "10.30.0.78"}, slaac])
    );

    api.delete(&path).await;
    let v = api.expect(Method::GET, &path, None, 404).await;
    assert_error(&v, "PortNotFound", &format!("Port {id} could not be found."));
    api.expect(Method::DELETE, &path, None, 404).await;
    api.cleanup(&net).await;
});

case!(ip_exhaustion_and_already_allocated_409, |api| {
    let net = api.network(json!({})).await;
    let sub = api.subnet(&net, "10.99.0.0/29", json!({})).await;
    // A port body asking for the address `ip`.
    let at = |ip: &str| json!({"network_id": net, "fixed_ips": [{"ip_address": ip}]});
    let taken = api.port(at("10.99.0.5")).await;
    assert_eq!(
        taken["fixed_ips"],
        json!([{"subnet_id": sub["id"], "ip_address": "10.99.0.5"}])
    );
    let v = api.port_refused(at("10.99.0.5"), 409).await;
    assert_error(
        &v,
        "IpAddressAlreadyAllocated",
        &format!("IP address 10.99.0.5 already allocated in subnet {}", s(&sub["id"])),
    );
    let body = json!({"network_id": net, "fixed_ips": [{"subnet_id": sub["id"], "ip_address": "10.99.0.5"}]});
    api.port_refused(body, 409).await;
    let v = api.port_refused(at("10.98.0.5"), 400).await;
    assert_error(
        &v,
        "InvalidIpForNetwork",
        "IP address 10.98.0.5 is not a valid IP for any of the subnets on the specified network.",
    );
    // 5 addresses in the pool (.2-.6): one taken, four more fit, the fifth fails.
    for _ in 0..4 {
        api.port(json!({"network_id": net})).await;
    }
    let v = api.port_refused(json!({"network_id": net}), 409).await;
    assert_error(
        &v,
        "IpAddressGenerationFailure",
        &format!("No more IP addresses available on network {net}."),
    );
    for (path, kind) in [
        (format!("/v2.0/subnets/{}", s(&sub["id"])), "SubnetInUse"),
        (format!("/v2.0/networks/{net}"), "NetworkInUse"),
    ] {
        let v = api.expect(Method::DELETE, &path, None, 409).await;
        assert_eq!(v["NeutronError"]["type"], kind);
    }
    // Freeing one address makes room again.
    api.delete(&format!("/v2.0/ports/{}", s(&taken["id"]))).await;
    let p = api.port(json!({"network_id": net})).await;
    assert_eq!(p["fixed_ips"][0]["ip_address"], "10.99.0.5");
    api.cleanup(&net).await;
});
