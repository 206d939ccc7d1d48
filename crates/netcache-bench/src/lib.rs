//! `netcache bench`: netcache's own figures, each beside what the embedded
//! Neutron does for the same work in the same run (ratios, since a shared
//! machine's absolute times drift). Everything runs on 127.0.0.1, in this
//! process: netcache on a fresh database (a temporary SQLite file, or a scratch
//! PostgreSQL database), the client, and the embedded Neutron unless it has a
//! process of its own (`--neutron-process`) or a real Neutron is named
//! (`--neutron-url`: every figure is then beside that Neutron's own).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::Utc;
use netcache_app::app::App;
use netcache_app::scratch_pg::ScratchDatabase;
use netcache_app::settings::Settings;
use netcache_compute::Compute;
use netcache_compute::attachment::catalog::{NetworkCatalog, Topology};
use netcache_compute::lifecycle::virt::FakeVirt;
use netcache_domain::cache::{self, CacheInputs, Observed};
use netcache_domain::change::Change;
use netcache_domain::marker::OwnershipMarker;
use netcache_domain::network_info::NetworkInfo;
use netcache_domain::neutron::Port;
use netcache_domain::server::{NetworkRequests, Server, VmState};
use netcache_domain::vif::{PortDetails, VifOrigin, VifRecord, VifState};
use netcache_domain::{DeploymentId, HostName, IntentId, NetworkId, ProjectId, ServerId};
use netcache_neutron::wire::PortBody;
use reqwest::Method;
use serde_json::{Value, json};

use self::neutron::Neutron;

mod neutron;

const PROJECT: &str = "bench";
const IMAGE: &str = netcache_api::images::IMAGES[0].id;
/// Requests timed per latency figure.
const SAMPLES: usize = 20;

/// What to measure (`netcache bench`'s arguments).
#[derive(clap::Args, Debug)]
pub struct BenchOptions {
    /// Server counts of the heal and list figures.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    pub servers: Vec<usize>,
    /// Boots per concurrency level (1, 8, 32).
    #[arg(long, default_value_t = 200)]
    pub boots: usize,
    /// A PostgreSQL admin URL: measure there too, on a scratch database.
    #[arg(long)]
    pub postgres: Option<String>,
    /// With --postgres, measure on PostgreSQL only (the scale runs).
    #[arg(long, requires = "postgres")]
    pub postgres_only: bool,
    /// Run the embedded Neutron in a process of its own, so RSS is netcache's.
    #[arg(long)]
    pub neutron_process: bool,
    /// Measure against this running Neutron (noauth; a scratch one: the bench's
    /// networks and ports stay there) instead of the embedded one.
    #[arg(long)]
    pub neutron_url: Option<String>,
}

/// One database to measure on, and what to drop afterwards.
struct Database {
    label: &'static str,
    url: String,
    scratch: Option<ScratchDatabase>,
    _dir: Option<tempfile::TempDir>,
}

impl Database {
    async fn fresh(postgres: Option<&str>, run: usize) -> anyhow::Result<Self> {
        match postgres {
            None => {
                let dir = tempfile::tempdir()?;
                let url = format!("sqlite:{}", dir.path().join("bench.db").display());
                Ok(Self {
                    label: "SQLite",
                    url,
                    scratch: None,
                    _dir: Some(dir),
                })
            }
            Some(admin) => {
                let scratch = ScratchDatabase::create(admin, &format!("bench_{run}")).await?;
                Ok(Self {
                    label: "PostgreSQL",
                    url: scratch.url.clone(),
                    scratch: Some(scratch),
                    _dir: None,
                })
            }
        }
    }

    /// Statistics for the loaded tables (PostgreSQL), as after a bulk import.
    async fn analyze(&self) -> anyhow::Result<()> {
        match &self.scratch {
            Some(scratch) => scratch.analyze().await,
            None => Ok(()),
        }
    }

    async fn drop(self) -> anyhow::Result<()> {
        if let Some(scratch) = self.scratch {
            scratch.drop_database().await?;
        }
        Ok(())
    }
}

