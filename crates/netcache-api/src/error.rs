//! The one place where errors become HTTP responses, in Nova's format:
//! `{"itemNotFound": {"code": 404, "message": "…"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use netcache_compute::Error as ComputeError;
use serde_json::json;
use tracing::error;

pub type ApiResult<T> = Result<T, ApiError>;

/// The answer while the database is down, unreachable or full.
const DATABASE_UNAVAILABLE: &str = "The service's database is unavailable; retry later.";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
    /// A microversion outside the range this API serves.
    #[error("{0}")]
    NotAcceptable(String),
    /// An API Nova removed and still answers 410 (webob's `HTTPGone` words).
    #[error("This resource is no longer available. No forwarding address is given.")]
    Gone,
    /// What Nova's fake virt driver cannot do (Nova's "Feature not supported").
    #[error("{0}")]
    NotImplemented(String),
    /// No token, or one Keystone does not know (keystonemiddleware's wording).
    #[error("The request you have made requires authentication.")]
    Unauthorized,
    #[error("The identity service cannot be reached to check the token; retry later.")]
    IdentityUnavailable,
    /// A request body over the server's limit (oslo.middleware's sizelimit).
    #[error("Request is too large. Larger than max_request_body_size ({limit}).")]
    RequestTooLarge { limit: usize },
    /// A request line over the server's limit (eventlet's, which Nova runs on).
    #[error("Request URI too long: more than {limit} bytes.")]
    UriTooLong { limit: usize },
    /// A header line, or the number of headers, over the server's limit.
    #[error("Request header fields too large: {what}.")]
    HeadersTooLarge { what: String },
    #[error(transparent)]
    Compute(#[from] ComputeError),
}

impl ApiError {
    fn status_and_message(&self) -> (StatusCode, String) {
        use ComputeError as C;
        if let Self::Compute(e) = self
            && e.is_database_unavailable()
        {
            // The database's own words (its host, its errors) are for the log alone.
            return (StatusCode::SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE.to_owned());
        }
        let message = self.to_string();
        let status = match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            Self::Gone => StatusCode::GONE,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::IdentityUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::RequestTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UriTooLong { .. } => StatusCode::URI_TOO_LONG,
            Self::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Compute(e) => match e {
                C::ServerNotFound(_)
                | C::InterfaceNotFound { .. }
                | C::KeypairNotFound { .. }
                | C::ServerGroupNotFound(_)
                | C::MetadataItemNotFound
                | C::TagNotFound { .. }
                | C::SecurityGroupNotFoundForProject { .. }
                | C::SecurityGroupMissing(_)
                | C::SecurityGroupRuleMissing(_)
                | C::NoPortsForSecurityGroups(_)
                | C::SecurityGroupNotAssociated { .. }
                | C::FlavorNotFound(_)
                | C::FlavorAccessNotFound { .. }
                | C::FlavorExtraSpecNotFound { .. }
                | C::ServiceNotFound(_)
                | C::HostNotMapped(_)
                | C::ComputeHostNotFound(_)
                | C::FloatingIpNotFound(_)
                | C::FloatingIpNotFoundForAddress(_)
                | C::FloatingIpAddressNotFound
                | C::FloatingIpPoolNotFound
                | C::NoMoreFloatingIps(_) => StatusCode::NOT_FOUND,
                C::Aggregate(refusal) => aggregate_status(refusal),
                C::NetworkNotFound(_)
                | C::PortNotFound(_)
                | C::PortNotUsable { .. }
                | C::NoNetworkAvailable
                | C::UnableToAutoAllocateNetwork(_)
                | C::NoMoreFixedIps(_)
                | C::FixedIpAlreadyInUse(_)
                | C::InvalidInput(_)
                | C::FixedIpNotFound { .. }
                | C::InvalidKeypair(_)
                | C::InvalidKeyName
                | C::BootGroupNotFound(_)
                | C::RebuildImageNotFound
                | C::BadQuotaLimit(_)
                | C::SecurityGroupNotFound(_)
                | C::SecurityGroupCannotBeApplied(_)
                | C::SecurityGroupInvalid(_)
                | C::BootFlavorNotFound(_)
                | C::FlavorMarkerNotFound(_)
                | C::ServiceNotUpdatable(_)
                | C::ServiceUpdateRefused(_)
                | C::FloatingIpRefused(_)
                | C::FixedAddressRefused(_) => StatusCode::BAD_REQUEST,
                // Nova answers a quota error 403 (a boot, key pairs, the metadata calls).
                C::ExternalNetworkAttachForbidden(_)
                | C::OverQuota(_)
                | C::SecurityGroupLimitExceeded(_)
                | C::FloatingIpLimitExceeded(_) => StatusCode::FORBIDDEN,
                // Nova's os-interface answers these otherwise than a boot does.
                C::OnAttach(refusal) => match refusal.as_ref() {
                    C::FixedIpAlreadyInUse(_) => StatusCode::CONFLICT,
                    _ => StatusCode::NOT_FOUND,
                },
                C::PortInUse(_)
                | C::NetworkAmbiguous
                | C::InvalidState { .. }
                | C::KeypairExists(_)
                | C::Locked(_)
                | C::SecurityGroupAmbiguous(_)
                | C::FlavorExists(_)
                | C::FlavorIdExists(_)
                | C::FlavorIsPublic
                | C::FlavorAccessExists { .. }
                | C::ServiceHostsInstances
                | C::PinnedZoneChange
                | C::PinnedZoneNotCurrent { .. }
                | C::FloatingIpMultipleFound(_)
                | C::FloatingIpPoolAmbiguous(_)
                | C::FloatingIpNotAssociated { .. } => StatusCode::CONFLICT,
                C::OperationInFlight { .. } | C::DeleteRequested(_) | C::NeverLaunched { .. } | C::NotReady(_) => {
                    StatusCode::CONFLICT
                }
                C::Overloaded | C::Interrupted(_) | C::NotTakingWork | C::NeutronNotReady(_) => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                C::Neutron(n) => neutron_status(n),
                C::Store(s) if s.is_conflict() => StatusCode::CONFLICT,
                // The create's outcome stayed unknown: Neutron did not answer in time.
                C::CreateAbandoned { .. } => StatusCode::GATEWAY_TIMEOUT,
                C::VifPlugTimeout { .. }
                | C::SpawnFailed { .. }
                | C::NoValidHost(_)
                | C::KeyGeneration(_)
                | C::Store(_)
                | C::OperationFailed { .. }
                | C::StepPanicked(_)
                | C::Crashed(_)
                | C::LeaseLost(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
        };
        (status, message)
    }
}

/// Nova's status of each aggregate refusal: a zone rule is 409 on
/// `add_host`/`remove_host` and 400 on an update, as Nova's handlers catch it.
fn aggregate_status(refusal: &netcache_domain::aggregate::Refusal) -> StatusCode {
    use netcache_domain::aggregate::{Refusal as R, ZoneAction};
    match refusal {
        R::NotFound(_) | R::HostAbsent { .. } => StatusCode::NOT_FOUND,
        R::NameExists(_) | R::HostExists { .. } => StatusCode::CONFLICT,
        R::Zone {
            action: ZoneAction::AddHost | ZoneAction::RemoveHost,
            ..
        } => StatusCode::CONFLICT,
        R::NotEmpty(_) | R::Zone { .. } => StatusCode::BAD_REQUEST,
    }
}

/// What a Neutron failure means to the compute API's caller: Neutron's own
/// refusals keep their meaning, an unreachable Neutron is 503, a silent one 504.
fn neutron_status(error: &netcache_neutron::Error) -> StatusCode {
    use netcache_neutron::Error as N;
    match error {
        N::Rejected { status, .. } => match status {
            400 => StatusCode::BAD_REQUEST,
            403 => StatusCode::FORBIDDEN,
            404 => StatusCode::NOT_FOUND,
            409 | 412 => StatusCode::CONFLICT,
            413 => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_GATEWAY,
        },
        N::Unreachable { .. } | N::Auth(_) => StatusCode::SERVICE_UNAVAILABLE,
        N::Ambiguous { .. } => StatusCode::GATEWAY_TIMEOUT,
        N::Protocol { .. } => StatusCode::BAD_GATEWAY,
    }
}

/// Nova's name for the error body of each status.
fn nova_error_key(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "badRequest",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "itemNotFound",
        405 => "badMethod",
        409 => "conflictingRequest",
        413 => "overLimit",
        // Nova's server (eventlet) refuses these itself, with no body of Nova's;
        // netcache answers them as its other 4xx.
        414 | 431 => "badRequest",
        415 => "badMediaType",
        501 => "notImplemented",
        503 => "serviceUnavailable",
        _ => "computeFault",
    }
}

