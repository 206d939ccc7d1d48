//! Security groups and their rules: each project's default group, CRUD, the
//! groups of ports. Every case works in a project of its own, so the default
//! group it sees is the one its first list made.

use super::*;

/// Direction, ethertype and whether the remote is the group itself, sorted.
fn rule_shapes(group: &Value) -> Vec<(String, String, bool)> {
    let id = &group["id"];
    let mut shapes: Vec<_> = group["security_group_rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| {
            assert_eq!(r["security_group_id"], *id, "{r}");
            assert_eq!(r["protocol"], Value::Null, "{r}");
            assert_eq!(r["remote_ip_prefix"], Value::Null, "{r}");
            (s(&r["direction"]), s(&r["ethertype"]), r["remote_group_id"] == *id)
        })
        .collect();
    shapes.sort();
    shapes
}

fn shape(direction: &str, ethertype: &str, from_members: bool) -> (String, String, bool) {
    (direction.into(), ethertype.into(), from_members)
}

/// The path of the security groups.
const GROUPS: &str = "/v2.0/security-groups";

/// What naming another group `default` gets, in any case.
const DEFAULT_EXISTS: Refusal<'static> = (
    409,
    "SecurityGroupDefaultAlreadyExists",
    "Default security group already exists.",
);

impl Api {
    async fn group(&self, project: &str, name: &str) -> Value {
        let body = json!({"security_group": {"name": name, "description": "d", "project_id": project}});
        self.post(GROUPS, body).await["security_group"].clone()
    }
}

