//! Wires the pieces into a running service: store, Neutron (embedded or real),
//! compute service and the compute API.

mod serve_http;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use netcache_api::{ApiConfig, AppState};
use netcache_compute::Compute;
use netcache_compute::lifecycle::virt::FakeVirt;
use netcache_neutron::{Auth, ClientConfig, HttpNeutron};
use neutron_sim::{NeutronSim, RunningSim, SimConfig};
use tokio::net::TcpListener;
use tracing::info;
use url::Url;

use crate::settings::{Settings, redact};

pub use serve_http::HttpLimits;

/// A running netcache: the API server plus, unless a Neutron URL is configured,
/// the embedded Neutron.
pub struct App {
    pub compute: Arc<Compute>,
    pub api_addr: SocketAddr,
    pub neutron_url: String,
    pub embedded_neutron: Option<RunningSim>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Stops the API server (dropping it does too).
    stop_server: tokio::sync::oneshot::Sender<()>,
    /// Where `api.metrics_listen` serves `/metrics`, if set.
    pub metrics_addr: Option<SocketAddr>,
    metrics_server: Option<(
        tokio::task::JoinHandle<std::io::Result<()>>,
        tokio::sync::oneshot::Sender<()>,
    )>,
    loops: Vec<tokio::task::JoinHandle<()>>,
}

impl App {
    /// Starts everything. `listen` of the settings may use port 0 (tests).
    pub async fn start(settings: &Settings) -> anyhow::Result<Self> {
        // A fresh seed per run: the embedded Neutron's ids must not repeat those of
        // an earlier run that the database may still hold.
        let seed = uuid::Uuid::new_v4().as_u64_pair().0;
        Self::start_with_sim(
            settings,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        )
        .await
    }

    /// As [`App::start`], with the embedded Neutron configured as given.
    pub async fn start_with_sim(settings: &Settings, sim_config: SimConfig) -> anyhow::Result<Self> {
        let store = open_store(&settings.database).await?;
        let (neutron_url, embedded_neutron) = match (&settings.neutron.url, &settings.neutron.auth_url) {
            (Some(url), _) => (url.clone(), None),
            (None, Some(_)) => ("the Keystone catalog's network endpoint".to_owned(), None),
            (None, None) => {
                let sim = NeutronSim::start(sim_config, settings.neutron.embedded_listen)
                    .await
                    .with_context(|| {
                        format!(
                            "cannot start the embedded Neutron on {} (set neutron.embedded_listen or neutron.url)",
                            settings.neutron.embedded_listen
                        )
                    })?;
                let topology = sim.handle().create_default_topology(&settings.api.default_project);
                info!(
                    url = %sim.url(), private = %topology.private_network_id, public = %topology.public_network_id,
                    "Embedded Neutron is up with networks private and public"
                );
                (sim.url(), Some(sim))
            }
        };
        if embedded_neutron.is_some() {
            let earlier = store.servers(&netcache_store::ServerFilter::default()).await?.len();
            if earlier > 0 {
                tracing::warn!(
                    servers = earlier,
                    "{earlier} servers in {} belong to an earlier embedded Neutron, which kept its ports in memory; \
                     heal will mark their ports lost (use neutron.url for a lasting Neutron)",
                    redact::url(&settings.database)
                );
            }
        }
        let neutron = Arc::new(neutron_client(settings, &neutron_url)?);
        let compute = Compute::start(
            settings.compute_config(),
            store,
            neutron,
            Arc::new(FakeVirt::new(&settings.compute_config().virt)),
        )
        .await
        .context("cannot start the compute service")?;

        let listener = TcpListener::bind(settings.listen)
            .await
            .with_context(|| format!("cannot listen on {} (set listen or NETCACHE_LISTEN)", settings.listen))?;
        let api_addr = listener.local_addr()?;
        let public_url = match &settings.api.public_url {
            Some(url) => url.clone(),
            None => format!("http://{api_addr}"),
        };
        let router = netcache_api::router(AppState {
            compute: Arc::clone(&compute),
            config: Arc::new(ApiConfig {
                default_project: settings.api.default_project.clone(),
                public_url,
                keystone: settings.keystone_auth(),
                policy: Arc::new(settings.policy()?),
                max_limit: settings.api.max_limit,
                detail_pages: Arc::new(tokio::sync::Semaphore::new(
                    settings
                        .api
                        .detail_pages_at_once
                        .min(tokio::sync::Semaphore::MAX_PERMITS),
                )),
            }),
        });
        let (stop_server, stop) = tokio::sync::oneshot::channel::<()>();
        let limits = HttpLimits::of(&settings.api);
        let server = tokio::spawn(serve_http::serve(listener, router, limits, async {
            let _ = stop.await;
        }));
        let (metrics_addr, metrics_server) = match settings.api.metrics_listen {
            None => (None, None),
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr} (api.metrics_listen)"))?;
                let addr = listener.local_addr()?;
                let (stop_metrics, stop) = tokio::sync::oneshot::channel::<()>();
                let router = netcache_api::metrics::router(Arc::clone(&compute));
                let server = tokio::spawn(serve_http::serve(listener, router, limits, async {
                    let _ = stop.await;
                }));
                info!(%addr, "Prometheus metrics on http://{addr}/metrics");
                (Some(addr), Some((server, stop_metrics)))
            }
        };
        if let Some(sim) = &embedded_neutron {
            // Neutron's Nova notifier, pointed at our events endpoint.
            sim.handle().set_nova_url(Some(format!("http://{api_addr}/v2.1")));
            if settings.auth.strategy == "keystone" {
                tracing::warn!(
                    "the embedded Neutron's Nova notifier has no Keystone token: netcache refuses its events (401) \
                     and heal finds what they would have said"
                );
            }
        }
        let loops = compute.spawn_loops();
        info!(
            addr = %api_addr,
            neutron = %redact::url(&neutron_url),
            database = %redact::url(&settings.database),
            "netcache compute API listening on http://{api_addr}"
        );
        Ok(Self {
            compute,
            api_addr,
            neutron_url,
            embedded_neutron,
            server,
            stop_server,
            metrics_addr,
            metrics_server,
            loops,
        })
    }

    #[must_use]
    pub fn api_url(&self) -> String {
        format!("http://{}", self.api_addr)
    }

    /// Stops serving (in-flight builds are awaited first, then in-flight requests
    /// for a few seconds).
    pub async fn shutdown(self) {
        for task in &self.loops {
            task.abort();
        }
        self.compute.settle().await;
        let _ = self.stop_server.send(());
        let _ = self.server.await;
        if let Some((server, stop)) = self.metrics_server {
            let _ = stop.send(());
            let _ = server.await;
        }
        if let Some(sim) = self.embedded_neutron {
            sim.shutdown().await;
        }
    }

    /// Runs until the API server stops.
    pub async fn wait(self) -> anyhow::Result<()> {
        let Self {
            server, stop_server, ..
        } = self;
        server.await??;
        drop(stop_server);
        Ok(())
    }
}