/// netcache and its Neutron, started for one measurement.
struct Rig {
    sim: Neutron,
    app: App,
    /// Processes (nodes with hosts of their own) on the same database and Neutron.
    others: Vec<App>,
    settings: Settings,
    http: reqwest::Client,
    private: String,
}

impl Rig {
    async fn start(database: &Database, options: &BenchOptions) -> anyhow::Result<Self> {
        let http = reqwest::Client::new();
        let sim = Neutron::start(options.neutron_process, options.neutron_url.as_deref(), http.clone()).await?;
        // A /12, so a fill of 100,000 servers and the boots never run out of addresses.
        let (_, network) = sim
            .request(
                Method::POST,
                "/v2.0/networks",
                Some(&json!({"network": {"name": "bench", "project_id": PROJECT}})),
            )
            .await?;
        let private = network["network"]["id"].as_str().unwrap_or_default().to_owned();
        let (status, subnet) = sim
            .request(
                Method::POST,
                "/v2.0/subnets",
                Some(&json!({"subnet": {"network_id": private, "cidr": "10.0.0.0/12", "ip_version": 4, "project_id": PROJECT}})),
            )
            .await?;
        if status != 201 {
            bail!("cannot create the bench subnet: {status} {subnet}");
        }
        let mut settings = Settings {
            listen: "127.0.0.1:0".parse()?,
            database: database.url.clone(),
            ..Settings::default()
        };
        settings.neutron.url = Some(sim.url().to_owned());
        PROJECT.clone_into(&mut settings.api.default_project);
        settings.heal.interval = 0.0;
        settings.gc.interval = 0.0;
        settings.retention.interval = 0.0;
        settings.quota.unlimit_servers();
        let app = App::start(&settings).await?;
        Ok(Self {
            sim,
            app,
            others: Vec::new(),
            settings,
            http,
            private,
        })
    }

    /// Starts another process on the rig's database and Neutron, with a host of its own.
    async fn add_process(&mut self) -> anyhow::Result<()> {
        let mut settings = self.settings.clone();
        settings.compute.hosts = vec![format!("bench-host-{}", self.others.len() + 2)];
        self.others.push(App::start(&settings).await?);
        Ok(())
    }

    /// A boot request for a server with one port on the bench's network.
    fn boot_body(&self) -> Value {
        json!({"server": {"name": "b", "flavorRef": "1", "imageRef": IMAGE, "networks": [{"uuid": self.private}]}})
    }

    fn processes(&self) -> impl Iterator<Item = &App> {
        std::iter::once(&self.app).chain(&self.others)
    }

    async fn stop(self) {
        for other in self.others {
            other.shutdown().await;
        }
        self.app.shutdown().await;
        self.sim.stop().await;
    }

    /// `n` servers with one port each, recorded as a boot leaves them (the
    /// ports made a thousand to a bulk create; a thousand servers' rows, VIF
    /// records and caches, built from the created ports as a boot builds its
    /// own, in one commit), then one heal pass, which finds each cache right
    /// and records so a batch at a time, as the loop leaves servers it swept.
    /// Between the two, `ANALYZE` on PostgreSQL, as OPERATIONS.md asks after a
    /// bulk import.
    async fn fill(&self, database: &Database, n: usize) -> anyhow::Result<Vec<ServerId>> {
        const CHUNK: usize = 1000;
        let started = Instant::now();
        let now = Utc::now();
        let topology = self.topology().await?;
        let mut ids = Vec::with_capacity(n);
        for first in (0..n).step_by(CHUNK) {
            let chunk: Vec<ServerId> = (first..n.min(first + CHUNK))
                .map(|_| ServerId(uuid::Uuid::new_v4()))
                .collect();
            let ports: Vec<Value> = chunk
                .iter()
                .map(|id| {
                    json!({"network_id": self.private, "project_id": PROJECT, "device_id": id.to_string(),
                        "device_owner": "compute:nova", "binding:host_id": "host1"})
                })
                .collect();
            let (status, created) = self
                .sim
                .request(Method::POST, "/v2.0/ports", Some(&json!({ "ports": ports })))
                .await?;
            if status != 201 {
                bail!("Neutron refused a bulk create: {status} {created}");
            }
            let created: Vec<PortBody> = serde_json::from_value(created["ports"].clone())?;
            if created.len() != chunk.len() {
                bail!("a bulk create of {} ports made {}", chunk.len(), created.len());
            }
            let mut changes = Vec::with_capacity(3 * chunk.len());
            for (i, (id, port)) in chunk.iter().zip(created).enumerate() {
                changes.push(Change::InsertServer(server(*id, first + i, now)));
                changes.extend(self.booted_port(*id, Port::try_from(port)?, &topology));
            }
            self.app.compute.store().commit(changes).await?;
            ids.extend(chunk);
        }
        database.analyze().await?;
        let loaded = started.elapsed();
        let pass = self.app.compute.heal().await?;
        println!(
            "  fill: {:.1} s to load (and ANALYZE on PostgreSQL), {:.1} s for the heal pass that records the caches right ({} caches written, none if the loader's caches are as heal builds them)",
            loaded.as_secs_f64(),
            (started.elapsed() - loaded).as_secs_f64(),
            pass.cache_writes
        );
        Ok(ids)
    }