case!(default_group_is_made_by_the_first_list, |api| {
    let project = uniq("sgp");
    let v = api.get(&format!("{GROUPS}?project_id={project}")).await;
    let groups = v["security_groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 1, "{v}");
    let default = &groups[0];
    assert_eq!(default["name"], "default");
    assert_eq!(default["description"], "Default security group");
    assert_eq!(default["project_id"], project.as_str());
    assert_eq!(default["tenant_id"], project.as_str());
    assert_eq!(default["stateful"], true);
    assert_eq!(default["shared"], false);
    assert_eq!(default["tags"], json!([]));
    assert!(is_timestamp(&default["created_at"]), "{default}");
    // Egress anywhere, ingress from the group's own members, for both IP versions.
    assert_eq!(
        rule_shapes(default),
        vec![
            shape("egress", "IPv4", false),
            shape("egress", "IPv6", false),
            shape("ingress", "IPv4", true),
            shape("ingress", "IPv6", true),
        ]
    );
    // A second list makes no second one.
    let v = api.get(&format!("{GROUPS}?project_id={project}&fields=id")).await;
    assert_eq!(v["security_groups"], json!([{"id": default["id"]}]));
    let path = format!("{GROUPS}/{}", s(&default["id"]));
    let rename = json!({"security_group": {"name": "other"}});
    let not_allowed = (
        409,
        "SecurityGroupCannotUpdateDefault",
        "Updating default security group not allowed.",
    );
    api.refused(Method::PUT, &path, Some(&rename), not_allowed).await;
    let v = api.put(&path, json!({"security_group": {"description": "mine"}})).await;
    assert_eq!(v["security_group"]["description"], "mine");
    for name in ["default", "Default"] {
        let body = json!({"security_group": {"name": name, "project_id": project}});
        api.refused(Method::POST, GROUPS, Some(&body), DEFAULT_EXISTS).await;
    }
    api.delete(&path).await;
});

case!(security_group_crud_and_filters, |api| {
    let project = uniq("sgp");
    let name = uniq("web");
    let g = api.group(&project, &name).await;
    let id = s(&g["id"]);
    assert_eq!(g["name"], name.as_str());
    assert_eq!(g["description"], "d");
    assert_eq!(g["project_id"], project.as_str());
    assert_eq!(g["stateful"], true);
    // A group of its own gets the egress rules only.
    assert_eq!(
        rule_shapes(&g),
        vec![shape("egress", "IPv4", false), shape("egress", "IPv6", false)]
    );
    let rev = g["revision_number"].as_u64().expect("revision");

    let path = format!("{GROUPS}/{id}");
    let v = api.get(&path).await;
    assert_eq!(v["security_group"]["name"], name.as_str());
    let v = api.get(&format!("{GROUPS}?name={name}&fields=id&fields=name")).await;
    assert_eq!(v["security_groups"], json!([{"id": id, "name": name}]));
    let v = api.get(&format!("{GROUPS}?tenant_id={project}&fields=name")).await;
    let mut names: Vec<String> = v["security_groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| s(&g["name"]))
        .collect();
    names.sort();
    assert_eq!(names, vec!["default".to_string(), name.clone()]);
    let bogus = (400, "HTTPBadRequest", "['bogus'] is invalid attribute for filtering");
    api.refused(Method::GET, &format!("{GROUPS}?bogus=1"), None, bogus)
        .await;

    let renamed = uniq("web");
    let v = api.put(&path, json!({"security_group": {"name": renamed}})).await;
    assert_eq!(v["security_group"]["name"], renamed.as_str());
    assert!(v["security_group"]["revision_number"].as_u64().expect("revision") > rev);
    let read_only = (400, "HTTPBadRequest", "Cannot update read-only attribute tenant_id");
    for (body, refusal) in [
        (json!({"name": "default"}), DEFAULT_EXISTS),
        (json!({"project_id": "p9"}), read_only),
    ] {
        let update = json!({"security_group": body});
        api.refused(Method::PUT, &path, Some(&update), refusal).await;
    }
    let body = json!({"security_group": {"name": 5}});
    let not_a_string = "Invalid input for name. Reason: '5' is not a valid string.";
    api.refused(Method::POST, GROUPS, Some(&body), (400, "HTTPBadRequest", not_a_string))
        .await;

    api.delete(&path).await;
    let gone = format!("Security group {id} does not exist");
    for method in [Method::GET, Method::DELETE] {
        api.refused(method, &path, None, (404, "SecurityGroupNotFound", &gone))
            .await;
    }
});

case!(ports_carry_security_groups, |api| {
    let project = uniq("sgp");
    let net = api.network(json!({"project_id": project})).await;
    api.subnet(&net, "10.60.0.0/24", json!({"project_id": project})).await;
    let g = api.group(&project, &uniq("web")).await;
    let gid = s(&g["id"]);
    let v = api
        .get(&format!("{GROUPS}?project_id={project}&name=default&fields=id"))
        .await;
    let default = s(&v["security_groups"][0]["id"]);

    // No groups named: the project's default; named: those; null or []: none.
    let p = api.port(json!({"network_id": net, "project_id": project})).await;
    assert_eq!(p["security_groups"], json!([default]));
    let p = api
        .port(json!({"network_id": net, "project_id": project, "security_groups": [gid]}))
        .await;
    assert_eq!(p["security_groups"], json!([gid]));
    let port = s(&p["id"]);
    for empty in [json!(null), json!([])] {
        let p = api
            .port(json!({"network_id": net, "project_id": project, "security_groups": empty}))
            .await;
        assert_eq!(p["security_groups"], json!([]));
    }
    let p = api
        .port(json!({"network_id": net, "project_id": project, "port_security_enabled": false}))
        .await;
    assert_eq!(p["security_groups"], json!([]));

    let missing = uuid::Uuid::new_v4().to_string();
    let dup = json!([gid, gid]);
    for (groups, status, kind, message) in [
        (
            json!([missing]),
            404,
            "SecurityGroupNotFound",
            format!("Security group {missing} does not exist"),
        ),
        (
            json!(["abc"]),
            400,
            "HTTPBadRequest",
            "Invalid input for security_groups. Reason: 'abc' is not a valid UUID.".to_string(),
        ),
        (
            json!("abc"),
            400,
            "HTTPBadRequest",
            "Invalid input for security_groups. Reason: 'abc' is not a list.".to_string(),
        ),
        (
            dup,
            400,
            "HTTPBadRequest",
            format!("Invalid input for security_groups. Reason: Duplicate items in the list: '{gid}'."),
        ),
    ] {
        let body = json!({"network_id": net, "project_id": project, "security_groups": groups});
        let v = api.port_refused(body, status).await;
        assert_error(&v, kind, &message);
    }
    let body =
        json!({"network_id": net, "project_id": project, "port_security_enabled": false, "security_groups": [gid]});
    let v = api.port_refused(body, 400).await;
    assert_error(
        &v,
        "PortSecurityAndIPRequiredForSecurityGroups",
        "Port security must be enabled and port must have an IP address in order to use security groups.",
    );

    // A group in use cannot go.
    let group_path = format!("{GROUPS}/{gid}");
    let in_use = format!("Security Group {gid} in use.");
    api.refused(Method::DELETE, &group_path, None, (409, "SecurityGroupInUse", &in_use))
        .await;

    let port_path = format!("/v2.0/ports/{port}");
    let v = api
        .put(&port_path, json!({"port": {"security_groups": [gid, default]}}))
        .await;
    let mut groups: Vec<String> = v["port"]["security_groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(s)
        .collect();
    groups.sort();
    let mut want = vec![gid.clone(), default.clone()];
    want.sort();
    assert_eq!(groups, want);
    let v = api.get(&format!("/v2.0/ports?security_groups={gid}&fields=id")).await;
    assert_eq!(v["ports"], json!([{"id": port}]));
    let unknown = json!({"port": {"security_groups": [missing]}});
    let not_found = format!("Security group {missing} does not exist");
    let refusal = (404, "SecurityGroupNotFound", not_found.as_str());
    api.refused(Method::PUT, &port_path, Some(&unknown), refusal).await;
    let v = api.put(&port_path, json!({"port": {"security_groups": []}})).await;
    assert_eq!(v["port"]["security_groups"], json!([]));
    api.cleanup(&net).await;
    api.delete(&group_path).await;
});

case!(security_group_rules_crud_and_validation, |api| {
    let project = uniq("sgp");
    let g = api.group(&project, &uniq("web")).await;
    let gid = s(&g["id"]);
    // An ingress rule of the group, with `extra`.
    let rule = |extra: Value| {
        let ingress = json!({"security_group_id": gid, "direction": "ingress"});
        json!({"security_group_rule": merged(ingress, &extra)})
    };
    let rules = "/v2.0/security-group-rules";
    let ssh =
        rule(json!({"protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "10.0.0.0/8"}));
    let v = api.post(rules, ssh.clone()).await;
    let r = &v["security_group_rule"];
    let rid = s(&r["id"]);
    assert_eq!(r["security_group_id"], gid.as_str());
    assert_eq!(r["direction"], "ingress");
    assert_eq!(r["ethertype"], "IPv4");
    assert_eq!(r["protocol"], "tcp");
    assert_eq!(r["port_range_min"], 22);
    assert_eq!(r["port_range_max"], 22);
    assert_eq!(r["remote_ip_prefix"], "10.0.0.0/8");
    assert_eq!(r["normalized_cidr"], "10.0.0.0/8");
    assert_eq!(r["remote_group_id"], Value::Null);
    let exists = format!("Security group rule already exists. Rule id is {rid}.");
    let refusal = (409, "SecurityGroupRuleExists", exists.as_str());
    api.refused(Method::POST, rules, Some(&ssh), refusal).await;
    // The whole port range is no range; an address is a host prefix.
    let v = api
        .post(rules, rule(json!({"ethertype": "ipv6", "protocol": "udp", "port_range_min": 1, "port_range_max": 65535, "remote_ip_prefix": "fd00::1"})))
        .await;
    let r = &v["security_group_rule"];
    assert_eq!(r["ethertype"], "IPv6");
    assert_eq!(r["port_range_min"], Value::Null);
    assert_eq!(r["port_range_max"], Value::Null);
    assert_eq!(r["remote_ip_prefix"], "fd00::1/128");
    let from_group = api
        .post(rules, rule(json!({"protocol": "icmp", "remote_group_id": gid})))
        .await;
    assert_eq!(from_group["security_group_rule"]["remote_group_id"], gid.as_str());

    let v = api
        .get(&format!("{rules}?security_group_id={gid}&direction=ingress&fields=id"))
        .await;
    assert_eq!(v["security_group_rules"].as_array().map(Vec::len), Some(3), "{v}");
    let rule_path = format!("{rules}/{rid}");
    let v = api.get(&rule_path).await;
    assert_eq!(v["security_group_rule"]["protocol"], "tcp");
    let group_path = format!("{GROUPS}/{gid}");
    let v = api.get(&group_path).await;
    assert_eq!(
        v["security_group"]["security_group_rules"].as_array().map(Vec::len),
        Some(5)
    );

    let missing = uuid::Uuid::new_v4().to_string();
    let ports = |extra: Value| rule(extra);
    for (body, status, kind, message) in [
        (
            json!({"security_group_rule": {"security_group_id": gid}}),
            400,
            "HTTPBadRequest",
            "Failed to parse request. Required attribute 'direction' not specified".to_string(),
        ),
        (
            json!({"security_group_rule": {"direction": "ingress"}}),
            400,
            "HTTPBadRequest",
            "Failed to parse request. Required attribute 'security_group_id' not specified".to_string(),
        ),
        (
            rule(json!({"direction": "sideways"})),
            400,
            "HTTPBadRequest",
            "Invalid input for direction. Reason: sideways is not in valid_values.".to_string(),
        ),
        (
            json!({"security_group_rule": {"security_group_id": missing, "direction": "ingress"}}),
            404,
            "SecurityGroupNotFound",
            format!("Security group {missing} does not exist"),
        ),
        (
            ports(json!({"port_range_min": 22})),
            400,
            "SecurityGroupProtocolRequiredWithPorts",
            "Must also specify protocol if port range is given.".to_string(),
        ),
        (
            ports(json!({"protocol": "tcp", "port_range_min": 30, "port_range_max": 22})),
            400,
            "SecurityGroupInvalidPortRange",
            "For TCP/UDP protocols, port_range_min must be <= port_range_max".to_string(),
        ),
        (
            ports(json!({"protocol": "tcp", "port_range_min": 70000})),
            400,
            "SecurityGroupInvalidPortValue",
            "Invalid value for port 70000".to_string(),
        ),
        (
            rule(json!({"ethertype": "ipx"})),
            400,
            "SecurityGroupRuleInvalidEtherType",
            "Security group rule for ethertype 'ipx' not supported. Allowed values are ['IPv4', 'IPv6'].".to_string(),
        ),
        (
            rule(json!({"remote_ip_prefix": "::/0"})),
            400,
            "SecurityGroupRuleParameterConflict",
            "Conflicting value ethertype IPv4 for CIDR ::/0".to_string(),
        ),
        (
            rule(json!({"remote_ip_prefix": "bogus"})),
            400,
            "InvalidCIDR",
            "Invalid CIDR bogus given as IP prefix.".to_string(),
        ),
        (
            rule(json!({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": gid})),
            400,
            "SecurityGroupMultipleRemoteEntites",
            "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.".to_string(),
        ),
    ] {
        api.refused(Method::POST, rules, Some(&body), (status, kind, &message))
            .await;
    }
    let v = api
        .expect(Method::POST, rules, Some(&rule(json!({"protocol": "blah"}))), 400)
        .await;
    assert_eq!(v["NeutronError"]["type"], "SecurityGroupRuleInvalidProtocol", "{v}");

    api.delete(&rule_path).await;
    let gone = format!("Security group rule {rid} does not exist");
    for method in [Method::GET, Method::DELETE] {
        api.refused(method, &rule_path, None, (404, "SecurityGroupRuleNotFound", &gone))
            .await;
    }
    // Deleting a group takes its rules along.
    api.delete(&group_path).await;
    let from_group = s(&from_group["security_group_rule"]["id"]);
    api.expect(Method::GET, &format!("{rules}/{from_group}"), None, 404)
        .await;
});
