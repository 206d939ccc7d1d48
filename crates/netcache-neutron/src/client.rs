//! [`HttpNeutron`]: the reqwest implementation of [`NeutronApi`].
//!
//! Every call runs through [`HttpNeutron::execute`], which:
//! - attaches the token (or the no-auth headers) and re-authenticates once on a 401;
//! - retries idempotent calls (GET, PUT, DELETE) on ambiguous and unreachable
//!   outcomes with jittered exponential backoff on tokio's clock;
//! - never retries a POST (a lost `create_port` is resolved by the caller's
//!   marker lookup, not by sending it again; a lost security group or rule
//!   create of Nova's proxy APIs is the user's error to see, as with Nova);
//! - classifies the outcome into [`Error`];
//! - records each HTTP attempt in the metrics (see [`record_attempt`]).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use backon::{BackoffBuilder, ExponentialBuilder};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use netcache_domain::neutron::{FloatingIp, Network, Port, SecurityGroup, SecurityGroupRule, Subnet};
use netcache_domain::security_group_rule::NewIngressRule;
use netcache_domain::{NetworkId, PortId, ProjectId};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tracing::Instrument;
use url::Url;

use crate::auth::{Auth, Interface, Keystone, KeystoneCredentials, TokenCache, TokenSource};
use crate::error::{outcome_label, snippet};
use crate::wire::{self, InvalidField, ListPage};
use crate::{
    Error, FloatingIpCreate, FloatingIpFilter, FloatingIpTarget, NetworkFilter, NeutronApi, PortCreate, PortFilter,
    PortUpdate, Result, SecurityGroupFilter, SubnetFilter,
};

/// Settings of [`HttpNeutron`]. Build with [`ClientConfig::new`] and override fields.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub auth: Auth,
    /// Catalog interface of the `network` endpoint (Keystone auth only).
    pub interface: Interface,
    /// Catalog region of the `network` endpoint; `None` = the first one listed.
    pub region: Option<String>,
    /// With Keystone auth, Neutron's URL instead of the catalog's (keystoneauth's
    /// `endpoint_override`).
    pub endpoint_override: Option<Url>,
    /// Whole-call timeout of one HTTP request (Keystone's included).
    pub timeout: Duration,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Extra attempts of an idempotent call (GET, PUT, DELETE) after an ambiguous or
    /// unreachable outcome. POST is never retried.
    pub retries: usize,
    /// First backoff delay (before jitter); doubles per retry.
    pub retry_min_delay: Duration,
    pub retry_max_delay: Duration,
    /// At most this many values of one filter list per list request (URL length).
    pub filter_chunk_size: usize,
    /// `limit` sent on list calls; `None` lets Neutron decide (it pages only if its
    /// `pagination_max_limit` is set). `*_links` `next` is followed either way.
    pub page_size: Option<usize>,
    /// Refresh a Keystone token this long before it expires (at most half its life).
    pub token_refresh_margin: Duration,
    pub user_agent: String,
    /// Honour `HTTP(S)_PROXY`/`NO_PROXY`; off by default (Neutron and Keystone are
    /// reached directly).
    pub system_proxy: bool,
}

impl ClientConfig {
    #[must_use]
    pub fn new(auth: Auth) -> Self {
        Self {
            auth,
            interface: Interface::Public,
            region: None,
            endpoint_override: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            retries: 3,
            retry_min_delay: Duration::from_millis(200),
            retry_max_delay: Duration::from_secs(5),
            filter_chunk_size: 100,
            page_size: None,
            token_refresh_margin: Duration::from_secs(60),
            user_agent: concat!("netcache/", env!("CARGO_PKG_VERSION")).to_owned(),
            system_proxy: false,
        }
    }
}

/// The client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot build the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("invalid configuration: {0}")]
    Config(String),
}

enum Authn {
    Static { base: Url, headers: HeaderMap },
    Token(TokenCache),
}

/// What one attempt is sent with.
struct Credentials {
    base: Url,
    token: Option<String>,
}

/// A Neutron call, independent of the endpoint.
struct Call {
    operation: &'static str,
    method: Method,
    /// Path segments under `/v2.0/`, unencoded.
    segments: Vec<String>,
    /// Encoded query string.
    query: Option<String>,
    body: Option<serde_json::Value>,
    if_revision: Option<u64>,
}

impl Call {
    fn new(operation: &'static str, method: Method, segments: &[&str]) -> Self {
        Self {
            operation,
            method,
            segments: segments.iter().map(|s| (*s).to_owned()).collect(),
            query: None,
            body: None,
            if_revision: None,
        }
    }
}

