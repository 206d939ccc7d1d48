//! Security groups as Nova has them with Neutron: a boot's groups (by name or
//! id, among its project's) on every port the boot creates for the server, the
//! groups a server shows, and the actions `addSecurityGroup` /
//! `removeSecurityGroup` as durable operations.

use crate::common;
use netcache_compute::prelude::*;

use common::{Options, PROJECT, TestApp};
use netcache_testenv::json::{items, sorted_strings};
use reqwest::Method;
use serde_json::{Value, json};

/// A security group made in Neutron for `project`; returns its id.
fn group(t: &TestApp, project: &str, name: &str) -> String {
    let body = json!({"security_group": {"name": name, "project_id": project}});
    let (status, created) = t.neutron().request("POST", "/v2.0/security-groups", Some(body));
    assert_eq!(status, 201, "{created}");
    created["security_group"]["id"].as_str().unwrap().to_owned()
}

/// The project's `default` group (Neutron makes it on the first list).
fn default_group(t: &TestApp) -> String {
    let (status, body) = t.neutron().request(
        "GET",
        &format!("/v2.0/security-groups?project_id={PROJECT}&name=default"),
        None,
    );
    assert_eq!(status, 200, "{body}");
    body["security_groups"][0]["id"].as_str().unwrap().to_owned()
}

/// A boot with these groups (the request's `security_groups`, if any) and networks.
async fn boot_with(t: &TestApp, groups: Option<Value>, networks: Value) -> (u16, Value) {
    let mut server = json!({"name": "vm", "flavorRef": "1", "imageRef": common::IMAGE, "networks": networks});
    if let Some(groups) = groups {
        server["security_groups"] = groups;
    }
    let answer = t.post("/servers", json!({ "server": server })).await;
    t.app().compute.settle().await;
    answer
}

/// Two new ports on the private network.
fn two_ports(t: &TestApp) -> Value {
    let net = &t.topology.private_network_id;
    json!([{"uuid": net}, {"uuid": net}])
}

/// The groups Neutron has each of the server's ports in, by port id.
fn port_groups(t: &TestApp, server: &str) -> Vec<(String, Value)> {
    let mut ports: Vec<(String, Value)> = t
        .neutron_ports(server)
        .into_iter()
        .map(|p| (p["id"].as_str().unwrap().to_owned(), p["security_groups"].clone()))
        .collect();
    ports.sort_by(|a, b| a.0.cmp(&b.0));
    ports
}

fn names(list: &[&str]) -> Value {
    list.iter().map(|n| json!({"name": n})).collect()
}

