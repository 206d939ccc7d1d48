//! `If-Match` revisions and 400s for bad input.

use super::*;

impl Api {
    /// A call constrained to revision `rev` of what `path` names, by `If-Match`.
    async fn if_match(&self, method: Method, path: &str, body: Option<&Value>, rev: u64) -> (u16, Value) {
        let constraint = format!("revision_number={rev}");
        self.call_h(method, path, body, &[("If-Match", &constraint)]).await
    }
}

case!(if_match_revision_412, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.80.0.0/24", json!({})).await;
    let p = api.port(json!({"network_id": net})).await;
    let path = format!("/v2.0/ports/{}", s(&p["id"]));
    let rename = json!({"port": {"name": "n"}});
    let rev = p["revision_number"].as_u64().expect("rev");
    let (st, v) = api.if_match(Method::PUT, &path, Some(&rename), rev + 7).await;
    assert_eq!(st, 412);
    assert_error(
        &v,
        "RevisionNumberConstraintFailed",
        &format!("Constrained to {}, but current revision is {rev}", rev + 7),
    );
    let (st, v) = api.if_match(Method::PUT, &path, Some(&rename), rev).await;
    assert_eq!(st, 200, "{v}");
    let rev2 = v["port"]["revision_number"].as_u64().expect("rev");
    let (st, _) = api.if_match(Method::DELETE, &path, None, rev).await;
    assert_eq!(st, 412);
    let (st, _) = api.if_match(Method::DELETE, &path, None, rev2).await;
    assert_eq!(st, 204);
    api.cleanup(&net).await;
});

case!(id_in_post_and_bad_input_400, |api| {
    let net = api.network(json!({})).await;
    api.subnet(&net, "10.90.0.0/24", json!({})).await;
    let missing = uuid::Uuid::new_v4().to_string();
    let (st, v) = api
        .raw(Method::POST, "/v2.0/ports", "{\"port\": {\"network_id\": ")
        .await;
    assert_eq!(st, 400);
    assert_error(&v, "HTTPBadRequest", "Body contains invalid data");
    for (body, status, kind, message) in [
        (
            json!({"port": {"network_id": net, "id": uuid::Uuid::new_v4().to_string()}}),
            400,
            "HTTPBadRequest",
            "Attribute 'id' not allowed in POST".to_string(),
        ),
        (
            json!({"port": {"network_id": net, "foo": 1}}),
            400,
            "HTTPBadRequest",
            "Unrecognized attribute(s) 'foo'".to_string(),
        ),
        (
            json!({}),
            400,
            "HTTPBadRequest",
            "Unable to find 'port' in request body".to_string(),
        ),
        (
            json!({"port": {}}),
            400,
            "HTTPBadRequest",
            "Failed to parse request. Required attribute 'network_id' not specified".to_string(),
        ),
        (
            json!({"port": {"network_id": "nonexist"}}),
            400,
            "HTTPBadRequest",
            "Invalid input for network_id. Reason: 'nonexist' is not a valid UUID.".to_string(),
        ),
        (
            json!({"port": {"network_id": net, "admin_state_up": "x"}}),
            400,
            "InvalidInput",
            "Invalid input for operation: 'x' cannot be converted to boolean.".to_string(),
        ),
        (
            json!({"port": {"network_id": missing}}),
            404,
            "NetworkNotFound",
            format!("Network {missing} could not be found."),
        ),
    ] {
        api.refused(Method::POST, "/v2.0/ports", Some(&body), (status, kind, &message))
            .await;
    }
    let p = api.port(json!({"network_id": net})).await;
    let path = format!("/v2.0/ports/{}", s(&p["id"]));
    for (body, message) in [
        (
            json!({"network_id": net}),
            "Cannot update read-only attribute network_id",
        ),
        (json!({"bar": 1}), "Unrecognized attribute(s) 'bar'"),
    ] {
        let update = json!({"port": body});
        api.refused(Method::PUT, &path, Some(&update), (400, "HTTPBadRequest", message))
            .await;
    }
    // Unknown routes.
    for (path, kind, message) in [
        (
            "/v2.0/nonexistent".to_string(),
            "HTTPNotFound",
            "The resource could not be found.".to_string(),
        ),
        (
            format!("/v2.0/floatingips/{missing}"),
            "FloatingIPNotFound",
            format!("Floating IP {missing} could not be found"),
        ),
        (
            format!("/v2.0/routers/{missing}"),
            "RouterNotFound",
            format!("Router {missing} could not be found"),
        ),
    ] {
        api.refused(Method::GET, &path, None, (404, kind, &message)).await;
    }
    api.cleanup(&net).await;
});
