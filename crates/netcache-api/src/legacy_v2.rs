//! Nova's `/v2` endpoint: the v2.1 API in its legacy v2.0 form. Nova serves it
//! with the v2.1 code behind a compatibility wrapper; netcache does the same by
//! handing `/v2/…` to the `/v2.1/…` routes, marked [`LegacyV2`]. Such a request
//! has no microversion: its version headers are ignored and none are answered.

use axum::extract::Request;

use crate::raw_path::with_path;

/// Marks a request that came in on `/v2`.
#[derive(Clone, Copy, Debug)]
pub struct LegacyV2;

/// Rewrites `/v2` and `/v2/…` to the v2.1 path before routing.
pub fn rewrite(mut request: Request) -> Request {
    let path = request.uri().path();
    let Some(rest) = path
        .strip_prefix("/v2")
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    else {
        return request;
    };
    if let Some(uri) = with_path(request.uri(), &format!("/v2.1{rest}")) {
        *request.uri_mut() = uri;
        request.extensions_mut().insert(LegacyV2);
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_v2_prefix_is_rewritten() {
        for (from, to, legacy) in [
            ("/v2", "/v2.1", true),
            ("/v2/", "/v2.1/", true),
            ("/v2/servers/detail?limit=1", "/v2.1/servers/detail?limit=1", true),
            ("/v2.1/servers", "/v2.1/servers", false),
            ("/v20/servers", "/v20/servers", false),
            ("/", "/", false),
        ] {
            let request = rewrite(Request::builder().uri(from).body(axum::body::Body::empty()).unwrap());
            assert_eq!(request.uri().to_string(), to, "{from}");
            assert_eq!(request.extensions().get::<LegacyV2>().is_some(), legacy, "{from}");
        }
    }
}