/// The compute service without its API, loops or start-up recovery, for one-off
/// commands (`netcache heal`, `gc`, `audit`) beside a running service.
pub async fn offline_compute(settings: &Settings) -> anyhow::Result<Arc<Compute>> {
    let store = open_store(&settings.database).await?;
    let neutron = Arc::new(neutron_client(settings, &offline_neutron_url(settings))?);
    let config = settings.compute_config();
    let virt = Arc::new(FakeVirt::new(&config.virt));
    Compute::open(config, store, neutron, virt).await.with_context(|| {
        format!(
            "cannot open the compute service on the database {}",
            redact::url(&settings.database)
        )
    })
}

/// Neutron's URL for a one-off command: the configured one, or where a running
/// service's embedded Neutron listens.
#[must_use]
pub fn offline_neutron_url(settings: &Settings) -> String {
    match &settings.neutron.url {
        Some(url) => url.clone(),
        None => format!("http://{}", settings.neutron.embedded_listen),
    }
}

/// Opens the store, creating a SQLite file's folder if needed.
pub async fn open_store(url: &str) -> anyhow::Result<Arc<dyn netcache_store::Store>> {
    if let Some(path) = url.strip_prefix("sqlite:").filter(|p| !p.starts_with(":memory:")) {
        let path = path.trim_start_matches("//");
        let path = path.split('?').next().unwrap_or(path);
        if let Some(parent) = std::path::Path::new(path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
    }
    netcache_store::open(url)
        .await
        .with_context(|| format!("cannot open the database {}", redact::url(url)))
}

/// The Neutron client the settings describe.
pub fn neutron_client(settings: &Settings, url: &str) -> anyhow::Result<HttpNeutron> {
    Ok(HttpNeutron::new(neutron_client_config(settings, url)?)?)
}

/// The Neutron client's configuration the settings describe (its credentials
/// also get `netcache nova` its tokens for Nova's API).
pub fn neutron_client_config(settings: &Settings, url: &str) -> anyhow::Result<ClientConfig> {
    let n = &settings.neutron;
    let auth = match (&n.auth_url, &n.application_credential_id) {
        (None, _) => {
            Auth::none(Url::parse(url).with_context(|| format!("invalid configuration: neutron.url {url:?}"))?)
        }
        (Some(auth_url), Some(id)) => Auth::ApplicationCredential {
            auth_url: parse_url(auth_url, "neutron.auth_url")?,
            id: id.clone(),
            secret: n
                .application_credential_secret
                .clone()
                .context("invalid configuration: neutron.application_credential_secret is required")?,
        },
        (Some(auth_url), None) => {
            let (Some(username), Some(password), Some(project)) = (&n.username, &n.password, &n.project_name) else {
                bail!(
                    "invalid configuration: Keystone auth needs neutron.username, neutron.password and neutron.project_name (or an application credential)"
                );
            };
            Auth::Password {
                auth_url: parse_url(auth_url, "neutron.auth_url")?,
                username: username.clone(),
                password: password.clone(),
                user_domain_name: n.user_domain_name.clone(),
                project_name: project.clone(),
                project_domain_name: n.project_domain_name.clone(),
            }
        }
    };
    let mut config = ClientConfig::new(auth);
    if n.auth_url.is_some() {
        config.endpoint_override = n.url.as_deref().map(|u| parse_url(u, "neutron.url")).transpose()?;
    }
    config.timeout = Duration::from_secs_f64(n.timeout);
    config.retries = n.retries as usize;
    config.region.clone_from(&n.region);
    config.interface = n
        .interface
        .parse()
        .map_err(|e| anyhow::anyhow!("invalid configuration: neutron.interface: {e}"))?;
    Ok(config)
}

fn parse_url(text: &str, key: &str) -> anyhow::Result<Url> {
    Url::parse(text).with_context(|| format!("invalid configuration: {key} {text:?} is not a URL"))
}
