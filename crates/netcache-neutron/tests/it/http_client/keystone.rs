//! Keystone: password and application-credential auth, the catalog, token reuse and renewal.

use super::*;

#[tokio::test]
async fn password_auth_sends_v3_body_and_uses_catalog_endpoint() {
    let neutron = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&format!("{}/", neutron.url)), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    let aliases = api.list_extensions().await.unwrap();
    assert!(aliases.contains("revision-if-match"));

    let auth = &ks.seen()[0];
    assert_eq!(
        auth.json(),
        json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": "nova", "domain": {"name": "Default"}, "password": "secret"}}},
            "scope": {"project": {"name": "service", "domain": {"name": "Default"}}}
        }})
    );
    assert_extensions_listed_with_keystones_token(&neutron);
}

/// keystoneauth's `endpoint_override`: the token from Keystone, Neutron's URL
/// from the configuration, whatever the catalog says.
#[tokio::test]
async fn an_endpoint_override_wins_over_the_catalog() {
    let catalogued = neutron_refusing(&[]).await;
    let overriding = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&catalogued.url), 3600).await;
    let mut config = ClientConfig::new(password_auth(&ks.url));
    config.endpoint_override = Some(overriding.url.parse().unwrap());
    client(config).list_extensions().await.unwrap();
    assert!(catalogued.seen().is_empty(), "the catalog's Neutron is not called");
    assert_extensions_listed_with_keystones_token(&overriding);
}

/// `neutron`'s first call listed the extensions with the token Keystone issued.
#[track_caller]
fn assert_extensions_listed_with_keystones_token(neutron: &Stub) {
    let call = &neutron.seen()[0];
    assert_eq!(call.path, "/v2.0/extensions");
    assert_eq!(call.header("x-auth-token"), Some("tok-1"));
}

#[tokio::test]
async fn application_credential_auth_sends_v3_body() {
    let neutron = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&format!("{}/v2.0", neutron.url)), 3600).await;
    let auth = Auth::ApplicationCredential {
        auth_url: ks.url.parse().unwrap(), // without /v3: the client appends it
        id: "ac-id".into(),
        secret: "ac-secret".into(),
    };
    let api = client(ClientConfig::new(auth));
    api.list_extensions().await.unwrap();

    assert_eq!(
        ks.seen()[0].json(),
        json!({"auth": {"identity": {
            "methods": ["application_credential"],
            "application_credential": {"id": "ac-id", "secret": "ac-secret"}
        }}})
    );
    assert_eq!(neutron.seen()[0].path, "/v2.0/extensions");
}

#[tokio::test]
async fn catalog_lookup_by_type_interface_and_region() {
    let public_one = Stub::start(|_, _| Reply::raw(200, r#"{"extensions": [{"alias": "public-one"}]}"#)).await;
    let internal_one = Stub::start(|_, _| Reply::raw(200, r#"{"extensions": [{"alias": "internal-one"}]}"#)).await;
    let internal_two = Stub::start(|_, _| Reply::raw(200, r#"{"extensions": [{"alias": "internal-two"}]}"#)).await;
    let catalog = json!([
        {"type": "compute", "endpoints": [
            {"interface": "internal", "region_id": "RegionTwo", "url": "http://127.0.0.1:1/"}]},
        {"type": "network", "endpoints": [
            {"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": public_one.url},
            {"interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": internal_one.url},
            {"interface": "internal", "region": "RegionTwo", "region_id": "RegionTwo", "url": internal_two.url}]}
    ]);
    let ks = keystone(catalog, 3600).await;

    let alias = |interface, region: Option<&str>| {
        let mut config = ClientConfig::new(password_auth(&ks.url));
        config.interface = interface;
        config.region = region.map(str::to_owned);
        async move {
            client(config)
                .list_extensions()
                .await
                .map(|a| a.into_iter().collect::<Vec<_>>())
        }
    };
    assert_eq!(alias(Interface::Public, None).await.unwrap(), ["public-one"]);
    assert_eq!(alias(Interface::Internal, None).await.unwrap(), ["internal-one"]);
    assert_eq!(
        alias(Interface::Internal, Some("RegionTwo")).await.unwrap(),
        ["internal-two"]
    );
    let err = alias(Interface::Admin, None).await.unwrap_err();
    assert!(
        matches!(&err, Error::Auth(m) if m.contains("interface admin")),
        "{err:?}"
    );
    let err = alias(Interface::Public, Some("RegionThree")).await.unwrap_err();
    assert!(matches!(&err, Error::Auth(m) if m.contains("RegionThree")), "{err:?}");
}

#[tokio::test]
async fn token_is_reused_across_calls() {
    let neutron = neutron_refusing(&[]).await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));
    for _ in 0..5 {
        api.list_extensions().await.unwrap();
    }
    assert_eq!(ks.count(), 1);
    assert!(neutron.seen().iter().all(|s| s.header("x-auth-token") == Some("tok-1")));
    assert_eq!(neutron.count(), 5);
}

#[tokio::test]
async fn neutron_401_reauthenticates_once_and_repeats_the_call() {
    let neutron = neutron_refusing(&["tok-1"]).await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 2);
    let tokens = neutron.tokens();
    assert_eq!(tokens, ["tok-1", "tok-2"]);

    // The new token is kept.
    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 2);
}

#[tokio::test]
async fn create_port_is_repeated_after_a_401() {
    let neutron = Stub::start(|seen, _| match seen.header("x-auth-token") {
        Some("tok-1") => Reply::raw(401, "Authentication required"),
        _ => Reply::json(201, json!({"port": port_json("p1", "dev-1")})),
    })
    .await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    let port = api.create_port(&create_request()).await.unwrap();
    assert_eq!(port.id.as_str(), "p1");
    let seen = neutron.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.method == "POST"));
    assert_eq!(ks.count(), 2);
}

#[tokio::test]
async fn persistent_401_is_an_auth_error_after_one_reauthentication() {
    let neutron = neutron_refusing(&["tok-1", "tok-2", "tok-3"]).await;
    let ks = keystone(network_catalog(&neutron.url), 3600).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));
    let err = api.list_extensions().await.unwrap_err();
    assert!(matches!(err, Error::Auth(_)), "{err:?}");
    assert_eq!(neutron.count(), 2);
    assert_eq!(ks.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn token_is_refreshed_shortly_before_expiry() {
    let neutron = neutron_refusing(&[]).await;
    // Lives 120 s: refreshed after 60 s (the margin is min(60 s, half the life)).
    let ks = keystone(network_catalog(&neutron.url), 120).await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));

    api.list_extensions().await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 1);

    tokio::time::advance(Duration::from_secs(31)).await;
    api.list_extensions().await.unwrap();
    assert_eq!(ks.count(), 2);
    let tokens = neutron.tokens();
    assert_eq!(tokens, ["tok-1", "tok-1", "tok-2"]);
}

#[tokio::test]
async fn keystone_401_is_an_auth_error() {
    let neutron = neutron_refusing(&[]).await;
    let ks = Stub::start(|_, _| {
        Reply::json(401, json!({"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}))
    })
    .await;
    let api = client(ClientConfig::new(password_auth(&ks.url)));
    let err = api.list_extensions().await.unwrap_err();
    assert!(matches!(&err, Error::Auth(m) if m.contains("401")), "{err:?}");
    assert_eq!(err.metric_label(), "auth");
    assert_eq!(neutron.count(), 0);
}

#[tokio::test]
async fn unreachable_keystone_is_an_auth_error() {
    let api = client(ClientConfig::new(password_auth(&refused_url())));
    assert!(matches!(api.list_extensions().await, Err(Error::Auth(_))));
}
