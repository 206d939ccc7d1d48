//! `If-Match` revisions and 400s for bad input.

use super::*;

case!(if_match_revision_412, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.80.0.0/24", json!({})).await;
    let p = api.port(json!({"network_id": net})).await;
    let id = s(&p["id"]);
    let rev = p["revision_number"].as_u64().expect("rev");
    let wrong = format!("revision_number={}", rev + 7);
    let (st, v) = api
        .call_h(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"name": "n"}})),
            &[("If-Match", &wrong)],
        )
        .await;
    assert_eq!(st, 412);
    assert_error(
        &v,
        "RevisionNumberConstraintFailed",
        &format!("Constrained to {}, but current revision is {rev}", rev + 7),
    );
    let right = format!("revision_number={rev}");
    let (st, v) = api
        .call_h(
            Method::PUT,
            &format!("/v2.0/ports/{id}"),
            Some(&json!({"port": {"name": "n"}})),
            &[("If-Match", &right)],
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let rev2 = v["port"]["revision_number"].as_u64().expect("rev");
    let (st, _) = api
        .call_h(
            Method::DELETE,
            &format!("/v2.0/ports/{id}"),
            None,
            &[("If-Match", &right)],
        )
        .await;
    assert_eq!(st, 412);
    let right2 = format!("revision_number={rev2}");
    let (st, _) = api
        .call_h(
            Method::DELETE,
            &format!("/v2.0/ports/{id}"),
            None,
            &[("If-Match", &right2)],
        )
        .await;
    assert_eq!(st, 204);
    api.cleanup(&net).await;
});

case!(id_in_post_and_bad_input_400, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.90.0.0/24", json!({})).await;
    let body = json!({"port": {"network_id": net, "id": uuid::Uuid::new_v4().to_string()}});
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&body)).await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Attribute 'id' not allowed in POST");
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": net, "foo": 1}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Unrecognized attribute(s) 'foo'");
    let (st, v) = api
        .raw(Method::POST, "/v2.0/ports", "{\"port\": {\"network_id\": ")
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Body contains invalid data");
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&json!({}))).await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Unable to find 'port' in request body");
    let (st, v) = api.call(Method::POST, "/v2.0/ports", Some(&json!({"port": {}}))).await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "HTTPBadRequest",
        "Failed to parse request. Required attribute 'network_id' not specified",
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": "nonexist"}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "HTTPBadRequest",
        "Invalid input for network_id. Reason: 'nonexist' is not a valid UUID.",
    );
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": net, "admin_state_up": "x"}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(
        &v,
        "InvalidInput",
        "Invalid input for operation: 'x' cannot be converted to boolean.",
    );
    let missing = uuid::Uuid::new_v4().to_string();
    let (st, v) = api
        .call(
            Method::POST,
            "/v2.0/ports",
            Some(&json!({"port": {"network_id": missing}})),
        )
        .await;
    assert_eq!(st, 404);
    assert_error(&v, "NetworkNotFound", &format!("Network {missing} could not be found."));
    let p = api.port(json!({"network_id": net})).await;
    let (st, v) = api
        .call(
            Method::PUT,
            &format!("/v2.0/ports/{}", s(&p["id"])),
            Some(&json!({"port": {"network_id": net}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Cannot update read-only attribute network_id");
    let (st, v) = api
        .call(
            Method::PUT,
            &format!("/v2.0/ports/{}", s(&p["id"])),
            Some(&json!({"port": {"bar": 1}})),
        )
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Unrecognized attribute(s) 'bar'");
    // Unknown routes.
    let (st, v) = api.call(Method::GET, "/v2.0/nonexistent", None).await;
    assert_eq!(st, 404);
    assert_error(&v, "HTTPNotFound", "The resource could not be found.");
    let (st, v) = api
        .call(Method::GET, &format!("/v2.0/floatingips/{missing}"), None)
        .await;
    assert_eq!(st, 404);
    assert_error(
        &v,
        "FloatingIPNotFound",
        &format!("Floating IP {missing} could not be found"),
    );
    let (st, v) = api.call(Method::GET, &format!("/v2.0/routers/{missing}"), None).await;
    assert_eq!(st, 404);
    assert_error(&v, "RouterNotFound", &format!("Router {missing} could not be found"));
    api.cleanup(&net).await;
});