    /// The bench network's topology, as the boots' catalog holds it.
    async fn topology(&self) -> anyhow::Result<Topology> {
        let catalog = NetworkCatalog::new(Duration::from_secs(3600));
        let network_id = NetworkId::from(self.private.as_str());
        Ok(catalog
            .topology(self.app.compute.neutron().as_ref(), &[network_id])
            .await?)
    }

    /// A new server's VIF record of `port` and its cache, as its boot commits them
    /// (the record's insert moves the empty cache to generation 1).
    fn booted_port(&self, server_id: ServerId, port: Port, topology: &Topology) -> [Change; 2] {
        let vif = VifRecord {
            port_id: port.id.clone(),
            server_id,
            position: 0,
            origin: VifOrigin::Created,
            state: VifState::Attached,
            intent_id: None,
            network_id: port.network_id.clone(),
            requested_fixed_ip: None,
            tag: None,
            details: Some(PortDetails::of(&port)),
        };
        let observed = HashMap::from([(
            port.id.clone(),
            Observed::Present {
                port: Arc::new(port),
                floating_ips: Vec::new(),
            },
        )]);
        let outcome = cache::build_network_info(&CacheInputs {
            server_id,
            vifs: std::slice::from_ref(&vif),
            previous: &NetworkInfo::default(),
            observed: &observed,
            networks: &topology.networks,
            subnets: &topology.subnets,
            options: &self.app.compute.config().cache,
        });
        [
            Change::InsertVif(vif),
            Change::WriteCache {
                server_id,
                info: outcome.info,
                expected_generation: 1,
            },
        ]
    }

    async fn get(&self, url: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let response = self.http.get(url).send().await?;
        let status = response.status();
        let body: Value = response.json().await?;
        if !status.is_success() {
            bail!("GET {url}: {status} {body}");
        }
        Ok(started.elapsed())
    }
}

fn server(id: ServerId, i: usize, now: chrono::DateTime<Utc>) -> Server {
    Server {
        id,
        name: format!("bench-{i}"),
        project_id: ProjectId::from(PROJECT),
        user_id: "bench".into(),
        host: Some(HostName::from("host1")),
        availability_zone: "nova".into(),
        vm_state: VmState::Active,
        task_state: None,
        fault: None,
        flavor_ref: "1".into(),
        flavor: netcache_domain::flavor::built_in_snapshot("1"),
        image_ref: IMAGE.into(),
        metadata: BTreeMap::new(),
        access_ip_v4: None,
        access_ip_v6: None,
        requested_networks: NetworkRequests::None,
        key_name: None,
        security_groups: vec![],
        locked_by: None,
        attributes: Default::default(),
        tried_hosts: vec![HostName::from("host1")],
        created_at: now + chrono::TimeDelta::microseconds(i64::try_from(i).unwrap_or(i64::MAX)),
        updated_at: now,
        launched_at: Some(now),
        deleted_at: None,
        generation: 0,
    }
}

/// p50 and p99 of some durations, in milliseconds.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |p: usize| {
        let i = (samples.len() * p / 100).min(samples.len().saturating_sub(1));
        samples.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    (at(50), at(99))
}

