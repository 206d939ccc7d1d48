//! Path segments kept as the client wrote them when they do not decode. A
//! segment whose percent-escapes are not UTF-8 (`/servers/%ff`) would fail
//! axum's path extraction with a plain-text 400; Nova looks such an id up like
//! any other and answers its 404 (`Instance %ff could not be found.`). Escaping
//! the segment's `%`s before routing hands the handlers the text as written.

use axum::extract::Request;
use axum::http::Uri;
use axum::http::uri::PathAndQuery;
use percent_encoding::percent_decode_str;

/// Escapes the `%`s of each segment whose escapes do not decode to UTF-8.
pub fn keep_undecodable(mut request: Request) -> Request {
    let decodes = |text: &str| percent_decode_str(text).decode_utf8().is_ok();
    let path = request.uri().path();
    if decodes(path) {
        return request;
    }
    let kept: Vec<String> = path
        .split('/')
        .map(|segment| {
            if decodes(segment) {
                segment.to_owned()
            } else {
                segment.replace('%', "%25")
            }
        })
        .collect();
    if let Some(uri) = with_path(request.uri(), &kept.join("/")) {
        *request.uri_mut() = uri;
    }
    request
}

/// `uri` with its path replaced (its query kept); `None` if that is no URI.
pub fn with_path(uri: &Uri, path: &str) -> Option<Uri> {
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let path_and_query = format!("{path}{query}").parse::<PathAndQuery>().ok()?;
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_segments_that_do_not_decode_are_escaped() {
        for (from, to) in [
            ("/v2.1/servers/%ff", "/v2.1/servers/%25ff"),
            ("/v2.1/servers/%ff/ips?x=%ff", "/v2.1/servers/%25ff/ips?x=%ff"),
            ("/v2.1/servers/a%20b", "/v2.1/servers/a%20b"),
            ("/v2.1/os-keypairs/%C3%A9", "/v2.1/os-keypairs/%C3%A9"),
        ] {
            let request = Request::builder().uri(from).body(axum::body::Body::empty()).unwrap();
            assert_eq!(keep_undecodable(request).uri().to_string(), to, "{from}");
        }
    }
}
