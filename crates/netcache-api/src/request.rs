//! What most Nova handlers start from: the service's state, who asks (its
//! extraction answers 401 or 400 first) and the negotiated microversion, as
//! one extractor.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::microversion::Microversion;
use crate::query_params::QueryParams;
use crate::{ApiError, AppState, Caller};

pub struct NovaRequest {
    pub state: AppState,
    pub caller: Caller,
    pub version: Microversion,
}

impl FromRequestParts<AppState> for NovaRequest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, state).await?;
        let Ok(version) = Microversion::from_request_parts(parts, state).await;
        Ok(Self {
            state: state.clone(),
            caller,
            version,
        })
    }
}

/// A read of one resource whose query schema takes any parameter until 2.101
/// and none from 2.102: the [`NovaRequest`] and its path's parameters (the
/// resource's id, or ids), the query checked; extracted in the order the
/// handlers took them apart (who asks, the path, then the query).
pub struct NovaRead<P>(pub NovaRequest, pub P);

impl<P> FromRequestParts<AppState> for NovaRead<P>
where
    P: DeserializeOwned + Send,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let request = NovaRequest::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Path(id) = Path::<P>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        QueryParams::none_from_2_102(request.version, Query::try_from_uri(&parts.uri))
            .map_err(IntoResponse::into_response)?;
        Ok(Self(request, id))
    }
}
