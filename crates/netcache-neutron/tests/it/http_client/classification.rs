//! How answers are classified: rejected, ambiguous, unreachable, protocol.

use super::*;

#[tokio::test]
async fn not_found_with_neutron_body_is_rejected() {
    let neutron = Stub::start(|_, _| Reply::neutron_error(404, "PortNotFound", "Port p could not be found.")).await;
    let api = client(noauth_config(&neutron.url));
    let err = api.show_port(&PortId::from("p")).await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.kind(), Some("PortNotFound"));
    assert!(matches!(
        err,
        Error::Rejected {
            operation: "show_port",
            status: 404,
            ..
        }
    ));
    // A definite answer is not retried.
    assert_eq!(neutron.count(), 1);
}

#[tokio::test]
async fn conflict_is_rejected() {
    let neutron = Stub::start(|_, _| {
        Reply::neutron_error(
            409,
            "IpAddressAlreadyAllocated",
            "IP address 10.0.0.5 already allocated",
        )
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    let err = api.create_port(&create_request()).await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.kind(), Some("IpAddressAlreadyAllocated"));
}

#[tokio::test]
async fn four_hundred_without_neutron_body_is_protocol() {
    let neutron = Stub::start(|_, _| Reply::raw(404, "404 Not Found\n\nThe resource could not be found.")).await;
    let api = client(noauth_config(&neutron.url));
    let err = api.delete_port(&PortId::from("p"), None).await.unwrap_err();
    assert!(
        !err.is_not_found(),
        "a bare 404 must not read as 'port is gone': {err:?}"
    );
    assert!(matches!(err, Error::Protocol { .. }));
}

#[tokio::test(start_paused = true)]
async fn server_error_is_ambiguous() {
    let neutron = Stub::start(|_, _| {
        Reply::neutron_error(500, "HTTPInternalServerError", "Request Failed: internal server error")
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.retries = 0;
    let err = client(config).show_port(&PortId::from("p")).await.unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn a_response_that_never_comes_is_ambiguous() {
    let neutron = Stub::start(|_, _| Reply::raw(200, "{}").after(Duration::from_secs(3600))).await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(5);
    config.retries = 0;
    let started = tokio::time::Instant::now();
    let err = client(config).show_port(&PortId::from("p")).await.unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(started.elapsed().as_secs(), 5);
}

#[tokio::test(start_paused = true)]
async fn connection_refused_is_unreachable() {
    let url = refused_url();
    let api = client(noauth_config(&url));
    let err = api.show_port(&PortId::from("p")).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unreachable {
                operation: "show_port",
                ..
            }
        ),
        "{err:?}"
    );
    let err = api.create_port(&create_request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unreachable {
                operation: "create_port",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn garbage_is_protocol() {
    let neutron = Stub::start(|seen, _| match seen.path.as_str() {
        "/v2.0/extensions" => Reply::raw(200, "<html>hello</html>"),
        "/v2.0/ports" => Reply::raw(200, r#"{"networks": []}"#),
        _ => Reply::json(
            200,
            json!({"port": {"id": "p", "network_id": "n", "project_id": "x",
            "fixed_ips": [{"subnet_id": "s", "ip_address": "not-an-ip"}]}}),
        ),
    })
    .await;
    let api = client(noauth_config(&neutron.url));
    assert!(matches!(api.list_extensions().await, Err(Error::Protocol { .. })));
    assert!(matches!(
        api.list_ports(&PortFilter::default()).await,
        Err(Error::Protocol { .. })
    ));
    let err = api.show_port(&PortId::from("p")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Protocol { reason, .. } if reason.contains("not-an-ip")),
        "{err:?}"
    );
}