fn nova_error_body(status: StatusCode, message: &str) -> serde_json::Value {
    json!({ nova_error_key(status): { "code": status.as_u16(), "message": message } })
}

/// A Nova-format error response.
#[must_use]
pub fn nova_error(status: StatusCode, message: &str) -> Response {
    (status, Json(nova_error_body(status, message))).into_response()
}

impl ApiError {
    /// The answer's status and JSON body, for a server that writes it itself
    /// (in place of hyper's own answer to a head it could not read).
    #[must_use]
    pub fn status_and_body(&self) -> (StatusCode, Vec<u8>) {
        let (status, message) = self.status_and_message();
        (status, nova_error_body(status, &message).to_string().into_bytes())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = self.status_and_message();
        if status.is_server_error() {
            // The whole error, which the answer may not give (the database's).
            error!(error = %self, "Request failed: {self}");
        }
        let mut response = if status == StatusCode::UNAUTHORIZED {
            // Refused before Nova's code runs, by keystonemiddleware, in its form.
            let body = json!({"error": {"code": 401, "title": "Unauthorized", "message": message}});
            (status, Json(body)).into_response()
        } else {
            nova_error(status, &message)
        };
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("5"),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;
    use netcache_store::{SqliteStore, Store};

    use super::*;

    /// A database that is down answers 503 with `Retry-After` in Nova's form,
    /// and its own error text (sqlx's, the database's) stays in the log.
    #[tokio::test]
    async fn an_unavailable_database_is_a_503_to_retry_without_its_internals() {
        let store = SqliteStore::open("sqlite::memory:").await.unwrap();
        store.pool().close().await;
        let error = store
            .server(netcache_domain::ServerId(uuid::Uuid::new_v4()))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("closed"), "{error}");

        let response = ApiError::from(ComputeError::from(error)).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[axum::http::header::RETRY_AFTER], "5");
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"serviceUnavailable": {"code": 503, "message": DATABASE_UNAVAILABLE}})
        );
    }
}
