//! Authentication: no auth (static endpoint), or Keystone v3 tokens with the
//! Neutron endpoint taken from the service catalog.
//!
//! Keystone sits behind [`TokenSource`]; [`TokenCache`] reuses a token until shortly
//! before it expires, measured on tokio's clock (so paused-time tests can expire it).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex;
use tokio::time::Instant;
use url::Url;

use crate::error::{outcome_label, snippet};
use crate::{Error, Result};

/// How netcache authenticates to Neutron.
#[derive(Clone)]
pub enum Auth {
    /// A static Neutron URL (e.g. `http://127.0.0.1:9696`), no token: Neutron runs
    /// with `auth_strategy = noauth`. `headers` are sent on every call, e.g.
    /// `X-Project-Id` and `X-Roles` for a noauth setup that builds its context from them.
    None { endpoint: Url, headers: http::HeaderMap },
    /// Keystone v3 password auth, project-scoped.
    Password {
        auth_url: Url,
        username: String,
        password: String,
        user_domain_name: String,
        project_name: String,
        project_domain_name: String,
    },
    /// Keystone v3 application credential (already scoped).
    ApplicationCredential { auth_url: Url, id: String, secret: String },
    /// Any other source of tokens and endpoints.
    Custom(Arc<dyn TokenSource>),
}

impl Auth {
    /// No auth, no extra headers.
    #[must_use]
    pub fn none(endpoint: Url) -> Self {
        Self::None {
            endpoint,
            headers: http::HeaderMap::new(),
        }
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None { endpoint, headers } => f
                .debug_struct("None")
                .field("endpoint", &endpoint.as_str())
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
            Self::Password {
                auth_url,
                username,
                user_domain_name,
                project_name,
                project_domain_name,
                ..
            } => f
                .debug_struct("Password")
                .field("auth_url", &auth_url.as_str())
                .field("username", username)
                .field("password", &"<redacted>")
                .field("user_domain_name", user_domain_name)
                .field("project_name", project_name)
                .field("project_domain_name", project_domain_name)
                .finish(),
            Self::ApplicationCredential { auth_url, id, .. } => f
                .debug_struct("ApplicationCredential")
                .field("auth_url", &auth_url.as_str())
                .field("id", id)
                .field("secret", &"<redacted>")
                .finish(),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// Which catalog endpoint of the `network` service to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Interface {
    #[default]
    Public,
    Internal,
    Admin,
}

impl Interface {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Internal => "internal",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Interface {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim_end_matches("URL") {
            "public" => Ok(Self::Public),
            "internal" => Ok(Self::Internal),
            "admin" => Ok(Self::Admin),
            _ => Err(format!(
                "unknown endpoint interface {s:?}: expected public, internal or admin"
            )),
        }
    }
}

/// A token and the Neutron endpoint it is good for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    /// Neutron's endpoint (with or without `/v2.0`).
    pub endpoint: Url,
    /// How long the token is valid from now; `None` = until Neutron says 401.
    pub lifetime: Option<Duration>,
}

/// Issues tokens (Keystone, or a fake in tests).
#[async_trait]
pub trait TokenSource: Send + Sync + 'static {
    /// A new token. Errors are [`Error::Auth`].
    async fn issue(&self) -> Result<Token>;
}

/// Reuses one token across calls; a single caller refreshes it at a time.
pub(crate) struct TokenCache {
    source: Arc<dyn TokenSource>,
    margin: Duration,
    current: Mutex<Option<Cached>>,
}

#[derive(Clone)]
struct Cached {
    token: Token,
    /// Refresh at or after this instant.
    refresh_at: Option<Instant>,
}

impl TokenCache {
    pub(crate) fn new(source: Arc<dyn TokenSource>, margin: Duration) -> Self {
        Self {
            source,
            margin,
            current: Mutex::new(None),
        }
    }

