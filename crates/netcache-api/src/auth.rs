//! Who the caller is, with `auth.strategy = keystone`: the `X-Auth-Token` is
//! validated against Keystone as keystonemiddleware's auth_token does it
//! (`GET /v3/auth/tokens` with netcache's own service token), Keystone's
//! answers are cached for a short while (`cache.rs`), and the project, user
//! and roles come from the token alone — identity headers a client adds are
//! ignored. Keystone sits behind [`TokenValidator`] (HTTP here, a stub in
//! tests).
//!
//! The service-token convention is honoured as keystonemiddleware does with
//! `service_token_roles_required`: a service calling on a user's behalf sends
//! its own token as `X-Service-Token`; it must be valid and carry the `service`
//! role (else 401), and then the user's token is accepted even if it expired
//! within Keystone's `allow_expired` window, so a long operation a service
//! continues for a user does not fail half-way.

mod cache;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use backon::{ExponentialBuilder, Retryable};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use self::cache::{Key, Known, TokenCache};
use crate::{ApiError, AppState};

/// The caller a valid token names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub project_id: String,
    pub user_id: String,
    /// Role names, lower case (Keystone lists implied roles too).
    pub roles: Vec<String>,
}

/// A token Keystone found valid: whom it names, and until when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidToken {
    pub identity: Identity,
    /// The token's `expires_at`: no cached validation admits it later.
    pub expires_at: DateTime<Utc>,
}

/// Keystone's answer about a token: `Ok(None)` for an invalid or expired one
/// (with `allow_expired`, recently expired tokens are valid); `Err` when
/// Keystone could not be asked (the caller gets 503, not 401).
#[async_trait]
pub trait TokenValidator: Send + Sync + 'static {
    async fn validate(&self, token: &str, allow_expired: bool) -> Result<Option<ValidToken>, String>;
}

/// The role a service token must carry (keystonemiddleware's default
/// `service_token_roles`).
const SERVICE_TOKEN_ROLE: &str = "service";

/// Validations, cached by the token's SHA-256 ([`TokenCache`]).
pub struct KeystoneAuth {
    validator: Arc<dyn TokenValidator>,
    /// `Keystone uri="…"`, sent with every 401.
    www_authenticate: String,
    cache: Mutex<TokenCache>,
}

impl KeystoneAuth {
    pub fn new(validator: Arc<dyn TokenValidator>, auth_url: &str, ttl: Duration) -> Self {
        Self {
            validator,
            www_authenticate: format!("Keystone uri=\"{auth_url}\""),
            cache: Mutex::new(TokenCache::new(ttl)),
        }
    }

    async fn identify(&self, token: &str, allow_expired: bool) -> Result<Option<Identity>, String> {
        // The two kinds of validation are cached apart: an expired token is
        // valid only beside a service token.
        let key: Key = Sha256::new()
            .chain_update([u8::from(allow_expired)])
            .chain_update(token.as_bytes())
            .finalize()
            .into();
        let now = Instant::now();
        match self.cache.lock().expect("token cache").get(&key, now) {
            Some(Known::Valid(identity)) => {
                counted("cached");
                return Ok(Some(identity));
            }
            Some(Known::Invalid) => {
                counted("cached_invalid");
                return Ok(None);
            }
            None => {}
        }
        let validated = self.validator.validate(token, allow_expired).await;
        counted(match &validated {
            Ok(Some(_)) => "valid",
            Ok(None) => "invalid",
            Err(_) => "error",
        });
        // Keystone's failures are not cached: the next request asks again.
        let validated = validated?;
        // The cache time runs from Keystone's answer.
        let now = Instant::now();
        let mut cache = self.cache.lock().expect("token cache");
        let Some(ValidToken { identity, expires_at }) = validated else {
            cache.invalid(key, now);
            return Ok(None);
        };
        // Keystone's clock and ours agree on the time left, not on instants.
        let expires = (!allow_expired).then(|| now + (expires_at - Utc::now()).to_std().unwrap_or(Duration::ZERO));
        cache.valid(key, identity.clone(), expires, now);
        Ok(Some(identity))
    }