fn median<T: PartialOrd + Copy + Default>(mut samples: Vec<T>) -> T {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// `ours` over `theirs`, for a `theirs` that may round to zero.
fn ratio(ours: f64, theirs: f64) -> f64 {
    ours / theirs.max(f64::EPSILON)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Resident memory of this process, in MB (Linux).
fn rss_mb() -> f64 {
    rss_mb_of("/proc/self/status")
}

/// Resident memory of the process whose `/proc/PID/status` this is, in MB.
fn rss_mb_of(status: &str) -> f64 {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs `total` calls of `call` with `concurrency` at once; returns each call's
/// latency and the wall time of the whole.
async fn concurrently<F, Fut>(total: usize, concurrency: usize, call: F) -> anyhow::Result<(Vec<Duration>, Duration)>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<Duration>> + Send,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (call, next) = (Arc::clone(&call), Arc::clone(&next));
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                latencies.push(call().await?);
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    for worker in workers {
        latencies.extend(worker.await??);
    }
    Ok((latencies, started.elapsed()))
}

/// Heal passes the bench times: every cache has its turn to be rebuilt once in
/// ten.
const HEAL_PASSES: u32 = 10;

/// Heal pass vs the same port lists sent raw; Neutron calls and statements.
/// Ten passes, each followed at once by the raw lists, so that each ratio
/// compares two runs a moment apart (this machine's speed drifts within a
/// run). The first is another process's (a one-off `netcache heal`, or the
/// service's first after a restart), with none of the serving process's
/// memory; the nine others the serving process's. Each rebuilds the tenth of
/// the caches whose turn it is and skips the others a pass found right (which
/// is recorded beside them). Printed: the first pass's ratio, the others'
/// median ratio, and the ten passes' time over their raw lists' time.
async fn heal(rig: &Rig, ids: &[ServerId]) -> anyhow::Result<()> {
    let compute = &rig.app.compute;
    let store = compute.store();
    let config = compute.config().clone();
    let virt = Arc::new(FakeVirt::new(&config.virt));
    let another = Compute::open(config, Arc::clone(store), Arc::clone(compute.neutron()), virt).await?;
    // (heal pass, raw lists right after it), and statements, of each pass.
    let mut passes = Vec::new();
    let mut calls = None;
    for pass in 0..HEAL_PASSES {
        let healer = if pass == 0 { &another } else { compute };
        rig.sim.reset_calls().await?;
        let before = store.queries_sent();
        let started = Instant::now();
        healer.heal().await?;
        let took = started.elapsed();
        let statements = store.queries_sent() - before;
        calls = rig.sim.calls().await?;
        passes.push((took, raw_lists(rig, ids).await?, statements));
    }
    let (first, others) = passes.split_first().context("no heal pass")?;
    let (took, raw) = passes
        .iter()
        .fold((Duration::ZERO, Duration::ZERO), |(t, r), (took, raw, _)| {
            (t + *took, r + *raw)
        });
    let median_took = median(others.iter().map(|(took, ..)| *took).collect());
    let median_ratio = median(others.iter().map(|(took, raw, _)| ratio(ms(*took), ms(*raw))).collect());
    let others_statements = median(others.iter().map(|(.., statements)| *statements).collect());
    let calls = calls.map_or_else(|| "uncounted".to_owned(), |n| n.to_string());
    println!(
        "  heal pass: {:.1} ms another process's first, {:.1} ms the median of the serving process's, {:.1} ms the mean of 10 passes; the same port lists raw, sent after each pass: {:.1} ms; ratios {:.2}, {:.2}, {:.2}; {calls} Neutron calls; SQL statements {} and {others_statements}",
        ms(first.0),
        ms(median_took),
        ms(took / HEAL_PASSES),
        ms(median(passes.iter().map(|(_, raw, _)| *raw).collect())),
        ratio(ms(first.0), ms(first.1)),
        median_ratio,
        ratio(ms(took), ms(raw)),
        first.2,
    );
    Ok(())
}

/// The heal pass's port lists, one `GET /v2.0/ports?device_id=…` per 100
/// servers, each body parsed as JSON.
async fn raw_lists(rig: &Rig, ids: &[ServerId]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for chunk in ids.chunks(100) {
        let query: Vec<String> = chunk.iter().map(|id| format!("device_id={id}")).collect();
        rig.get(&format!("{}/v2.0/ports?{}", rig.sim.url(), query.join("&")))
            .await?;
    }
    Ok(started.elapsed())
}

/// `/servers/detail?limit=1000` vs Neutron listing 1,000 ports;
/// memory after 4 and 32 pages at once.
async fn detail(rig: &Rig) -> anyhow::Result<()> {
    let page = format!("{}/v2.1/servers/detail?limit=1000", rig.app.api_url());
    let ports = format!("{}/v2.0/ports?limit=1000", rig.sim.url());
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..SAMPLES {
        ours.push(rig.get(&page).await?);
        theirs.push(rig.get(&ports).await?);
    }
    let ((p50, p99), (n50, n99)) = (percentiles(ours), percentiles(theirs));
    println!(
        "  /servers/detail?limit=1000: p50 {p50:.1} ms, p99 {p99:.1} ms; Neutron's 1,000 ports: p50 {n50:.1} ms, p99 {n99:.1} ms; p50 ratio {:.2}",
        ratio(p50, n50)
    );
    for at_once in [4, 32] {
        let http = rig.http.clone();
        let url = page.clone();
        concurrently(at_once, at_once, move || {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let started = Instant::now();
                http.get(&url).send().await?.bytes().await?;
                Ok(started.elapsed())
            }
        })
        .await?;
        println!(
            "  RSS after {at_once} detail pages at once: {:.0} MB ({})",
            rss_mb(),
            rig.sim.rss_note()
        );
    }
    Ok(())
}

/// Boots to ACTIVE at each concurrency vs Neutron's raw creates.
async fn boots(rig: &Rig, total: usize) -> anyhow::Result<()> {
    for concurrency in [1, 8, 32] {
        let http = rig.http.clone();
        let url = format!("{}/v2.1/servers", rig.app.api_url());
        let body = rig.boot_body();
        let store = rig.app.compute.store();
        let (commits_before, transactions_before, statements_before) =
            (store.commits_made(), store.transactions_made(), store.queries_sent());
        let started = Instant::now();
        let (accepted, _) = concurrently(total, concurrency, move || {
            let (http, url, body) = (http.clone(), url.clone(), body.clone());
            async move { post(&http, &url, &body).await }
        })
        .await?;
        rig.app.compute.settle().await;
        let boot_rate = total as f64 / started.elapsed().as_secs_f64();
        let per_boot = |n: u64| n as f64 / total as f64;
        let commits = per_boot(store.commits_made() - commits_before);
        let transactions = per_boot(store.transactions_made() - transactions_before);
        let statements = per_boot(store.queries_sent() - statements_before);

        let (bare_rate, created) = raw_creates(rig, total, concurrency, false).await?;
        let (bound_rate, _) = raw_creates(rig, total, concurrency, true).await?;
        let ((b50, b99), (c50, c99)) = (percentiles(accepted), percentiles(created));
        println!(
            "  concurrency {concurrency:>2}: {boot_rate:.0} boots/s to ACTIVE (POST p50 {b50:.1} ms, p99 {b99:.1} ms, {commits:.1} commits in {transactions:.2} transactions, {statements:.0} statements per boot); \
             Neutron {bare_rate:.0} bare creates/s (p50 {c50:.1} ms, p99 {c99:.1} ms), {bound_rate:.0}/s as a boot's (bound, tagged); ratios {:.3} and {:.3}",
            ratio(boot_rate, bare_rate),
            ratio(boot_rate, bound_rate)
        );
    }
    Ok(())
}

/// `total` port creates sent straight to Neutron at `concurrency`: bare (a
/// network and a project), or as a boot sends them (a device id, owner and
/// binding host, which a real Neutron binds, and the ownership marker's tags);
/// their rate, and each one's latency.
async fn raw_creates(
    rig: &Rig,
    total: usize,
    concurrency: usize,
    as_a_boot: bool,
) -> anyhow::Result<(f64, Vec<Duration>)> {
    let http = rig.http.clone();
    let url = format!("{}/v2.0/ports", rig.sim.url());
    let private = rig.private.clone();
    let (created, wall) = concurrently(total, concurrency, move || {
        let mut port = json!({"network_id": private, "project_id": PROJECT});
        if as_a_boot {
            let marker = OwnershipMarker {
                deployment: DeploymentId::from("bench"),
                intent: IntentId(uuid::Uuid::new_v4()),
            };
            port["device_id"] = json!(ServerId(uuid::Uuid::new_v4()).to_string());
            port["device_owner"] = json!("compute:nova");
            port["binding:host_id"] = json!("host1");
            port["tags"] = json!(marker.tags());
        }
        let (http, url, body) = (http.clone(), url.clone(), json!({ "port": port }));
        async move { post(&http, &url, &body).await }
    })
    .await?;
    Ok((total as f64 / wall.as_secs_f64(), created))
}

/// Boots to ACTIVE at concurrency 8 through 1, 2 and 3 processes sharing the
/// PostgreSQL database (each request to the next process in turn), each
/// process's figure beside one process's.
async fn boots_by_processes(database: &Database, options: &BenchOptions) -> anyhow::Result<()> {
    let mut rig = Rig::start(database, options).await?;
    let mut one_process = None;
    for processes in 1..=3 {
        while rig.processes().count() < processes {
            rig.add_process().await?;
        }
        let urls: Vec<String> = rig
            .processes()
            .map(|app| format!("{}/v2.1/servers", app.api_url()))
            .collect();
        let http = rig.http.clone();
        let body = rig.boot_body();
        let turn = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let (accepted, _) = concurrently(options.boots, 8, move || {
            let url = urls[turn.fetch_add(1, Ordering::Relaxed) % urls.len()].clone();
            let (http, body) = (http.clone(), body.clone());
            async move { post(&http, &url, &body).await }
        })
        .await?;
        for app in rig.processes() {
            app.compute.settle().await;
        }
        let rate = options.boots as f64 / started.elapsed().as_secs_f64();
        let one = *one_process.get_or_insert(rate);
        let (p50, p99) = percentiles(accepted);
        println!(
            "  {processes} process(es), concurrency 8: {rate:.0} boots/s to ACTIVE (POST p50 {p50:.1} ms, p99 {p99:.1} ms); {:.2}× one process's",
            ratio(rate, one)
        );
    }
    rig.stop().await;
    Ok(())
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let response = http.post(url).json(body).send().await?;
    let status = response.status();
    let answer = response.text().await?;
    if !status.is_success() {
        bail!("POST {url}: {status} {answer}");
    }
    Ok(started.elapsed())
}

/// Runs every measurement on SQLite, then on PostgreSQL if asked.
pub async fn run(options: BenchOptions) -> anyhow::Result<()> {
    println!(
        "netcache bench: {} cores, {}",
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        Utc::now().format("%Y-%m-%d %H:%M UTC")
    );
    let mut backends = Vec::new();
    if !options.postgres_only {
        backends.push(None);
    }
    if let Some(admin) = &options.postgres {
        backends.push(Some(admin.as_str()));
    }
    let mut run = 0;
    for postgres in backends {
        for &n in &options.servers {
            run += 1;
            let database = Database::fresh(postgres, run).await?;
            println!("{} with {n} servers:", database.label);
            let rig = Rig::start(&database, &options).await.context("cannot start netcache")?;
            let ids = rig.fill(&database, n).await?;
            println!("  RSS after the fill and its heal pass: {:.0} MB", rss_mb());
            heal(&rig, &ids).await?;
            detail(&rig).await?;
            rig.stop().await;
            database.drop().await?;
        }
        run += 1;
        let database = Database::fresh(postgres, run).await?;
        println!("{} boots, {} per concurrency:", database.label, options.boots);
        let rig = Rig::start(&database, &options).await?;
        boots(&rig, options.boots).await?;
        rig.stop().await;
        database.drop().await?;
        if postgres.is_some() {
            run += 1;
            let database = Database::fresh(postgres, run).await?;
            println!(
                "PostgreSQL boots through several processes, {} per count:",
                options.boots
            );
            boots_by_processes(&database, &options).await?;
            database.drop().await?;
        }
    }
    Ok(())
}