    /// The cached token, or a new one if none is cached or it is about to expire.
    pub(crate) async fn get(&self) -> Result<Token> {
        let mut current = self.current.lock().await;
        if let Some(cached) = current.as_ref()
            && cached.refresh_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(cached.token.clone());
        }
        let token = self.source.issue().await?;
        // Refresh `margin` before expiry, or halfway through a short-lived token.
        let refresh_at = token
            .lifetime
            .and_then(|life| Instant::now().checked_add(life - self.margin.min(life / 2)));
        tracing::debug!(lifetime_s = token.lifetime.map(|l| l.as_secs()), endpoint = %token.endpoint, "issued a Keystone token");
        *current = Some(Cached {
            token: token.clone(),
            refresh_at,
        });
        Ok(token)
    }

    /// Forgets `value` if it is still the cached token (Neutron refused it).
    pub(crate) async fn invalidate(&self, value: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| c.token.value == value) {
            *current = None;
        }
    }
}

/// What to present to Keystone.
#[derive(Clone)]
pub(crate) enum KeystoneCredentials {
    Password {
        username: String,
        password: String,
        user_domain_name: String,
        project_name: String,
        project_domain_name: String,
    },
    ApplicationCredential {
        id: String,
        secret: String,
    },
}

impl KeystoneCredentials {
    fn body(&self) -> serde_json::Value {
        match self {
            Self::Password {
                username,
                password,
                user_domain_name,
                project_name,
                project_domain_name,
            } => json!({
                "auth": {
                    "identity": {
                        "methods": ["password"],
                        "password": {
                            "user": {
                                "name": username,
                                "domain": {"name": user_domain_name},
                                "password": password,
                            }
                        }
                    },
                    "scope": {
                        "project": {"name": project_name, "domain": {"name": project_domain_name}}
                    }
                }
            }),
            Self::ApplicationCredential { id, secret } => json!({
                "auth": {
                    "identity": {
                        "methods": ["application_credential"],
                        "application_credential": {"id": id, "secret": secret}
                    }
                }
            }),
        }
    }
}

/// Keystone v3: `POST {auth_url}/v3/auth/tokens`.
pub(crate) struct Keystone {
    pub(crate) http: reqwest::Client,
    pub(crate) auth_url: Url,
    pub(crate) credentials: KeystoneCredentials,
    /// The catalog's service type whose endpoint tokens come with (`network`).
    pub(crate) service_type: &'static str,
    pub(crate) interface: Interface,
    pub(crate) region: Option<String>,
    pub(crate) endpoint_override: Option<Url>,
}

#[derive(Deserialize)]
struct TokenResponse {
    token: TokenBody,
}

#[derive(Deserialize)]
struct TokenBody {
    expires_at: Option<DateTime<Utc>>,
    issued_at: Option<DateTime<Utc>>,
    #[serde(default)]
    catalog: Vec<CatalogEntry>,
}

#[derive(Deserialize)]
struct CatalogEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    endpoints: Vec<CatalogEndpoint>,
}

#[derive(Deserialize)]
struct CatalogEndpoint {
    interface: String,
    #[serde(default)]
    region: Option<String>,
    #[serde(default)]
    region_id: Option<String>,
    url: String,
}

/// `{auth_url}/v3/auth/tokens`, whether or not `auth_url` ends in `/v3`.
fn tokens_url(auth_url: &Url) -> Url {
    let mut url = auth_url.clone();
    let path = url.path().trim_end_matches('/').to_owned();
    let path = if path.ends_with("/v3") {
        format!("{path}/auth/tokens")
    } else {
        format!("{path}/v3/auth/tokens")
    };
    url.set_path(&path);
    url.set_query(None);
    url
}

/// Characters of a Keystone answer quoted in an error.
const SNIPPET_CHARS: usize = 300;

