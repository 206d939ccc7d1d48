//! What most Nova handlers start from: the service's state, who asks (its
//! extraction answers 401 or 400 first) and the negotiated microversion, as
//! one extractor.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::microversion::Microversion;
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
