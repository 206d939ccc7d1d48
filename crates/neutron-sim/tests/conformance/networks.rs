//! Networks and subnets.

use super::*;

case!(network_and_subnet_crud, |api| {
    let name = uniq("net");
    let v = api.post("/v2.0/networks", json!({"network": {"name": name}})).await;
    let n = &v["network"];
    let net = s(&n["id"]);
    assert_eq!(n["name"], name.as_str());
    assert_eq!(n["status"], "ACTIVE");
    assert_eq!(n["mtu"], 1450);
    assert_eq!(n["subnets"], json!([]));
    assert_eq!(n["shared"], false);
    assert_eq!(n["router:external"], false);
    assert_eq!(n["admin_state_up"], true);
    assert_eq!(n["project_id"], "fake_project_id");
    assert_eq!(n["tenant_id"], "fake_project_id");
    assert!(is_timestamp(&n["created_at"]) && is_timestamp(&n["updated_at"]), "{n}");
    let rev0 = n["revision_number"].as_u64().expect("revision");

    let s4 = api.subnet(&net, "10.20.0.0/24", json!({})).await;
    assert_eq!(s4["gateway_ip"], "10.20.0.1");
    assert_eq!(
        s4["allocation_pools"],
        json!([{"start": "10.20.0.2", "end": "10.20.0.254"}])
    );
    assert_eq!(s4["enable_dhcp"], true);
    assert_eq!(s4["ip_version"], 4);
    assert_eq!(s4["dns_nameservers"], json!([]));
    assert_eq!(s4["host_routes"], json!([]));
    assert_eq!(s4["ipv6_address_mode"], Value::Null);
    let s6 = api.subnet(&net, "fd00:20::/64", slaac()).await;
    assert_eq!(s6["gateway_ip"], "fd00:20::");
    assert_eq!(
        s6["allocation_pools"],
        json!([{"start": "fd00:20::1", "end": "fd00:20::ffff:ffff:ffff:ffff"}])
    );
    assert_eq!(s6["ipv6_address_mode"], "slaac");
    let s29 = api
        .subnet(
            &net,
            "10.21.0.0/29",
            json!({"gateway_ip": "10.21.0.6", "enable_dhcp": false, "dns_nameservers": ["8.8.8.8"]}),
        )
        .await;
    assert_eq!(
        s29["allocation_pools"],
        json!([{"start": "10.21.0.1", "end": "10.21.0.5"}])
    );
    assert_eq!(s29["dns_nameservers"], json!(["8.8.8.8"]));

    let net_path = format!("/v2.0/networks/{net}");
    let v = api.get(&net_path).await;
    let subnets: BTreeSet<String> = v["network"]["subnets"]
        .as_array()
        .expect("subnets")
        .iter()
        .map(s)
        .collect();
    assert_eq!(subnets, BTreeSet::from([s(&s4["id"]), s(&s6["id"]), s(&s29["id"])]));

    let v = api
        .get(&format!(
            "/v2.0/subnets?network_id={net}&ip_version=6&fields=id&fields=cidr"
        ))
        .await;
    assert_eq!(v["subnets"], json!([{"id": s6["id"], "cidr": "fd00:20::/64"}]));

    let v = api.put(&net_path, json!({"network": {"name": "renamed"}})).await;
    assert_eq!(v["network"]["name"], "renamed");
    assert!(v["network"]["revision_number"].as_u64().expect("rev") > rev0);
    let s29_id = s(&s29["id"]);
    let s29_path = format!("/v2.0/subnets/{s29_id}");
    let v = api.put(&s29_path, json!({"subnet": {"name": "s29"}})).await;
    assert_eq!(v["subnet"]["name"], "s29");

    for (path, kind, message) in [
        (
            s29_path,
            "SubnetNotFound",
            format!("Subnet {s29_id} could not be found."),
        ),
        (
            net_path,
            "NetworkNotFound",
            format!("Network {net} could not be found."),
        ),
    ] {
        api.delete(&path).await;
        api.refused(Method::GET, &path, None, (404, kind, &message)).await;
    }
});