/// Neutron over HTTP.
pub struct HttpNeutron {
    http: reqwest::Client,
    authn: Authn,
    retries: usize,
    retry_min_delay: Duration,
    retry_max_delay: Duration,
    chunk: usize,
    page_size: Option<usize>,
}

/// `{endpoint}/v2.0/`, whether or not `endpoint` ends in `/v2.0`.
pub(crate) fn neutron_base(endpoint: &Url) -> Url {
    let mut url = endpoint.clone();
    let path = url.path().trim_end_matches('/');
    let path = path.strip_suffix("/v2.0").unwrap_or(path).to_owned();
    url.set_path(&format!("{path}/v2.0/"));
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// Characters of a Neutron answer quoted in an error.
const SNIPPET_CHARS: usize = 200;

fn protocol(operation: &'static str, reason: impl Into<String>) -> Error {
    Error::Protocol {
        operation,
        reason: reason.into(),
    }
}

fn invalid(operation: &'static str) -> impl Fn(InvalidField) -> Error {
    move |e| protocol(operation, e.to_string())
}

/// Classifies a transport error: nothing sent, or maybe sent.
fn transport_error(operation: &'static str, e: &reqwest::Error) -> Error {
    // `{:#}`-style chain: reqwest's Display hides the cause.
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        reason.push_str(": ");
        reason.push_str(&s.to_string());
        source = s.source();
    }
    if e.is_connect() {
        Error::Unreachable { operation, reason }
    } else {
        Error::Ambiguous { operation, reason }
    }
}

/// Classifies a non-success answer.
fn status_error(operation: &'static str, status: StatusCode, body: &[u8]) -> Error {
    let neutron = serde_json::from_slice::<wire::NeutronErrorBody>(body)
        .ok()
        .map(|b| b.error);
    let code = status.as_u16();
    if status.is_server_error() {
        let detail = neutron.map_or_else(|| snippet(body, SNIPPET_CHARS), |n| format!("{}: {n}", n.kind));
        return Error::Ambiguous {
            operation,
            reason: format!("HTTP {code}: {detail}"),
        };
    }
    if status == StatusCode::UNAUTHORIZED {
        return Error::Auth(format!(
            "Neutron refused the credentials for {operation} (HTTP 401): {}",
            snippet(body, SNIPPET_CHARS)
        ));
    }
    match neutron {
        Some(n) if status.is_client_error() => {
            let message = n.to_string();
            Error::Rejected {
                operation,
                status: code,
                kind: n.kind,
                message,
            }
        }
        // A 4xx that is not Neutron's own (a proxy, a wrong endpoint path) is not a
        // statement about the resource: a bare 404 must not read as "port is gone".
        _ => protocol(
            operation,
            format!(
                "HTTP {code} without a NeutronError body: {}",
                snippet(body, SNIPPET_CHARS)
            ),
        ),
    }
}

/// The `operation` label of a call's metrics (the error messages keep the internal
/// names); `other` for a call missing here.
fn operation_label(operation: &str) -> &'static str {
    match operation {
        "create_port" => "ports.create",
        "list_ports" => "ports.list",
        "show_port" => "ports.show",
        "update_port" => "ports.update",
        "delete_port" => "ports.delete",
        "replace_port_tags" => "ports.tags",
        "list_networks" => "networks.list",
        "list_subnets" => "subnets.list",
        "list_floating_ips" => "floatingips.list",
        "show_floating_ip" => "floatingips.show",
        "create_floating_ip" => "floatingips.create",
        "update_floating_ip" => "floatingips.update",
        "delete_floating_ip" => "floatingips.delete",
        "list_extensions" => "extensions.list",
        "list_security_groups" => "security-groups.list",
        "show_security_group" => "security-groups.show",
        "create_security_group" => "security-groups.create",
        "update_security_group" => "security-groups.update",
        "delete_security_group" => "security-groups.delete",
        "show_security_group_rule" => "security-group-rules.show",
        "create_security_group_rule" => "security-group-rules.create",
        "delete_security_group_rule" => "security-group-rules.delete",
        _ => "other",
    }
}

/// Metrics of one HTTP attempt (every retry, re-authentication, page and filter
/// chunk is an attempt of its own): `netcache_neutron_calls_total{operation, outcome}`
/// and `netcache_neutron_call_duration_seconds{operation}`. `outcome` is `ok` or
/// [`Error::metric_label`] of the attempt's own classification (a 2xx whose body does
/// not decode is `protocol`); the duration covers sending, reading and decoding, not
/// obtaining a token.
fn record_attempt<T>(operation: &'static str, elapsed: Duration, outcome: &Result<T>) {
    let operation = operation_label(operation);
    metrics::counter!("netcache_neutron_calls_total", "operation" => operation, "outcome" => outcome_label(outcome))
        .increment(1);
    metrics::histogram!("netcache_neutron_call_duration_seconds", "operation" => operation)
        .record(elapsed.as_secs_f64());
}