async fn act(t: &TestApp, server: &str, body: Value) -> (u16, Value) {
    t.post(&format!("/servers/{server}/action"), body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boot_puts_every_port_it_creates_in_its_groups_and_the_server_shows_them() {
    let t = TestApp::start().await;
    let web = group(&t, PROJECT, "web");
    let (status, created) = boot_with(&t, Some(json!([{"name": "web"}, {"name": "web"}])), two_ports(&t)).await;
    assert_eq!(status, 202, "{created}");
    // Nova echoes the request's groups.
    assert_eq!(created["server"]["security_groups"], names(&["web", "web"]));
    let id = created["server"]["id"].as_str().unwrap();
    let ports = port_groups(&t, id);
    assert_eq!(ports.len(), 2);
    for (_, groups) in &ports {
        assert_eq!(*groups, json!([web]));
    }
    // One entry per port and group, as Nova shows them.
    let server = t.server(id).await;
    assert_eq!(server["status"], "ACTIVE");
    assert_eq!(server["security_groups"], names(&["web", "web"]));
    let (_, list) = t.get("/servers/detail").await;
    assert_eq!(list["servers"][0]["security_groups"], names(&["web", "web"]));
    // Recorded with the server: a build that resumes creates its ports alike.
    let row = t.app().compute.server(id.parse().unwrap()).await.unwrap();
    assert_eq!(row.security_groups, std::slice::from_ref(&web));
    // An attach is not a boot: Nova creates its port without groups, so Neutron
    // puts it in the project's default group.
    let body = json!({"interfaceAttachment": {"net_id": t.topology.private_network_id}});
    let (status, attached) = t.post(&format!("/servers/{id}/os-interface"), body).await;
    assert_eq!(status, 200, "{attached}");
    let new_port = attached["interfaceAttachment"]["port_id"].as_str().unwrap();
    let (_, groups) = port_groups(&t, id).into_iter().find(|(p, _)| p == new_port).unwrap();
    assert_eq!(groups, json!([default_group(&t)]));

    // By id too; a user's port keeps its own groups (Nova leaves it alone).
    let user_id = t.user_port(json!({}))["id"].as_str().unwrap().to_owned();
    let (status, created) = boot_with(
        &t,
        Some(json!([{"name": web}])),
        json!([{"port": user_id}, {"uuid": t.topology.private_network_id}]),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    let id = created["server"]["id"].as_str().unwrap();
    let default = default_group(&t);
    for (port, groups) in port_groups(&t, id) {
        let want = if port == user_id {
            json!([default])
        } else {
            json!([web])
        };
        assert_eq!(groups, want, "{port}");
    }
    let shown = sorted_strings(&t.server(id).await, "security_groups", "name");
    assert_eq!(shown, ["default", "web"]);

    // No groups (or `default` alone): Neutron's default, and Nova's `default` echoed.
    for groups in [None, Some(json!([{"name": "default"}]))] {
        let (status, created) = boot_with(&t, groups.clone(), json!([{"uuid": t.topology.private_network_id}])).await;
        assert_eq!(status, 202, "{created}");
        assert_eq!(created["server"]["security_groups"], names(&["default"]), "{groups:?}");
        let id = created["server"]["id"].as_str().unwrap();
        assert_eq!(port_groups(&t, id)[0].1, json!([default]), "{groups:?}");
        assert_eq!(t.server(id).await["security_groups"], names(&["default"]), "{groups:?}");
    }
    // A server without ports has no groups: Nova leaves the key out.
    let (_, created) = boot_with(&t, None, json!("none")).await;
    let server = t.server(created["server"]["id"].as_str().unwrap()).await;
    assert!(server.get("security_groups").is_none(), "{server}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_the_project_cannot_use_is_refused_before_the_boot_is_accepted() {
    let t = TestApp::start().await;
    let ports_before = t.neutron().port_count();
    group(&t, PROJECT, "twin");
    group(&t, PROJECT, "twin");
    let foreign = group(&t, "another-project", "theirs");
    let unknown = |what: &str| json!({"badRequest": {"code": 400, "message": format!("Unable to find security_group with name or id '{what}'")}});
    for (groups, status, body) in [
        (json!([{"name": "does_not_exist"}]), 400, unknown("does_not_exist")),
        // Another project's group is as unknown as a missing one, by name or id,
        // and the answer names only what was asked for.
        (json!([{"name": "theirs"}]), 400, unknown("theirs")),
        (json!([{"name": foreign}]), 400, unknown(&foreign)),
        (
            json!([{"name": "twin"}]),
            409,
            json!({"conflictingRequest": {"code": 409, "message": "Multiple security_group matches found for name 'twin', use an ID to be more specific."}}),
        ),
        (
            json!("web"),
            400,
            json!({"badRequest": {"code": 400, "message": "Invalid input for field/attribute security_groups. Value: web. 'web' is not of type 'array'"}}),
        ),
        (
            json!([{"name": ""}]),
            400,
            json!({"badRequest": {"code": 400, "message": "Invalid input for field/attribute name. Value: . '' is too short"}}),
        ),
        (
            json!([{"id": "x"}]),
            400,
            json!({"badRequest": {"code": 400, "message": "Invalid input for field/attribute 0. Value: {'id': 'x'}. Additional properties are not allowed ('id' was unexpected)"}}),
        ),
    ] {
        let (got, answer) = boot_with(
            &t,
            Some(groups.clone()),
            json!([{"uuid": t.topology.private_network_id}]),
        )
        .await;
        assert_eq!((got, &answer), (status, &body), "{groups}");
    }
    // Nothing was accepted: no server, no port.
    let (_, list) = t.get("/servers").await;
    assert_eq!(list["servers"], json!([]));
    assert_eq!(t.neutron().port_count(), ports_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_and_remove_change_every_port_and_refuse_as_nova_does() {
    let t = TestApp::start().await;
    let db = group(&t, PROJECT, "db");
    let default = default_group(&t);
    let (_, created) = boot_with(&t, None, two_ports(&t)).await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();

    let (status, body) = act(&t, &id, json!({"addSecurityGroup": {"name": "db"}})).await;
    assert_eq!((status, &body), (202, &Value::Null));
    for (port, groups) in port_groups(&t, &id) {
        assert_eq!(groups, json!([default, db]), "{port}");
    }
    assert_eq!(
        t.server(&id).await["security_groups"],
        names(&["default", "db", "default", "db"])
    );
    // Neutron refuses a group twice on a port; Nova passes that on.
    let (status, body) = act(&t, &id, json!({"addSecurityGroup": {"name": db}})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["badRequest"]["message"],
        format!("Invalid input for security_groups. Reason: Duplicate items in the list: '{db}'.")
    );

    let (status, _) = act(&t, &id, json!({"removeSecurityGroup": {"name": "default"}})).await;
    assert_eq!(status, 202);
    for (port, groups) in port_groups(&t, &id) {
        assert_eq!(groups, json!([db]), "{port}");
    }
    let (status, body) = act(&t, &id, json!({"removeSecurityGroup": {"name": "default"}})).await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"itemNotFound": {"code": 404, "message": format!("Security group default not associated with the instance {id}")}})
        )
    );
    // The last group gone: the server shows none, and no key (Tempest's
    // test_remove_server_all_security_groups).
    let (status, _) = act(&t, &id, json!({"removeSecurityGroup": {"name": "db"}})).await;
    assert_eq!(status, 202);
    let server = t.server(&id).await;
    assert!(server.get("security_groups").is_none(), "{server}");
    assert_eq!(port_groups(&t, &id)[0].1, json!([]));

    // Each change is an instance action; a refused one records nothing.
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    let mut kinds: Vec<&str> = items(&actions, "instanceActions")
        .iter()
        .filter_map(|a| a["action"].as_str())
        .filter(|a| a.ends_with("SecurityGroup"))
        .collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        ["addSecurityGroup", "removeSecurityGroup", "removeSecurityGroup"]
    );

    group(&t, "another-project", "theirs");
    group(&t, PROJECT, "twin");
    group(&t, PROJECT, "twin");
    let missing = |name: &str| json!({"itemNotFound": {"code": 404, "message": format!("Security group {name} is not found for project {PROJECT}")}});
    let gone = uuid::Uuid::new_v4();
    for (body, status, answer) in [
        (json!({"addSecurityGroup": {"name": "nope"}}), 404, missing("nope")),
        (json!({"addSecurityGroup": {"name": "theirs"}}), 404, missing("theirs")),
        (
            json!({"removeSecurityGroup": {"name": "twin"}}),
            409,
            json!({"conflictingRequest": {"code": 409, "message": "Multiple security_group matches found for name 'twin', use an ID to be more specific."}}),
        ),
        (
            json!({"addSecurityGroup": {}}),
            400,
            json!({"badRequest": {"code": 400, "message": "Invalid input for field/attribute addSecurityGroup. Value: {}. 'name' is a required property"}}),
        ),
        (
            json!({"removeSecurityGroup": {"name": "db", "x": 1}}),
            400,
            json!({"badRequest": {"code": 400, "message": "Invalid input for field/attribute removeSecurityGroup. Value: {'name': 'db', 'x': 1}. Additional properties are not allowed ('x' was unexpected)"}}),
        ),
        (
            json!({"addSecurityGroup": {"name": "  "}}),
            400,
            json!({"badRequest": {"code": 400, "message": "Security group name cannot be empty"}}),
        ),
    ] {
        let (got, reply) = act(&t, &id, body.clone()).await;
        assert_eq!((got, &reply), (status, &answer), "{body}");
    }
    let (status, body) = act(&t, &gone.to_string(), json!({"addSecurityGroup": {"name": "db"}})).await;
    assert_eq!(status, 404, "{body}");
    // A server without ports: Nova finds no port with its device id.
    let (_, created) = boot_with(&t, None, json!("none")).await;
    let portless = created["server"]["id"].as_str().unwrap();
    let (status, body) = act(&t, portless, json!({"addSecurityGroup": {"name": "db"}})).await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"itemNotFound": {"code": 404, "message": format!("instance_id {portless} could not be found as device id on any ports")}})
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_refused_while_another_operation_of_the_server_runs() {
    let t = TestApp::with(Options {
        proxy: true,
        ..Options::default()
    })
    .await;
    group(&t, PROJECT, "db");
    let id = t.boot_on_private().await;
    let attach = t.attach_held_at_create(&id).await;
    let (status, body) = act(&t, &id, json!({"addSecurityGroup": {"name": "db"}})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["conflictingRequest"]["message"],
        format!("Cannot 'security_group' instance {id} while it is in task_state attach")
    );
    t.proxy().open_gate();
    let (status, body) = attach.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = act(&t, &id, json!({"addSecurityGroup": {"name": "db"}})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        t.server(&id).await["security_groups"],
        names(&["default", "db", "default", "db"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_interrupted_after_a_port_changed_is_finished_after_a_restart() {
    let mut t = TestApp::doomed(|s| s.compute.crash_at = Some("after-security-group-applied".into())).await;
    let db = group(&t, PROJECT, "db");
    let default = default_group(&t);
    let (_, created) = boot_with(&t, None, two_ports(&t)).await;
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    // The process dies after Neutron changed the first port: the waiting request
    // learns it was interrupted.
    let (status, body) = act(&t, &id, json!({"addSecurityGroup": {"name": "db"}})).await;
    assert_eq!(status, 503, "{body}");
    let changed = port_groups(&t, &id)
        .into_iter()
        .filter(|(_, groups)| *groups == json!([default, db]))
        .count();
    assert_eq!(changed, 1);
    t.restart_clean().await;
    assert!(t.app().compute.store().operations().await.unwrap().is_empty());
    for (port, groups) in port_groups(&t, &id) {
        assert_eq!(groups, json!([default, db]), "{port}");
    }
    assert_eq!(
        t.server(&id).await["security_groups"],
        names(&["default", "db", "default", "db"])
    );
    // The resumed operation kept its request: one action, its event a success.
    let (_, actions) = t.get(&format!("/servers/{id}/os-instance-actions")).await;
    let add: Vec<&Value> = items(&actions, "instanceActions")
        .iter()
        .filter(|a| a["action"] == "addSecurityGroup")
        .collect();
    assert_eq!(add.len(), 1, "{actions}");
    let request = add[0]["request_id"].as_str().unwrap();
    let (_, action) = t
        .admin_get(&format!("/servers/{id}/os-instance-actions/{request}"))
        .await;
    assert_eq!(action["instanceAction"]["events"][0]["result"], "Success", "{action}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_resumed_after_a_crash_creates_its_ports_in_the_boot_groups() {
    let mut t = TestApp::doomed(|s| s.compute.crash_at = Some("after-intent-recorded".into())).await;
    let web = group(&t, PROJECT, "web");
    let (status, created) = boot_with(
        &t,
        Some(json!([{"name": "web"}])),
        json!([{"uuid": t.topology.private_network_id}]),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    let id = created["server"]["id"].as_str().unwrap().to_owned();
    assert!(t.neutron_ports(&id).is_empty());
    t.restart_clean().await;
    assert!(t.app().compute.store().operations().await.unwrap().is_empty());
    assert_eq!(t.server(&id).await["status"], "ACTIVE");
    assert_eq!(port_groups(&t, &id)[0].1, json!([web]));
    let (status, _) = t.call(Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(status, 204);
}

/// `GET /servers/{id}/os-security-groups`, which Ansible's server module reads on
/// every run after the first: the groups of the server's ports in full, sorted
/// by owner and name, with their ingress rules in Nova's form (a rule from a
/// group names it, one without ports spans all of them, one from anywhere is
/// `0.0.0.0/0`); an unknown server is Nova's 404. Issue 33 defect 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_security_groups_are_listed_in_full_as_nova_lists_them() {
    let t = TestApp::start().await;
    let web = group(&t, PROJECT, "web");
    let default = default_group(&t);
    for rule in [
        json!({"protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "10.0.0.0/8"}),
        json!({"protocol": "udp", "remote_group_id": default}),
        json!({"protocol": "icmp"}),
    ] {
        let mut rule = rule;
        rule["security_group_id"] = json!(web);
        rule["direction"] = json!("ingress");
        let body = json!({ "security_group_rule": rule });
        let (status, created) = t.neutron().request("POST", "/v2.0/security-group-rules", Some(body));
        assert_eq!(status, 201, "{created}");
    }
    let net = &t.topology.private_network_id;
    let (status, created) = boot_with(
        &t,
        Some(json!([{"name": "web"}, {"name": "default"}])),
        json!([{"uuid": net}]),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    let id = created["server"]["id"].as_str().unwrap();

    let (status, listed) = t.get(&format!("/servers/{id}/os-security-groups")).await;
    assert_eq!(status, 200, "{listed}");
    let groups = listed["security_groups"].as_array().unwrap();
    let summary: Vec<(&str, &str, &str)> = groups
        .iter()
        .map(|g| {
            let field = |k: &str| g[k].as_str().unwrap();
            (field("id"), field("name"), field("tenant_id"))
        })
        .collect();
    assert_eq!(
        summary,
        [(default.as_str(), "default", PROJECT), (web.as_str(), "web", PROJECT)]
    );
    let from_default = json!({"name": "default", "tenant_id": PROJECT});
    // Neutron's default group: all traffic from its members, for each family
    // (its egress rules are not shown).
    for rule in groups[0]["rules"].as_array().unwrap() {
        assert_eq!(rule["parent_group_id"], default.as_str(), "{rule}");
        assert_eq!(
            (&rule["ip_protocol"], &rule["from_port"], &rule["to_port"]),
            (&Value::Null, &Value::Null, &Value::Null),
            "{rule}"
        );
        assert_eq!(
            (&rule["group"], &rule["ip_range"]),
            (&from_default, &json!({})),
            "{rule}"
        );
    }
    assert_eq!(groups[0]["rules"].as_array().unwrap().len(), 2, "{listed}");
    let mut rules: Vec<Value> = items(&groups[1], "rules")
        .iter()
        .map(|r| {
            assert_eq!(r["parent_group_id"], web.as_str(), "{r}");
            assert!(r["id"].is_string(), "{r}");
            json!([
                r["ip_protocol"],
                r["from_port"],
                r["to_port"],
                r["group"],
                r["ip_range"]
            ])
        })
        .collect();
    rules.sort_by_key(ToString::to_string);
    assert_eq!(
        rules,
        [
            json!(["icmp", -1, -1, {}, {"cidr": "0.0.0.0/0"}]),
            json!(["tcp", 22, 22, {}, {"cidr": "10.0.0.0/8"}]),
            json!(["udp", 1, 65535, from_default, {}]),
        ]
    );
    assert!(groups[1]["description"].is_string(), "{listed}");

    // A server without ports has none; an unknown one is Nova's 404.
    let (_, created) = boot_with(&t, None, json!("none")).await;
    let portless = created["server"]["id"].as_str().unwrap();
    let (status, listed) = t.get(&format!("/servers/{portless}/os-security-groups")).await;
    assert_eq!((status, listed), (200, json!({"security_groups": []})));
    let missing = "6d3c0c6e-0a9e-4c2a-9e2b-000000000000";
    let (status, answer) = t.get(&format!("/servers/{missing}/os-security-groups")).await;
    assert_eq!(status, 404, "{answer}");
    assert_eq!(
        answer["itemNotFound"]["message"],
        format!("Instance {missing} could not be found.")
    );
}
