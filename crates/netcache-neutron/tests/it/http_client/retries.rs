//! Retries: idempotent calls only; a create is sent once.

use super::*;

#[tokio::test(start_paused = true)]
async fn get_is_retried_on_5xx_until_it_succeeds() {
    let neutron = Stub::start(|_, index| match index {
        0 => Reply::neutron_error(500, "HTTPInternalServerError", "boom"),
        1 => Reply::raw(503, "Service Unavailable"),
        _ => Reply::json(200, json!({"port": port_json("p", "d")})),
    })
    .await;
    let port = client(noauth_config(&neutron.url))
        .show_port(&PortId::from("p"))
        .await
        .unwrap();
    assert_eq!(port.id.as_str(), "p");
    assert_eq!(neutron.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn get_gives_up_after_the_configured_retries() {
    let neutron = Stub::start(|_, _| Reply::raw(503, "Service Unavailable")).await;
    let mut config = noauth_config(&neutron.url);
    config.retries = 2;
    let err = client(config).list_ports(&PortFilter::default()).await.unwrap_err();
    assert!(err.is_ambiguous());
    assert_eq!(neutron.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn get_is_retried_after_a_timeout() {
    let neutron = Stub::start(|_, index| {
        let reply = Reply::raw(200, EXTENSIONS);
        if index == 0 {
            reply.after(Duration::from_secs(3600))
        } else {
            reply
        }
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(5);
    client(config).list_extensions().await.unwrap();
    assert_eq!(neutron.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn create_port_is_sent_once_on_500() {
    let neutron = Stub::start(|_, _| Reply::neutron_error(500, "HTTPInternalServerError", "boom")).await;
    let err = client(noauth_config(&neutron.url))
        .create_port(&create_request())
        .await
        .unwrap_err();
    assert!(err.is_ambiguous());
    // tidy: allow sleep — ten minutes pass on the paused clock: no retry is sent in them
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(neutron.count(), 1);
}

/// Invariant 3.
#[tokio::test(start_paused = true)]
async fn create_port_is_sent_once_on_timeout() {
    let neutron =
        Stub::start(|_, _| Reply::json(201, json!({"port": port_json("p", "dev-1")})).after(Duration::from_secs(120)))
            .await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(30);
    let err = client(config).create_port(&create_request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Ambiguous {
                operation: "create_port",
                ..
            }
        ),
        "{err:?}"
    );
    // tidy: allow sleep — ten minutes pass on the paused clock: no retry is sent in them
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(neutron.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_412_after_an_ambiguous_put_is_ambiguous() {
    // The first PUT applies (revision 5 → 6) but its answer is lost; the retry's
    // If-Match then fails although the update did happen.
    let neutron = Stub::start(|_, index| match index {
        0 => Reply::json(200, json!({"port": port_json("p", "dev-1")})).after(Duration::from_secs(3600)),
        _ => Reply::neutron_error(
            412,
            "RevisionNumberConstraintFailed",
            "Constrained to 5, but current revision is 6",
        ),
    })
    .await;
    let mut config = noauth_config(&neutron.url);
    config.timeout = Duration::from_secs(5);
    let err = client(config)
        .update_port(
            &PortId::from("p"),
            &PortUpdate::bind("dev-1", "compute:nova", "host1"),
            Some(5),
        )
        .await
        .unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(neutron.count(), 2);
}