/// The HTTP client of netcache's OpenStack calls: no transparent replays, no redirects.
pub fn http_client(config: &ClientConfig) -> std::result::Result<reqwest::Client, BuildError> {
    let mut builder = reqwest::Client::builder()
        .timeout(config.timeout)
        .connect_timeout(config.connect_timeout)
        .user_agent(config.user_agent.clone())
        // A POST must be sent once: no transparent replays of any kind.
        .retry(reqwest::retry::never())
        // Neutron does not redirect; following one would replay a POST as a GET and
        // carry X-Auth-Token elsewhere. A 3xx is reported as a protocol error.
        .redirect(reqwest::redirect::Policy::none());
    if !config.system_proxy {
        builder = builder.no_proxy();
    }
    Ok(builder.build()?)
}

/// Keystone tokens for the catalog's `service_type` endpoint, with `config`'s
/// credentials, interface and region; `None` without Keystone credentials.
fn keystone_source(
    config: &ClientConfig,
    http: &reqwest::Client,
    service_type: &'static str,
    endpoint_override: Option<Url>,
) -> Option<Arc<dyn TokenSource>> {
    let (auth_url, credentials) = match &config.auth {
        Auth::Password {
            auth_url,
            username,
            password,
            user_domain_name,
            project_name,
            project_domain_name,
        } => (
            auth_url.clone(),
            KeystoneCredentials::Password {
                username: username.clone(),
                password: password.clone(),
                user_domain_name: user_domain_name.clone(),
                project_name: project_name.clone(),
                project_domain_name: project_domain_name.clone(),
            },
        ),
        Auth::ApplicationCredential { auth_url, id, secret } => (
            auth_url.clone(),
            KeystoneCredentials::ApplicationCredential {
                id: id.clone(),
                secret: secret.clone(),
            },
        ),
        Auth::None { .. } | Auth::Custom(_) => return None,
    };
    Some(Arc::new(Keystone {
        http: http.clone(),
        auth_url,
        credentials,
        service_type,
        interface: config.interface,
        region: config.region.clone(),
        endpoint_override,
    }))
}

/// Tokens for another service of the catalog (`compute` for Nova's external
/// events) with the credentials of a Neutron client's `config`; `None` without
/// Keystone auth. `endpoint_override` replaces the catalog's endpoint.
pub fn keystone_tokens(
    config: &ClientConfig,
    service_type: &'static str,
    endpoint_override: Option<Url>,
) -> std::result::Result<Option<Arc<dyn TokenSource>>, BuildError> {
    let http = http_client(config)?;
    Ok(keystone_source(config, &http, service_type, endpoint_override))
}

impl HttpNeutron {
    pub fn new(config: ClientConfig) -> std::result::Result<Self, BuildError> {
        let http = http_client(&config)?;
        let margin = config.token_refresh_margin;
        let authn = match config.auth {
            Auth::None {
                ref endpoint,
                ref headers,
            } => {
                if !matches!(endpoint.scheme(), "http" | "https") {
                    return Err(BuildError::Config(format!(
                        "Neutron endpoint {endpoint} is not an http(s) URL"
                    )));
                }
                Authn::Static {
                    base: neutron_base(endpoint),
                    headers: headers.clone(),
                }
            }
            Auth::Custom(ref source) => Authn::Token(TokenCache::new(Arc::clone(source), margin)),
            Auth::Password { .. } | Auth::ApplicationCredential { .. } => {
                let source = keystone_source(&config, &http, "network", config.endpoint_override.clone())
                    .ok_or_else(|| BuildError::Config("Keystone auth without credentials".to_owned()))?;
                Authn::Token(TokenCache::new(source, margin))
            }
        };
        if config.filter_chunk_size == 0 {
            return Err(BuildError::Config("filter_chunk_size must be at least 1".to_owned()));
        }
        Ok(Self {
            http,
            authn,
            retries: config.retries,
            retry_min_delay: config.retry_min_delay,
            retry_max_delay: config.retry_max_delay,
            chunk: config.filter_chunk_size,
            page_size: config.page_size,
        })
    }

    async fn credentials(&self) -> Result<Credentials> {
        match &self.authn {
            Authn::Static { base, .. } => Ok(Credentials {
                base: base.clone(),
                token: None,
            }),
            Authn::Token(cache) => {
                let token = cache.get().await?;
                Ok(Credentials {
                    base: neutron_base(&token.endpoint),
                    token: Some(token.value),
                })
            }
        }
    }

