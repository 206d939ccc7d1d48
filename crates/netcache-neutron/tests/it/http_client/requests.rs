//! Request bodies and headers.

use super::*;

#[tokio::test]
async fn create_port_body() {
    let neutron = Stub::start(|_, _| Reply::json(201, json!({"port": port_json("p1", "dev-1")}))).await;
    client(noauth_config(&neutron.url))
        .create_port(&create_request())
        .await
        .unwrap();
    let seen = &neutron.seen()[0];
    assert_eq!((seen.method.as_str(), seen.path.as_str()), ("POST", "/v2.0/ports"));
    assert_eq!(
        seen.json(),
        json!({"port": {
            "network_id": "net-1", "project_id": "proj",
            "fixed_ips": [{"subnet_id": "sub-4"}],
            "device_id": "dev-1", "device_owner": "compute:nova", "binding:host_id": "host1",
            "tags": ["netcache:owner=dep", "netcache:intent=i"], "admin_state_up": true
        }})
    );
}

#[tokio::test]
async fn update_and_delete_send_if_match() {
    let neutron = Stub::start(|seen, _| match seen.method.as_str() {
        "PUT" => Reply::json(200, json!({"port": port_json("p1", "")})),
        _ => Reply::raw(204, ""),
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    let id = PortId::from("p1");
    api.update_port(&id, &PortUpdate::unbind(), Some(7)).await.unwrap();
    api.update_port(&id, &PortUpdate::bind("dev", "compute:nova", "h"), None)
        .await
        .unwrap();
    api.delete_port(&id, Some(8)).await.unwrap();
    api.delete_port(&id, None).await.unwrap();

    let seen = neutron.seen();
    assert_eq!(seen[0].path, "/v2.0/ports/p1");
    assert_eq!(seen[0].header("if-match"), Some("revision_number=7"));
    assert_eq!(
        seen[0].json(),
        json!({"port": {"device_id": "", "device_owner": "", "binding:host_id": null}})
    );
    assert_eq!(seen[1].header("if-match"), None);
    assert_eq!(
        seen[1].json(),
        json!({"port": {"device_id": "dev", "device_owner": "compute:nova", "binding:host_id": "h"}})
    );
    assert_eq!(
        (seen[2].method.as_str(), seen[2].header("if-match")),
        ("DELETE", Some("revision_number=8"))
    );
    assert_eq!((seen[3].method.as_str(), seen[3].header("if-match")), ("DELETE", None));
}

#[tokio::test]
async fn replace_port_tags_is_one_put_of_the_whole_list() {
    let neutron = Stub::start(|_, _| Reply::raw(200, r#"{"tags": []}"#)).await;
    let tags = vec!["netcache:owner=dep-1".to_owned(), "netcache:intent=abc".to_owned()];
    client(noauth_config(&neutron.url))
        .replace_port_tags(&PortId::from("p1"), &tags)
        .await
        .unwrap();
    let seen = neutron.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        format!("{} {}", seen[0].method, seen[0].path),
        "PUT /v2.0/ports/p1/tags"
    );
    assert_eq!(
        seen[0].json(),
        json!({"tags": ["netcache:owner=dep-1", "netcache:intent=abc"]})
    );
}

#[tokio::test]
async fn noauth_sends_extra_headers_and_no_token() {
    let neutron = Stub::start(|_, _| Reply::raw(200, EXTENSIONS)).await;
    let mut headers = http::HeaderMap::new();
    headers.insert("x-project-id", "proj".parse().unwrap());
    headers.insert("x-roles", "admin,member,reader".parse().unwrap());
    // The endpoint may already end in /v2.0.
    let auth = Auth::None {
        endpoint: format!("{}/v2.0/", neutron.url).parse().unwrap(),
        headers,
    };
    client(ClientConfig::new(auth)).list_extensions().await.unwrap();
    let seen = &neutron.seen()[0];
    assert_eq!(seen.path, "/v2.0/extensions");
    assert_eq!(seen.header("x-project-id"), Some("proj"));
    assert_eq!(seen.header("x-roles"), Some("admin,member,reader"));
    assert_eq!(seen.header("x-auth-token"), None);
}
