//! Compute API microversions: the version a request asks for
//! (`OpenStack-API-Version: compute X.Y`, or the older
//! `X-OpenStack-Nova-API-Version: X.Y`), negotiated against the range this API
//! implements, and echoed on the answer. No header means the minimum, `latest`
//! the maximum; a malformed one is a 400 and one outside the range a 406, as in Nova.

use std::convert::Infallible;
use std::fmt;

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::ApiError;
use crate::legacy_v2::LegacyV2;

/// A `2.Y` microversion (the compute API has only ever had major version 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Microversion(u16);

impl Microversion {
    /// The oldest this API serves.
    pub const MIN: Self = Self(1);
    /// The newest, Nova 34's: every change Nova made up to it to what netcache
    /// serves is honoured.
    pub const MAX: Self = Self(104);

    /// `2.minor`.
    #[must_use]
    pub const fn new(minor: u16) -> Self {
        Self(minor)
    }

    /// Whether the request asked for `2.minor` or later (Nova's
    /// `api_version_request.is_supported(req, '2.minor')`).
    #[must_use]
    pub const fn at_least(self, minor: u16) -> bool {
        self.0 >= minor
    }

    /// Nova's answer to a method it serves only up to `2.last` (`@wsgi.api_version("2.1", "2.last")`)
    /// asked for at a later version: a 404 that says nothing of why, checked
    /// before the request is read.
    pub fn served_until(self, last: u16) -> Result<(), ApiError> {
        if self.0 > last {
            return Err(ApiError::NotFound("The resource could not be found.".into()));
        }
        Ok(())
    }

    /// Nova's answer to a method it serves only from `2.first` asked for at an
    /// earlier version: the same bare 404.
    pub fn served_from(self, first: u16) -> Result<(), ApiError> {
        if self.0 < first {
            return Err(ApiError::NotFound("The resource could not be found.".into()));
        }
        Ok(())
    }

    /// `"X.Y"` (Nova's form: no leading zeros) as `(X, Y)`, `"latest"` as the
    /// maximum; `None` for anything else.
    fn parse(text: &str) -> Option<(u16, u16)> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("latest") {
            return Some((2, Self::MAX.0));
        }
        let (major, minor) = text.split_once('.')?;
        let number = |s: &str| {
            let canonical = s == "0" || (!s.starts_with('0') && !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
            canonical.then(|| s.parse::<u16>().ok()).flatten()
        };
        Some((number(major).filter(|m| *m > 0)?, number(minor)?))
    }

    /// The version the request asks for; `Err` is the refusal to answer with.
    fn requested(headers: &HeaderMap) -> Result<Self, ApiError> {
        let compute = headers
            .get_all("openstack-api-version")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .find_map(|entry| {
                let (service, version) = entry.trim().split_once(char::is_whitespace)?;
                service.eq_ignore_ascii_case("compute").then(|| version.to_owned())
            });
        let legacy = || {
            headers
                .get("x-openstack-nova-api-version")
                .map(|v| v.to_str().unwrap_or_default().to_owned())
        };
        let Some(text) = compute.or_else(legacy) else {
            return Ok(Self::MIN);
        };
        let (major, minor) = Self::parse(&text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "API Version String {text} is of invalid format. Must be of format MajorNum.MinorNum."
            ))
        })?;
        let version = Self(minor);
        if major != 2 || !(Self::MIN..=Self::MAX).contains(&version) {
            return Err(ApiError::NotAcceptable(format!(
                "Version {major}.{minor} is not supported by the API. Minimum is {} and maximum is {}.",
                Self::MIN,
                Self::MAX
            )));
        }
        Ok(version)
    }
}

impl fmt::Display for Microversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "2.{}", self.0)
    }
}

/// Negotiates the request's microversion (kept in its extensions for the
/// handlers) and stamps the answer with it, as Nova does.
pub async fn negotiate(mut request: Request, next: Next) -> Response {
    // The version documents and the image subset are not microversioned.
    let path = request.uri().path();
    let legacy = request.extensions().get::<LegacyV2>().is_some();
    if legacy || (path != "/v2.1" && !path.starts_with("/v2.1/")) {
        return next.run(request).await;
    }
    let (version, mut response) = match Microversion::requested(request.headers()) {
        Ok(version) => {
            request.extensions_mut().insert(version);
            (version, next.run(request).await)
        }
        Err(refusal) => (Microversion::MIN, refusal.into_response()),
    };
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("compute {version}")) {
        headers.insert("openstack-api-version", v);
    }
    if let Ok(v) = HeaderValue::from_str(&version.to_string()) {
        headers.insert("x-openstack-nova-api-version", v);
    }
    headers.insert(
        "vary",
        HeaderValue::from_static("OpenStack-API-Version, X-OpenStack-Nova-API-Version"),
    );
    response
}

/// The negotiated version, for handlers; 2.1 where none was negotiated (the
/// legacy `/v2` API).
impl<S: Send + Sync> FromRequestParts<S> for Microversion {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().copied().unwrap_or(Self::MIN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_is_served_until_its_last_version() {
        assert!(Microversion::new(43).served_until(43).is_ok());
        match Microversion::new(44).served_until(43) {
            Err(ApiError::NotFound(message)) => assert_eq!(message, "The resource could not be found."),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn versions_parse_as_nova_reads_them() {
        for (text, expected) in [
            ("2.1", Some((2, 1))),
            (" 2.10 ", Some((2, 10))),
            ("2.0", Some((2, 0))),
            ("3.1", Some((3, 1))),
            ("latest", Some((2, Microversion::MAX.0))),
            ("LATEST", Some((2, Microversion::MAX.0))),
            ("2.01", None),
            ("0.1", None),
            ("2", None),
            ("2.", None),
            ("2.a", None),
            ("2.-1", None),
            ("", None),
        ] {
            assert_eq!(Microversion::parse(text), expected, "{text:?}");
        }
    }
}