    fn url(base: &Url, call: &Call) -> Url {
        let mut url = base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty();
            segments.extend(&call.segments);
        }
        url.set_query(call.query.as_deref());
        url
    }

    /// One HTTP exchange: the success status and body, or the classified error.
    async fn exchange(&self, creds: &Credentials, call: &Call) -> Result<(StatusCode, Bytes)> {
        let op = call.operation;
        let url = Self::url(&creds.base, call);
        let mut request = self
            .http
            .request(call.method.clone(), url)
            .header(http::header::ACCEPT, "application/json");
        match (&self.authn, &creds.token) {
            (Authn::Static { headers, .. }, _) => request = request.headers(headers.clone()),
            (Authn::Token(_), Some(token)) => request = request.header("X-Auth-Token", token),
            (Authn::Token(_), None) => {}
        }
        if let Some(revision) = call.if_revision {
            let value = HeaderValue::from_str(&format!("revision_number={revision}")).expect("ASCII header value");
            request = request.header(http::header::IF_MATCH, value);
        }
        if let Some(body) = &call.body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| transport_error(op, &e))?;
        let status = response.status();
        // A body that breaks off is as ambiguous as no answer: the call may have applied.
        let body = response.bytes().await.map_err(|e| transport_error(op, &e))?;
        if status.is_success() {
            Ok((status, body))
        } else {
            Err(status_error(op, status, &body))
        }
    }

    /// One HTTP exchange and the decoding of its answer, measured and counted.
    async fn attempt<T>(
        &self,
        creds: &Credentials,
        call: &Call,
        decode: &impl Fn(&[u8]) -> Result<T>,
    ) -> Result<(StatusCode, T)> {
        let started = Instant::now();
        let outcome = match self.exchange(creds, call).await {
            Ok((status, body)) => decode(&body).map(|value| (status, value)),
            Err(e) => Err(e),
        };
        record_attempt(call.operation, started.elapsed(), &outcome);
        outcome
    }

    /// Runs a call with re-authentication and (for idempotent methods) retries;
    /// `decode` turns a success body into the answer (a failure is not retried).
    async fn execute<T>(&self, call: &Call, decode: impl Fn(&[u8]) -> Result<T>) -> Result<(StatusCode, T)> {
        let idempotent = call.method != Method::POST;
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(self.retry_min_delay)
            .with_max_delay(self.retry_max_delay)
            .with_max_times(if idempotent { self.retries } else { 0 })
            .with_jitter()
            .build();
        let mut reauthenticated = false;
        let mut earlier_ambiguous = false;
        loop {
            let creds = self.credentials().await?;
            let started = Instant::now();
            let span = tracing::debug_span!("neutron", op = call.operation, method = %call.method, path = %call.segments.join("/"));
            let outcome = self.attempt(&creds, call, &decode).instrument(span.clone()).await;
            let elapsed_ms = started.elapsed().as_millis() as u64;
            match &outcome {
                Ok((status, _)) => {
                    tracing::debug!(parent: &span, status = status.as_u16(), elapsed_ms, "Neutron call done");
                }
                Err(e) => {
                    tracing::debug!(parent: &span, status = e.status(), elapsed_ms, error = %e, "Neutron call failed");
                }
            }
            match outcome {
                Err(Error::Auth(reason)) if !reauthenticated && creds.token.is_some() => {
                    // Neutron did not process the call: safe to send again, POST too.
                    tracing::info!(parent: &span, %reason, "Neutron refused the token; re-authenticating");
                    if let (Authn::Token(cache), Some(token)) = (&self.authn, &creds.token) {
                        cache.invalidate(token).await;
                    }
                    reauthenticated = true;
                }
                Err(e @ (Error::Ambiguous { .. } | Error::Unreachable { .. })) => {
                    let ambiguous = e.is_ambiguous();
                    match backoff.next() {
                        Some(delay) => {
                            let retry_in_ms = delay.as_millis() as u64;
                            if ambiguous {
                                tracing::warn!(parent: &span, error = %e, retry_in_ms, "ambiguous Neutron outcome; retrying an idempotent call");
                            } else {
                                tracing::info!(parent: &span, error = %e, retry_in_ms, "Neutron unreachable; retrying");
                            }
                            earlier_ambiguous |= ambiguous;
                            tokio::time::sleep(delay).await;
                        }
                        None => {
                            if ambiguous {
                                tracing::warn!(parent: &span, error = %e, "ambiguous Neutron outcome");
                            }
                            return Err(e);
                        }
                    }
                }
                // An earlier attempt of this PUT may have applied and bumped the
                // revision: the 412 then says nothing about our update.
                Err(Error::Rejected {
                    status: 412, message, ..
                }) if earlier_ambiguous && call.method == Method::PUT => {
                    let e = Error::Ambiguous {
                        operation: call.operation,
                        reason: format!("HTTP 412 after an ambiguous attempt that may have applied: {message}"),
                    };
                    tracing::warn!(parent: &span, error = %e, "ambiguous Neutron outcome");
                    return Err(e);
                }
                other => return other,
            }
        }
    }

    async fn json<T: DeserializeOwned>(&self, call: &Call) -> Result<T> {
        let decode = |body: &[u8]| {
            serde_json::from_slice(body)
                .map_err(|e| protocol(call.operation, format!("{e}; body: {}", snippet(body, SNIPPET_CHARS))))
        };
        self.execute(call, decode).await.map(|(_, value)| value)
    }

    /// A call whose success body is not read.
    async fn send(&self, call: &Call) -> Result<()> {
        self.execute(call, |_| Ok(())).await.map(drop)
    }

    /// A call answered with one floating IP.
    async fn floating_ip(&self, call: Call) -> Result<FloatingIp> {
        let envelope: wire::FloatingIpEnvelope = self.json(&call).await?;
        FloatingIp::try_from(envelope.floatingip).map_err(invalid(call.operation))
    }

    /// `GET /v2.0/{collection}` for each chunk of the filter, following `next` links.
    async fn list<P: ListPage>(&self, operation: &'static str, query: &Query) -> Result<Vec<P::Item>> {
        let mut items = Vec::new();
        for chunk in query.chunks(self.chunk) {
            // The URL names the collection with dashes (`security-groups`).
            let path = P::COLLECTION.replace('_', "-");
            let mut call = Call::new(operation, Method::GET, &[&path]);
            call.query = encode_query(&chunk, self.page_size);
            let mut seen = HashSet::new();
            loop {
                if !seen.insert(call.query.clone()) {
                    return Err(protocol(operation, format!("pagination loops at {:?}", call.query)));
                }
                let page: P = self.json(&call).await?;
                let (page_items, links) = page.into_parts();
                items.extend(page_items);
                let Some(link) = links.into_iter().find(|l| l.rel == "next") else {
                    break;
                };
                // Follow the marker, but on our own endpoint: the href's host is what
                // Neutron believes it is called, which behind a proxy may be wrong.
                let href = Url::parse(&link.href)
                    .map_err(|e| protocol(operation, format!("next link {:?} is not a URL: {e}", link.href)))?;
                call.query = href.query().map(str::to_owned);
            }
        }
        Ok(items)
    }
}

