//! Nova's floating IP proxies over the embedded Neutron: `os-floating-ips`
//! and `os-floating-ip-pools` until 2.35, `addFloatingIp` and
//! `removeFloatingIp` until 2.43, with Nova's views, refusals and policy, each
//! caller held to their project's floating IPs. The caller is an admin of
//! `demo` unless a test names other roles.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::{Api, error_message};
use nova_schema::{assert_satisfies, floating_ips};
use serde_json::{Value, json};

const MEMBER: &str = "member,reader";

/// A call at 2.35 (or 2.43 for an action) as `roles` of `project`.
async fn as_caller(
    api: &Api,
    project: &str,
    roles: &str,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let minor = if uri.ends_with("/action") { 43 } else { 35 };
    let who = [("x-project-id", project), ("x-roles", roles)];
    api.at_as(minor, &who, method, uri, body).await
}

/// The same as the harness's admin of `demo`.
async fn call(api: &Api, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    as_caller(api, "demo", "admin,member,reader", method, uri, body).await
}

/// A new floating IP of `pool` for `demo`'s member; its view.
async fn allocate(api: &Api, pool: &str) -> Value {
    let body = json!({"pool": pool});
    let (status, made) = as_caller(api, "demo", MEMBER, Method::POST, "/v2.1/os-floating-ips", Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    made["floating_ip"].clone()
}

async fn action(api: &Api, server: &str, name: &str, address: &str) -> (StatusCode, Value) {
    let body = json!({ name: {"address": address} });
    call(api, Method::POST, &format!("/v2.1/servers/{server}/action"), Some(body)).await
}

/// An ACTIVE server of `demo` on its private network (routed to `public`).
async fn routed_server(api: &Api, name: &str) -> String {
    api.boot_active_with(json!({"name": name, "networks": "auto"})).await
}

/// The addresses of `kind` (`fixed`, `floating`) the server's view shows.
async fn addresses(api: &Api, server: &str, kind: &str) -> Vec<String> {
    let (_, body) = api.get(&format!("/v2.1/servers/{server}")).await;
    let mut found = Vec::new();
    for ips in body["server"]["addresses"].as_object().unwrap().values() {
        for ip in ips.as_array().unwrap() {
            if ip["OS-EXT-IPS:type"] == kind {
                found.push(ip["addr"].as_str().unwrap().to_owned());
            }
        }
    }
    found
}

/// A network `name` of `project` in the embedded Neutron with one subnet of
/// `cidr` (no router to any pool); its id.
fn project_network(api: &Api, name: &str, project: &str, cidr: &str) -> String {
    let sim = api.sim();
    let (_, net) = sim.request(
        "POST",
        "/v2.0/networks",
        Some(json!({"network": {"name": name, "project_id": project}})),
    );
    let net = net["network"]["id"].as_str().unwrap().to_owned();
    let subnet = json!({"subnet": {"network_id": net, "ip_version": 4, "cidr": cidr, "project_id": project}});
    assert_eq!(sim.request("POST", "/v2.0/subnets", Some(subnet)).0, 201);
    net
}

/// An ACTIVE server of project `other`, on a network of its own.
async fn their_server(api: &Api) -> String {
    let net = project_network(api, "theirs", "other", "10.88.0.0/24");
    let server =
        json!({"server": {"name": "theirs", "flavorRef": "1", "imageRef": common::IMAGE, "networks": [{"uuid": net}]}});
    let (status, made) = as_caller(api, "other", MEMBER, Method::POST, "/v2.1/servers", Some(server)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{made}");
    let id = made["server"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.built(&id).await, "ACTIVE");
    id
}

fn public_id(api: &Api) -> String {
    let (_, nets) = api.sim().request("GET", "/v2.0/networks?name=public", None);
    nets["networks"][0]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_projects_floating_ips_are_made_shown_listed_and_released_in_novas_views() {
    let api = Api::start().await;
    let (status, pools) = call(&api, Method::GET, "/v2.1/os-floating-ip-pools", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(pools, json!({"floating_ip_pools": [{"name": "public"}]}));
    assert_satisfies("floating IP pools", &floating_ips::pools(), &pools);

    let by_name = allocate(&api, "public").await;
    assert_eq!(by_name.as_object().unwrap().len(), 5, "{by_name}");
    assert_eq!(by_name["pool"], "public");
    assert_eq!(by_name["fixed_ip"], Value::Null);
    assert_eq!(by_name["instance_id"], Value::Null);
    assert!(by_name["ip"].as_str().unwrap().starts_with("172.24.4."), "{by_name}");
    let by_id = allocate(&api, &public_id(&api)).await;
    assert_eq!(by_id["pool"], "public", "a pool named by its network's id");
    let id = by_name["id"].as_str().unwrap();
    let (_, neutron) = api.sim().request("GET", &format!("/v2.0/floatingips/{id}"), None);
    assert_eq!(
        neutron["floatingip"]["project_id"], "demo",
        "made the caller's project's"
    );

    let uri = format!("/v2.1/os-floating-ips/{id}");
    let (status, shown) = as_caller(&api, "demo", "reader", Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["floating_ip"], by_name);
    assert_satisfies("floating IP", &floating_ips::show(), &shown);
    let (_, listed) = as_caller(&api, "demo", "reader", Method::GET, "/v2.1/os-floating-ips", None).await;
    assert_satisfies("floating IPs", &floating_ips::index(), &listed);
    let listed = listed["floating_ips"].as_array().unwrap();
    assert!(listed.contains(&by_name) && listed.contains(&by_id), "{listed:?}");

    // Another project's member sees none of them; its admin sees one by id,
    // and lists its own project's only, as Nova.
    let (status, body) = as_caller(&api, "other", MEMBER, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_message(&body), format!("Floating IP not found for ID {id}"));
    let (status, _) = as_caller(&api, "other", MEMBER, Method::DELETE, &uri, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, theirs) = as_caller(&api, "other", MEMBER, Method::GET, "/v2.1/os-floating-ips", None).await;
    assert_eq!(theirs, json!({"floating_ips": []}));
    let (status, _) = as_caller(&api, "other", "admin", Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, admins) = as_caller(&api, "other", "admin", Method::GET, "/v2.1/os-floating-ips", None).await;
    assert_eq!(admins, json!({"floating_ips": []}));
    let (status, _) = as_caller(&api, "demo", "reader", Method::DELETE, &uri, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a reader releases none");

    let (status, _) = as_caller(&api, "demo", MEMBER, Method::DELETE, &uri, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _) = call(&api, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = call(&api, Method::GET, "/v2.1/os-floating-ips/not-a-uuid", None).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "Floating IP not found for ID not-a-uuid")
    );

    for uri in ["/v2.1/os-floating-ips", "/v2.1/os-floating-ip-pools"] {
        let (status, _) = api.at(36, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri} is gone at 2.36");
    }
}

#[tokio::test]
async fn a_create_is_refused_in_novas_words() {
    let api = Api::start().await;
    let uri = "/v2.1/os-floating-ips";
    // No pool: Nova's default pool, `nova`, which this cloud has not got.
    for body in [
        None,
        Some(json!({})),
        Some(json!({"pool": ""})),
        Some(json!({"pool": "non_exist_pool"})),
    ] {
        let (status, answer) = call(&api, Method::POST, uri, body.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body:?}");
        assert_eq!(error_message(&answer), "Floating IP pool not found.");
    }
    let (status, answer) = call(&api, Method::POST, uri, Some(json!({"pool": 5}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_message(&answer),
        "Invalid input for field/attribute pool. Value: 5. 5 is not of type 'string', 'null'"
    );

    // A pool with one address left (the gateway holds the other).
    let sim = api.sim();
    let (_, net) = sim.request(
        "POST",
        "/v2.0/networks",
        Some(json!({"network": {"name": "tiny", "router:external": true}})),
    );
    let net = net["network"]["id"].as_str().unwrap().to_owned();
    let subnet = json!({"subnet": {"network_id": net, "ip_version": 4, "cidr": "192.0.2.0/30", "enable_dhcp": false}});
    assert_eq!(sim.request("POST", "/v2.0/subnets", Some(subnet)).0, 201);
    allocate(&api, "tiny").await;
    let (status, answer) = call(&api, Method::POST, uri, Some(json!({"pool": "tiny"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_message(&answer), "No more floating IPs in pool tiny.");

    let twin = json!({"network": {"name": "tiny", "router:external": true}});
    assert_eq!(sim.request("POST", "/v2.0/networks", Some(twin)).0, 201);
    let (status, answer) = call(&api, Method::POST, uri, Some(json!({"pool": "tiny"}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        error_message(&answer),
        "Multiple floating IP pools matches found for name 'tiny'"
    );
}

#[tokio::test]
async fn a_floating_ip_moves_between_servers_and_shows_in_their_addresses_at_once() {
    let api = Api::start().await;
    let first = routed_server(&api, "first").await;
    let second = routed_server(&api, "second").await;
    let fip = allocate(&api, "public").await;
    let (id, ip) = (fip["id"].as_str().unwrap(), fip["ip"].as_str().unwrap());
    let shown = format!("/v2.1/os-floating-ips/{id}");

    let (status, body) = action(&api, &first, "addFloatingIp", ip).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (_, view) = call(&api, Method::GET, &shown, None).await;
    assert_satisfies("an associated floating IP", &floating_ips::show(), &view);
    assert_eq!(view["floating_ip"]["instance_id"], first.as_str());
    let fixed = addresses(&api, &first, "fixed").await;
    assert_eq!(
        view["floating_ip"]["fixed_ip"],
        fixed.iter().find(|a| !a.contains(':')).unwrap().as_str()
    );
    assert_eq!(addresses(&api, &first, "floating").await, [ip]);

    // Associating it again moves it (Neutron re-associates), and both
    // servers' caches follow.
    let (status, body) = action(&api, &second, "addFloatingIp", ip).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(addresses(&api, &second, "floating").await, [ip]);
    assert!(addresses(&api, &first, "floating").await.is_empty());
    let (status, body) = action(&api, &first, "removeFloatingIp", ip).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        error_message(&body),
        format!("Floating IP {ip} is not associated with instance {first}.")
    );

    // A second floating IP for the same fixed IP: Neutron's 409, Nova's 400.
    let other = allocate(&api, "public").await;
    let (status, body) = action(&api, &second, "addFloatingIp", other["ip"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_message(&body).contains("already has a floating IP"), "{body}");

    let (status, body) = action(&api, &second, "removeFloatingIp", ip).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert!(addresses(&api, &second, "floating").await.is_empty());
    let (_, view) = call(&api, Method::GET, &shown, None).await;
    assert_eq!(view["floating_ip"]["instance_id"], Value::Null);
    assert_eq!(view["floating_ip"]["fixed_ip"], Value::Null);
    // Now on no server: an admin is told so, a member's policy check has no
    // project to pass (Nova's empty target).
    let (status, _) = action(&api, &second, "removeFloatingIp", ip).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let uri = format!("/v2.1/servers/{second}/action");
    let body = json!({"removeFloatingIp": {"address": ip}});
    let (status, _) = as_caller(&api, "demo", MEMBER, Method::POST, &uri, Some(body)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Releasing an associated floating IP takes it off the server's addresses.
    let body = json!({"addFloatingIp": {"address": ip}});
    let (status, _) = as_caller(&api, "demo", MEMBER, Method::POST, &uri, Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(addresses(&api, &second, "floating").await, [ip]);
    let (status, _) = as_caller(&api, "demo", MEMBER, Method::DELETE, &shown, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert!(addresses(&api, &second, "floating").await.is_empty());
}

#[tokio::test]
async fn the_actions_are_refused_in_novas_order_and_words() {
    let api = Api::start().await;
    let server = routed_server(&api, "vm").await;
    let uri = format!("/v2.1/servers/{server}/action");
    let fip = allocate(&api, "public").await;
    let ip = fip["ip"].as_str().unwrap();

    let (status, body) = action(&api, &server, "addFloatingIp", "0.0.0.0").await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "floating IP not found")
    );
    let (status, body) = action(&api, &server, "removeFloatingIp", "0.0.0.0").await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "Floating IP not found for address 0.0.0.0.")
    );
    let (status, body) = action(&api, &server, "addFloatingIp", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_message(&body),
        "Invalid input for field/attribute address. Value: . '' is not valid under any of the given schemas"
    );
    let extra = json!({"addFloatingIp": {"address": ip, "pool": "public"}});
    let (status, _) = call(&api, Method::POST, &uri, Some(extra)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let elsewhere = json!({"addFloatingIp": {"address": ip, "fixed_address": "10.9.9.9"}});
    let (status, body) = call(&api, Method::POST, &uri, Some(elsewhere)).await;
    assert_eq!(
        (status, error_message(&body)),
        (
            StatusCode::BAD_REQUEST,
            "Specified fixed address not assigned to instance"
        )
    );
    // Another project's member has no floating IP at that address, even for
    // a server of theirs.
    let theirs = their_server(&api).await;
    let body = json!({"addFloatingIp": {"address": ip}});
    let their_uri = format!("/v2.1/servers/{theirs}/action");
    let (status, body) = as_caller(&api, "other", MEMBER, Method::POST, &their_uri, Some(body)).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::NOT_FOUND, "floating IP not found")
    );

    // A server with no port: Nova's empty info cache.
    let bare = api.boot_active_with(json!({"name": "bare", "networks": "none"})).await;
    let (status, body) = action(&api, &bare, "addFloatingIp", ip).await;
    assert_eq!(
        (status, error_message(&body)),
        (StatusCode::BAD_REQUEST, "Instance network is not ready yet")
    );

    for (name, version) in [("addFloatingIp", 44), ("removeFloatingIp", 44)] {
        let body = json!({ name: {"address": ip} });
        let (status, _) = api.at(version, Method::POST, &uri, Some(body)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} is gone at 2.{version}");
    }
}

#[tokio::test]
async fn a_server_whose_subnet_has_no_router_to_the_pool_is_refused_with_neutrons_reason() {
    let api = Api::start().await;
    let net = project_network(&api, "isolated", "demo", "10.77.0.0/24");
    let server = api
        .boot_active_with(json!({"name": "isolated", "networks": [{"uuid": net}]}))
        .await;
    let fip = allocate(&api, "public").await;
    let ip = fip["ip"].as_str().unwrap();
    let fixed = addresses(&api, &server, "fixed").await.remove(0);

    let (status, body) = action(&api, &server, "addFloatingIp", ip).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = error_message(&body);
    let start = format!(
        "Unable to associate floating IP {ip} to fixed IP {fixed} for instance {server}. Error: External network "
    );
    assert!(message.starts_with(&start), "{message}");
    assert!(message.contains("is not reachable from subnet"), "{message}");
}
