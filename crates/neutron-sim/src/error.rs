//! The one error type, rendered as Neutron's `{"NeutronError": {...}}` in one place.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A Neutron API error: HTTP status, Neutron exception name (`type`) and message.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// 400 with an explicit type (`HTTPBadRequest`, `InvalidInput`, `BadRequest`, ...).
    #[error("{1}")]
    BadRequest(&'static str, String),
    /// 403 `PolicyNotAuthorized`.
    #[error("{0}")]
    PolicyNotAuthorized(String),
    /// 404 (`PortNotFound`, `HTTPNotFound`, ...).
    #[error("{1}")]
    NotFound(&'static str, String),
    /// 409 (`IpAddressGenerationFailure`, `IpAddressAlreadyAllocated`, ...).
    #[error("{1}")]
    Conflict(&'static str, String),
    /// 412 on an `If-Match: revision_number=N` mismatch.
    #[error("Constrained to {expected}, but current revision is {current}")]
    RevisionMismatch { expected: u64, current: u64 },
    /// Any other status (injected 500/503).
    #[error("{2}")]
    Status(u16, &'static str, String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn bad(msg: impl Into<String>) -> Self {
        Error::BadRequest("HTTPBadRequest", msg.into())
    }
    pub fn invalid(msg: impl std::fmt::Display) -> Self {
        Error::BadRequest("InvalidInput", format!("Invalid input for operation: {msg}."))
    }
    #[must_use]
    pub fn not_found(kind: &'static str, id: &str) -> Self {
        let msg = match kind {
            "PortNotFound" => format!("Port {id} could not be found."),
            "NetworkNotFound" => format!("Network {id} could not be found."),
            "SubnetNotFound" => format!("Subnet {id} could not be found."),
            "FloatingIPNotFound" => format!("Floating IP {id} could not be found"),
            "RouterNotFound" => format!("Router {id} could not be found"),
            "TagNotFound" => format!("Tag {id} could not be found."),
            "SecurityGroupNotFound" => format!("Security group {id} does not exist"),
            "SecurityGroupRuleNotFound" => format!("Security group rule {id} does not exist"),
            _ => "The resource could not be found.".to_string(),
        };
        Error::NotFound(kind, msg)
    }
    #[must_use]
    pub fn route_not_found() -> Self {
        Error::NotFound("HTTPNotFound", "The resource could not be found.".into())
    }
    /// An injected server error (500, 503, or any status).
    #[must_use]
    pub fn injected(status: u16) -> Self {
        match status {
            503 => Error::Status(
                503,
                "HTTPServiceUnavailable",
                "The server is currently unavailable. Please try again at a later time.".into(),
            ),
            _ => Error::Status(
                status,
                "HTTPInternalServerError",
                "Request Failed: internal server error while processing your request.".into(),
            ),
        }
    }
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(..) => StatusCode::BAD_REQUEST,
            Error::PolicyNotAuthorized(_) => StatusCode::FORBIDDEN,
            Error::NotFound(..) => StatusCode::NOT_FOUND,
            Error::Conflict(..) => StatusCode::CONFLICT,
            Error::RevisionMismatch { .. } => StatusCode::PRECONDITION_FAILED,
            Error::Status(s, ..) => StatusCode::from_u16(*s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        }
    }
    /// Neutron's exception name, the `type` of the error body.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::BadRequest(k, _) | Error::NotFound(k, _) | Error::Conflict(k, _) | Error::Status(_, k, _) => k,
            Error::RevisionMismatch { .. } => "RevisionNumberConstraintFailed",
            Error::PolicyNotAuthorized(_) => "PolicyNotAuthorized",
        }
    }
    /// Outcome label for statistics.
    #[must_use]
    pub fn metric_label(&self) -> &'static str {
        if self.status().is_server_error() {
            "error_5xx"
        } else {
            "error_4xx"
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let body = json!({"NeutronError": {"type": self.kind(), "message": self.to_string(), "detail": ""}});
        (self.status(), axum::Json(body)).into_response()
    }
}