    fn unauthorized(&self) -> Response {
        let mut response = ApiError::Unauthorized.into_response();
        if let Ok(value) = self.www_authenticate.parse() {
            response
                .headers_mut()
                .insert(axum::http::header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// One token validation, by outcome: `valid`, `invalid` (Keystone does not
/// know it, or it expired), `error` (Keystone could not be asked), `cached`
/// (a valid token, from the cache), `cached_invalid` (refused from the cache:
/// Keystone refused it within `auth.cache_ttl`, or it is past its expiry).
fn counted(outcome: &'static str) {
    metrics::counter!("netcache_api_token_validations_total", "outcome" => outcome).increment(1);
}

/// Paths Nova serves without a token: the version documents.
fn is_public(path: &str) -> bool {
    matches!(path, "/" | "/v2.1" | "/v2.1/" | "/image" | "/image/")
}

/// The authentication layer: with Keystone, every request but the version
/// documents needs a valid token, and carries its [`Identity`] on.
pub async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(keystone) = state.config.keystone.clone() else {
        return next.run(request).await;
    };
    if is_public(request.uri().path()) {
        return next.run(request).await;
    }
    let (Some(token), service_token) = (
        token_header(&request, "x-auth-token"),
        token_header(&request, "x-service-token"),
    ) else {
        return keystone.unauthorized();
    };
    let allow_expired = match service_token {
        None => false,
        Some(service_token) => match keystone.identify(&service_token, false).await {
            Ok(Some(service)) if service.roles.iter().any(|r| r == SERVICE_TOKEN_ROLE) => true,
            Ok(_) => return keystone.unauthorized(),
            Err(e) => return identity_unavailable(&e),
        },
    };
    match keystone.identify(&token, allow_expired).await {
        Ok(Some(identity)) => {
            let mut request = request;
            request.extensions_mut().insert(identity);
            next.run(request).await
        }
        Ok(None) => keystone.unauthorized(),
        Err(e) => identity_unavailable(&e),
    }
}

/// A token header's value, if present and not blank.
fn token_header(request: &Request, name: &str) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

fn identity_unavailable(error: &str) -> Response {
    tracing::warn!(error, "Cannot validate a token with Keystone: {error}");
    ApiError::IdentityUnavailable.into_response()
}

/// Times a validation that did not reach Keystone is sent again (keystonemiddleware's
/// `http_request_max_retries` default).
const VALIDATION_RETRIES: usize = 3;

/// Keystone v3 over HTTP, as a service: netcache's own token (password auth,
/// project-scoped) validates users' tokens.
pub struct HttpKeystone {
    http: reqwest::Client,
    tokens_url: String,
    credentials: serde_json::Value,
    service_token: tokio::sync::Mutex<Option<String>>,
}

impl HttpKeystone {
    #[must_use]
    pub fn new(
        auth_url: &str,
        username: &str,
        password: &str,
        project_name: &str,
        user_domain_name: &str,
        project_domain_name: &str,
    ) -> Self {
        let base = auth_url.trim_end_matches('/');
        let base = base.strip_suffix("/v3").unwrap_or(base);
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("an HTTP client"),
            tokens_url: format!("{base}/v3/auth/tokens"),
            credentials: json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "name": username, "domain": {"name": user_domain_name}, "password": password}}},
                "scope": {"project": {"name": project_name, "domain": {"name": project_domain_name}}}
            }}),
            service_token: tokio::sync::Mutex::new(None),
        }
    }

    async fn service_token(&self, fresh: bool) -> Result<String, String> {
        let mut current = self.service_token.lock().await;
        if let Some(token) = current.as_ref().filter(|_| !fresh) {
            return Ok(token.clone());
        }
        let response = self
            .http
            .post(&self.tokens_url)
            .json(&self.credentials)
            .send()
            .await
            .map_err(|e| format!("Keystone: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "Keystone refused netcache's credentials: HTTP {}",
                response.status()
            ));
        }
        let token = response
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .ok_or("Keystone issued no X-Subject-Token")?
            .to_owned();
        *current = Some(token.clone());
        Ok(token)
    }
}

#[derive(Deserialize)]
struct Validated {
    token: ValidatedToken,
}

#[derive(Deserialize)]
struct ValidatedToken {
    user: Named,
    project: Option<Named>,
    #[serde(default)]
    roles: Vec<Role>,
    expires_at: DateTime<Utc>,
}

#[derive(Deserialize)]
struct Named {
    id: String,
}

#[derive(Deserialize)]
struct Role {
    name: String,
}

#[async_trait]
impl TokenValidator for HttpKeystone {
    async fn validate(&self, token: &str, allow_expired: bool) -> Result<Option<ValidToken>, String> {
        // A service token Keystone no longer takes is renewed once.
        for fresh in [false, true] {
            let service = self.service_token(fresh).await?;
            let send = || {
                self.http
                    .get(&self.tokens_url)
                    .query(&[("allow_expired", if allow_expired { "1" } else { "0" })])
                    .header("x-auth-token", &service)
                    .header("x-subject-token", token)
                    .send()
            };
            // As keystonemiddleware (`http_request_max_retries`): a validation
            // that never reached Keystone, or lost its connection (a pooled one
            // Keystone closed), is sent again; it changes nothing.
            let response = send
                .retry(
                    ExponentialBuilder::default()
                        .with_min_delay(Duration::from_millis(100))
                        .with_max_times(VALIDATION_RETRIES),
                )
                .when(|e: &reqwest::Error| e.is_connect() || e.is_request())
                .await
                .map_err(|e| format!("Keystone: {e}"))?;
            match response.status().as_u16() {
                200 => {
                    let body: Validated = response.json().await.map_err(|e| format!("Keystone: {e}"))?;
                    // An unscoped token names no project: it cannot act on compute.
                    let Some(project) = body.token.project else {
                        return Ok(None);
                    };
                    return Ok(Some(ValidToken {
                        identity: Identity {
                            project_id: project.id,
                            user_id: body.token.user.id,
                            roles: body.token.roles.into_iter().map(|r| r.name.to_lowercase()).collect(),
                        },
                        expires_at: body.token.expires_at,
                    }));
                }
                404 => return Ok(None),
                401 if !fresh => {}
                status => return Err(format!("Keystone answered HTTP {status} to a validation")),
            }
        }
        Err("Keystone refuses netcache's service token".into())
    }
}

#[cfg(test)]
mod tests;