fn encode_query(params: &[(&'static str, String)], limit: Option<usize>) -> Option<String> {
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in params {
        serializer.append_pair(key, value);
    }
    if let Some(limit) = limit {
        serializer.append_pair("limit", &limit.to_string());
    }
    Some(serializer.finish()).filter(|q| !q.is_empty())
}

/// Query parameters of a list call: single values and OR-lists (repeated keys).
#[derive(Default)]
struct Query {
    fixed: Vec<(&'static str, String)>,
    lists: Vec<(&'static str, Vec<String>)>,
}

impl Query {
    fn one(&mut self, key: &'static str, value: Option<impl ToString>) -> &mut Self {
        if let Some(v) = value {
            self.fixed.push((key, v.to_string()));
        }
        self
    }

    /// Comma-joined list (`tags=a,b`), if non-empty.
    fn joined(&mut self, key: &'static str, values: &[String]) -> &mut Self {
        if !values.is_empty() {
            self.fixed.push((key, values.join(",")));
        }
        self
    }

    /// Repeated key (`device_id=a&device_id=b`, OR), if non-empty.
    fn any_of<T: ToString>(&mut self, key: &'static str, values: &[T]) -> &mut Self {
        if !values.is_empty() {
            let mut distinct = Vec::with_capacity(values.len());
            let mut seen = HashSet::new();
            for v in values {
                let v = v.to_string();
                if seen.insert(v.clone()) {
                    distinct.push(v);
                }
            }
            self.lists.push((key, distinct));
        }
        self
    }

    /// One parameter list per request: every combination of `chunk`-sized pieces of
    /// the OR-lists. A resource matches at most one combination (one value per key).
    fn chunks(&self, chunk: usize) -> Vec<Vec<(&'static str, String)>> {
        let mut out = vec![self.fixed.clone()];
        for (key, values) in &self.lists {
            out = out
                .into_iter()
                .flat_map(|params| {
                    values.chunks(chunk).map(move |piece| {
                        let mut p = params.clone();
                        p.extend(piece.iter().map(|v| (*key, v.clone())));
                        p
                    })
                })
                .collect();
        }
        out
    }
}

fn convert_all<B, T>(operation: &'static str, bodies: Vec<B>) -> Result<Vec<T>>
where
    T: TryFrom<B, Error = InvalidField>,
{
    bodies
        .into_iter()
        .map(|b| T::try_from(b).map_err(invalid(operation)))
        .collect()
}

/// Drops repeats by key (pages may overlap while Neutron changes underneath).
fn dedup_by<T, K: std::hash::Hash + Eq>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = HashSet::new();
    items.into_iter().filter(|i| seen.insert(key(i))).collect()
}

#[async_trait]
impl NeutronApi for HttpNeutron {
    async fn list_extensions(&self) -> Result<BTreeSet<String>> {
        let call = Call::new("list_extensions", Method::GET, &["extensions"]);
        let list: wire::ExtensionList = self.json(&call).await?;
        Ok(list.items.into_iter().map(|e| e.alias).collect())
    }

    async fn list_networks(&self, filter: &NetworkFilter) -> Result<Vec<Network>> {
        const OP: &str = "list_networks";
        let mut q = Query::default();
        q.any_of("id", &filter.ids)
            .one("name", filter.name.as_ref())
            .one("project_id", filter.project_id.as_ref())
            .one("shared", filter.shared)
            .one("router:external", filter.external);
        let bodies = self.list::<wire::NetworkList>(OP, &q).await?;
        Ok(dedup_by(convert_all(OP, bodies)?, |n: &Network| n.id.clone()))
    }

    async fn list_subnets(&self, filter: &SubnetFilter) -> Result<Vec<Subnet>> {
        const OP: &str = "list_subnets";
        let mut q = Query::default();
        q.any_of("id", &filter.ids).any_of("network_id", &filter.network_ids);
        let bodies = self.list::<wire::SubnetList>(OP, &q).await?;
        Ok(dedup_by(convert_all(OP, bodies)?, |s: &Subnet| s.id.clone()))
    }

    async fn create_port(&self, port: &PortCreate) -> Result<Port> {
        const OP: &str = "create_port";
        let mut call = Call::new(OP, Method::POST, &["ports"]);
        call.body = Some(serde_json::to_value(wire::PortCreateEnvelope::from(port)).expect("serializable"));
        let envelope: wire::PortEnvelope = self.json(&call).await?;
        Port::try_from(envelope.port).map_err(invalid(OP))
    }

    async fn show_port(&self, id: &PortId) -> Result<Port> {
        const OP: &str = "show_port";
        let call = Call::new(OP, Method::GET, &["ports", id.as_str()]);
        let envelope: wire::PortEnvelope = self.json(&call).await?;
        Port::try_from(envelope.port).map_err(invalid(OP))
    }

    async fn list_ports(&self, filter: &PortFilter) -> Result<Vec<Port>> {
        const OP: &str = "list_ports";
        let mut q = Query::default();
        q.one("project_id", filter.project_id.as_ref())
            .one("device_owner", filter.device_owner.as_ref())
            .one("name", filter.name.as_ref())
            .one("fixed_ips", filter.fixed_ip.map(|ip| format!("ip_address={ip}")))
            .joined("tags", &filter.tags)
            .joined("tags-any", &filter.tags_any)
            .any_of("id", &filter.ids)
            .any_of("device_id", &filter.device_ids)
            .any_of("network_id", &filter.network_ids);
        let bodies = self.list::<wire::PortList>(OP, &q).await?;
        Ok(dedup_by(convert_all(OP, bodies)?, |p: &Port| p.id.clone()))
    }

    async fn update_port(&self, id: &PortId, update: &PortUpdate, if_revision: Option<u64>) -> Result<Port> {
        const OP: &str = "update_port";
        let mut call = Call::new(OP, Method::PUT, &["ports", id.as_str()]);
        call.body = Some(serde_json::to_value(wire::PortUpdateEnvelope::from(update)).expect("serializable"));
        call.if_revision = if_revision;
        let envelope: wire::PortEnvelope = self.json(&call).await?;
        Port::try_from(envelope.port).map_err(invalid(OP))
    }

    async fn delete_port(&self, id: &PortId, if_revision: Option<u64>) -> Result<()> {
        let mut call = Call::new("delete_port", Method::DELETE, &["ports", id.as_str()]);
        call.if_revision = if_revision;
        self.send(&call).await
    }

    async fn replace_port_tags(&self, id: &PortId, tags: &[String]) -> Result<()> {
        let mut call = Call::new("replace_port_tags", Method::PUT, &["ports", id.as_str(), "tags"]);
        call.body = Some(serde_json::json!({ "tags": tags }));
        self.send(&call).await
    }

    async fn list_floating_ips(&self, filter: &FloatingIpFilter) -> Result<Vec<FloatingIp>> {
        const OP: &str = "list_floating_ips";
        let mut q = Query::default();
        q.any_of("port_id", &filter.port_ids)
            .any_of("project_id", &filter.project_ids)
            .one("floating_ip_address", filter.floating_ip_address.as_ref());
        let bodies = self.list::<wire::FloatingIpList>(OP, &q).await?;
        Ok(dedup_by(convert_all(OP, bodies)?, |f: &FloatingIp| f.id.clone()))
    }

    async fn show_floating_ip(&self, id: &str) -> Result<FloatingIp> {
        self.floating_ip(Call::new("show_floating_ip", Method::GET, &["floatingips", id]))
            .await
    }

    async fn create_floating_ip(&self, create: &FloatingIpCreate) -> Result<FloatingIp> {
        let mut call = Call::new("create_floating_ip", Method::POST, &["floatingips"]);
        let body = wire::FloatingIpCreateEnvelope::from(create);
        call.body = Some(serde_json::to_value(body).expect("serializable"));
        self.floating_ip(call).await
    }

    async fn update_floating_ip(&self, id: &str, target: Option<&FloatingIpTarget>) -> Result<FloatingIp> {
        let mut call = Call::new("update_floating_ip", Method::PUT, &["floatingips", id]);
        let body = wire::FloatingIpAssociationEnvelope::from(target);
        call.body = Some(serde_json::to_value(body).expect("serializable"));
        self.floating_ip(call).await
    }

    async fn delete_floating_ip(&self, id: &str) -> Result<()> {
        self.send(&Call::new("delete_floating_ip", Method::DELETE, &["floatingips", id]))
            .await
    }

    async fn list_security_groups(&self, filter: &SecurityGroupFilter) -> Result<Vec<SecurityGroup>> {
        const OP: &str = "list_security_groups";
        let mut q = Query::default();
        // As Nova asks: the names and owners, not every group's rules, unless
        // the groups are wanted whole.
        if !filter.in_full {
            q.one("fields", Some("id"))
                .one("fields", Some("name"))
                .one("fields", Some("project_id"));
        }
        q.one("project_id", filter.project_id.as_ref())
            .any_of("id", &filter.ids);
        let bodies = self.list::<wire::SecurityGroupList>(OP, &q).await?;
        Ok(dedup_by(convert_all(OP, bodies)?, |g: &SecurityGroup| g.id.clone()))
    }

    async fn show_security_group(&self, id: &str) -> Result<SecurityGroup> {
        const OP: &str = "show_security_group";
        let call = Call::new(OP, Method::GET, &["security-groups", id]);
        let envelope: wire::SecurityGroupEnvelope = self.json(&call).await?;
        SecurityGroup::try_from(envelope.security_group).map_err(invalid(OP))
    }

    async fn create_security_group(&self, project: &ProjectId, name: &str, description: &str) -> Result<SecurityGroup> {
        const OP: &str = "create_security_group";
        let mut call = Call::new(OP, Method::POST, &["security-groups"]);
        let body = wire::SecurityGroupWriteEnvelope {
            security_group: wire::SecurityGroupWrite {
                name,
                description,
                project_id: Some(project.as_str()),
            },
        };
        call.body = Some(serde_json::to_value(body).expect("serializable"));
        let envelope: wire::SecurityGroupEnvelope = self.json(&call).await?;
        SecurityGroup::try_from(envelope.security_group).map_err(invalid(OP))
    }

    async fn update_security_group(&self, id: &str, name: &str, description: &str) -> Result<SecurityGroup> {
        const OP: &str = "update_security_group";
        let mut call = Call::new(OP, Method::PUT, &["security-groups", id]);
        let body = wire::SecurityGroupWriteEnvelope {
            security_group: wire::SecurityGroupWrite {
                name,
                description,
                project_id: None,
            },
        };
        call.body = Some(serde_json::to_value(body).expect("serializable"));
        let envelope: wire::SecurityGroupEnvelope = self.json(&call).await?;
        SecurityGroup::try_from(envelope.security_group).map_err(invalid(OP))
    }

    async fn delete_security_group(&self, id: &str) -> Result<()> {
        self.send(&Call::new(
            "delete_security_group",
            Method::DELETE,
            &["security-groups", id],
        ))
        .await
    }

    async fn show_security_group_rule(&self, id: &str) -> Result<SecurityGroupRule> {
        let call = Call::new("show_security_group_rule", Method::GET, &["security-group-rules", id]);
        let envelope: wire::SecurityGroupRuleEnvelope = self.json(&call).await?;
        Ok(envelope.security_group_rule.into())
    }

    async fn create_security_group_rule(&self, rule: &NewIngressRule) -> Result<SecurityGroupRule> {
        let mut call = Call::new("create_security_group_rule", Method::POST, &["security-group-rules"]);
        let body = wire::SecurityGroupRuleCreateEnvelope::from(rule);
        call.body = Some(serde_json::to_value(body).expect("serializable"));
        let envelope: wire::SecurityGroupRuleEnvelope = self.json(&call).await?;
        Ok(envelope.security_group_rule.into())
    }

    async fn delete_security_group_rule(&self, id: &str) -> Result<()> {
        let call = Call::new(
            "delete_security_group_rule",
            Method::DELETE,
            &["security-group-rules", id],
        );
        self.send(&call).await
    }

    async fn auto_allocated_topology(&self, project: &ProjectId) -> Result<NetworkId> {
        let call = Call::new(
            "auto_allocated_topology",
            Method::GET,
            &["auto-allocated-topology", project.as_str()],
        );
        let envelope: wire::AutoAllocatedTopologyEnvelope = self.json(&call).await?;
        Ok(NetworkId::from(envelope.auto_allocated_topology.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_is_normalised() {
        for (endpoint, want) in [
            ("http://127.0.0.1:9696", "http://127.0.0.1:9696/v2.0/"),
            ("http://127.0.0.1:9696/", "http://127.0.0.1:9696/v2.0/"),
            ("http://127.0.0.1:9696/v2.0", "http://127.0.0.1:9696/v2.0/"),
            ("http://127.0.0.1:9696/v2.0/", "http://127.0.0.1:9696/v2.0/"),
            ("https://cloud/networking/", "https://cloud/networking/v2.0/"),
        ] {
            assert_eq!(neutron_base(&endpoint.parse().unwrap()).as_str(), want, "{endpoint}");
        }
    }

    #[test]
    fn segments_are_encoded() {
        let base = neutron_base(&"http://n:9696".parse().unwrap());
        let call = Call::new("t", Method::PUT, &["ports", "p1", "tags", "netcache:owner=a/b c"]);
        assert_eq!(
            HttpNeutron::url(&base, &call).as_str(),
            "http://n:9696/v2.0/ports/p1/tags/netcache:owner=a%2Fb%20c"
        );
    }

    #[test]
    fn chunks_are_a_product() {
        let mut q = Query::default();
        let a: Vec<String> = (0..5).map(|i| format!("a{i}")).collect();
        let b: Vec<String> = (0..3).map(|i| format!("b{i}")).collect();
        q.one("name", Some("x")).any_of("a", &a).any_of("b", &b);
        let chunks = q.chunks(2);
        assert_eq!(chunks.len(), 3 * 2);
        for c in &chunks {
            assert_eq!(c[0], ("name", "x".to_owned()));
            assert!(c.iter().filter(|(k, _)| *k == "a").count() <= 2);
            assert!(c.iter().filter(|(k, _)| *k == "b").count() <= 2);
        }
        let all_a: BTreeSet<_> = chunks
            .iter()
            .flatten()
            .filter(|(k, _)| *k == "a")
            .map(|(_, v)| v.clone())
            .collect();
        assert_eq!(all_a.len(), 5);
        assert_eq!(Query::default().chunks(100), vec![Vec::<(&str, String)>::new()]);
    }

    #[test]
    fn status_classification() {
        let body =
            br#"{"NeutronError": {"type": "PortNotFound", "message": "Port p could not be found.", "detail": ""}}"#;
        match status_error("show_port", StatusCode::NOT_FOUND, body) {
            Error::Rejected { status: 404, kind, .. } => assert_eq!(kind, "PortNotFound"),
            other => panic!("{other:?}"),
        }
        assert!(status_error("x", StatusCode::INTERNAL_SERVER_ERROR, body).is_ambiguous());
        assert!(status_error("x", StatusCode::BAD_GATEWAY, b"<html>").is_ambiguous());
        assert!(matches!(
            status_error("x", StatusCode::NOT_FOUND, b"404 Not Found"),
            Error::Protocol { .. }
        ));
        assert!(matches!(
            status_error("x", StatusCode::UNAUTHORIZED, b""),
            Error::Auth(_)
        ));
    }
}
