//! The operator's view of each request: one access-log line (target
//! `netcache::access`) with its method, route, status, latency and request id,
//! and the Prometheus series of requests and their latency. Routes are the
//! router's templates (`/v2.1/servers/{server_id}`), never raw paths, and
//! methods outside HTTP's own are `other`, so the series stay few whatever
//! clients send.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

use crate::RequestId;

/// The route of a request no route matched (Nova's 404 fallback).
const UNMATCHED: &str = "unmatched";

/// The access layer: it runs inside the one that gives each request its id,
/// and around authentication, so a 401 is logged and counted too.
pub(crate) async fn observe(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_owned();
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map(|id| id.0.clone())
        .unwrap_or_default();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    let labels = [
        ("method", method.to_owned()),
        ("route", route.clone()),
        ("status", status.to_string()),
    ];
    metrics::counter!("netcache_api_requests_total", &labels).increment(1);
    metrics::histogram!("netcache_api_request_duration_seconds", &labels).record(elapsed.as_secs_f64());
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    tracing::info!(
        target: "netcache::access",
        method, route, status, latency_ms, request_id,
        "{method} {route} {status} {latency_ms:.1} ms {request_id}"
    );
    response
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::middleware;
    use axum::routing::get;
    use netcache_testenv::log::CapturedLog;
    use tower::ServiceExt;

    use super::*;

    async fn send(app: &Router, method: &str, path: &str) -> Response {
        let request = Request::builder().method(method).uri(path).body(Body::empty()).unwrap();
        app.clone().oneshot(request).await.unwrap()
    }

    /// Each request is one access-log line and one count, by its route's
    /// template (not its path), method and status; the request id in the line
    /// is the one its answer carries.
    #[tokio::test]
    async fn each_request_is_logged_and_counted_by_route_template() {
        crate::metrics::handle();
        let log = CapturedLog::start();
        let app = Router::new()
            .route("/v2.1/access-test/{thing_id}", get(|| async { StatusCode::NO_CONTENT }))
            .layer(middleware::from_fn(observe))
            .layer(middleware::from_fn(crate::stamp_response));

        let answer = send(&app, "GET", "/v2.1/access-test/5f0c6a4e").await;
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
        let request_id = answer.headers()["x-openstack-request-id"].to_str().unwrap().to_owned();
        assert!(request_id.starts_with("req-"), "{request_id}");
        send(&app, "GET", "/v2.1/access-test/another").await;
        let unmatched = send(&app, "BREW", "/v2.1/no-such-thing").await;
        assert_eq!(unmatched.status(), StatusCode::NOT_FOUND);

        let logged = log.text();
        let line = logged
            .lines()
            .find(|l| l.contains(&request_id))
            .unwrap_or_else(|| panic!("no access line for {request_id}:\n{logged}"));
        for part in [
            "netcache::access",
            "method=\"GET\"",
            "route=\"/v2.1/access-test/{thing_id}\"",
            "status=204",
            "latency_ms=",
        ] {
            assert!(line.contains(part), "{part} missing in {line}");
        }
        assert!(!logged.contains("5f0c6a4e"), "the raw path is not logged:\n{logged}");

        let text = crate::metrics::handle().render();
        for series in [
            r#"netcache_api_requests_total{method="GET",route="/v2.1/access-test/{thing_id}",status="204"} 2"#,
            r#"netcache_api_request_duration_seconds_bucket{method="GET",route="/v2.1/access-test/{thing_id}",status="204",le="+Inf"} 2"#,
            r#"netcache_api_requests_total{method="other",route="unmatched",status="404"} "#,
        ] {
            assert!(text.contains(series), "missing {series} in\n{text}");
        }
        assert!(!text.contains("5f0c6a4e"), "no series per path:\n{text}");
    }
}