impl Keystone {
    fn pick_endpoint(&self, catalog: &[CatalogEntry]) -> Result<Url> {
        let interface = self.interface.as_str();
        let region = self.region.as_deref();
        let found = catalog
            .iter()
            .filter(|e| e.kind == self.service_type)
            .flat_map(|e| &e.endpoints)
            .find(|ep| {
                ep.interface == interface
                    && region.is_none_or(|r| ep.region_id.as_deref() == Some(r) || ep.region.as_deref() == Some(r))
            })
            .ok_or_else(|| {
                Error::Auth(format!(
                    "the service catalog has no {} endpoint with interface {interface}{}",
                    self.service_type,
                    region.map(|r| format!(" in region {r}")).unwrap_or_default()
                ))
            })?;
        let url = Url::parse(&found.url).map_err(|e| {
            Error::Auth(format!(
                "the catalog's {} endpoint {:?} is not a URL: {e}",
                self.service_type, found.url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::Auth(format!(
                "the catalog's {} endpoint {url} is not an http(s) URL",
                self.service_type
            )));
        }
        Ok(url)
    }
}

#[async_trait]
impl TokenSource for Keystone {
    async fn issue(&self) -> Result<Token> {
        let outcome = self.request_token().await;
        // netcache_keystone_auth_total{outcome}: `ok` or `auth`.
        metrics::counter!("netcache_keystone_auth_total", "outcome" => outcome_label(&outcome)).increment(1);
        outcome
    }
}

impl Keystone {
    /// `POST /v3/auth/tokens` and the endpoint from the answer's catalog.
    async fn request_token(&self) -> Result<Token> {
        let url = tokens_url(&self.auth_url);
        let response = self
            .http
            .post(url.clone())
            .json(&self.credentials.body())
            .send()
            .await
            .map_err(|e| Error::Auth(format!("Keystone at {url} could not be reached: {e}")))?;
        let status = response.status();
        let subject = response
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .bytes()
            .await
            .map_err(|e| Error::Auth(format!("reading Keystone's answer failed: {e}")))?;
        if !status.is_success() {
            return Err(Error::Auth(format!(
                "Keystone answered HTTP {}: {}",
                status.as_u16(),
                snippet(&body, SNIPPET_CHARS)
            )));
        }
        let value = subject.ok_or_else(|| Error::Auth("Keystone's answer has no X-Subject-Token header".to_owned()))?;
        let parsed: TokenResponse = serde_json::from_slice(&body)
            .map_err(|e| Error::Auth(format!("Keystone's token body is not understood: {e}")))?;
        let endpoint = match &self.endpoint_override {
            Some(url) => url.clone(),
            None => self.pick_endpoint(&parsed.token.catalog)?,
        };
        let lifetime = parsed.token.expires_at.map(|expires| {
            let issued = parsed.token.issued_at.unwrap_or_else(Utc::now);
            (expires - issued).to_std().unwrap_or(Duration::ZERO)
        });
        Ok(Token {
            value,
            endpoint,
            lifetime,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_url_with_and_without_v3() {
        for (base, want) in [
            ("http://ks:5000", "http://ks:5000/v3/auth/tokens"),
            ("http://ks:5000/", "http://ks:5000/v3/auth/tokens"),
            ("http://ks:5000/v3", "http://ks:5000/v3/auth/tokens"),
            ("http://ks/identity/v3/", "http://ks/identity/v3/auth/tokens"),
            ("http://ks/identity", "http://ks/identity/v3/auth/tokens"),
        ] {
            assert_eq!(tokens_url(&base.parse().unwrap()).as_str(), want, "{base}");
        }
    }

    #[test]
    fn interface_parses() {
        assert_eq!("internal".parse::<Interface>().unwrap(), Interface::Internal);
        assert_eq!("publicURL".parse::<Interface>().unwrap(), Interface::Public);
        assert!("private".parse::<Interface>().is_err());
    }

    #[test]
    fn debug_redacts_secrets() {
        let auth = Auth::ApplicationCredential {
            auth_url: "http://ks/v3".parse().unwrap(),
            id: "id".into(),
            secret: "s3cr3t".into(),
        };
        assert!(!format!("{auth:?}").contains("s3cr3t"));
        let auth = Auth::Password {
            auth_url: "http://ks/v3".parse().unwrap(),
            username: "nova".into(),
            password: "hunter2".into(),
            user_domain_name: "Default".into(),
            project_name: "service".into(),
            project_domain_name: "Default".into(),
        };
        assert!(!format!("{auth:?}").contains("hunter2"));
    }
}
