//! `netcache chaos`: a seeded, bounded workload with faults against real netcache
//! processes, then an invariant check of everything it saw (issue 9).
//!
//! One run: start the topology ([`topology`]: Neutron as a process of its own, N
//! `serve` processes on one database) → run the workload ([`workload`]) while the
//! sampler ([`sampler`]) reads the API and Neutron, Neutron faults come and go
//! ([`faults`]) and processes are killed and restarted ([`kills`]) → stop faults and
//! kills, settle, heal and GC past the grace ([`settle`]) → check ([`checker`], pure)
//! → print the summary ([`report`]). Exit 0 when no invariant is violated, 1 when one
//! is (or the harness failed); the seed replays the run's choices.

pub mod api;
pub mod checker;
pub mod faults;
pub mod history;
pub mod kills;
pub mod model;
pub mod neutron;
pub mod proxy;
pub mod recorder;
pub mod report;
pub mod sampler;
pub mod settle;
pub mod topology;
pub mod workload;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use tokio::sync::{Mutex, watch};
use tracing::info;

use self::checker::CheckOptions;
use self::faults::{FaultKind, FaultPlan, Injector};
use self::recorder::Recorder;
use self::topology::{Topology, TopologyConfig};

#[derive(Args, Clone, Debug)]
pub struct ChaosArgs {
    /// Seed of every choice (operations, targets, faults, kills); random if unset.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Operations in the workload.
    #[arg(long, default_value_t = 200)]
    pub ops: u64,
    /// Operations in flight at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Live servers beyond which a boot becomes a delete.
    #[arg(long, default_value_t = 50)]
    pub max_servers: usize,
    /// Operations started per second (0: as fast as the workers go).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Weights over the default mix, e.g. `delete=20,plant-foreign=0` (names: boot-auto,
    /// boot-network, boot-multi, boot-fixed-ip, boot-user-port, delete, attach-network,
    /// attach-port, detach, event-changed, event-vif-deleted, plant-foreign, heal, gc,
    /// disconnect).
    #[arg(long, default_value = "")]
    pub mix: String,
    /// netcache `serve` processes; 2 or more share the PostgreSQL of --database.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// PostgreSQL admin URL (postgres://user@host:port/db): a scratch database
    /// `netcache_chaos_<seed>_<pid>` is created on that server and dropped at the end.
    /// Without it, one process runs on a fresh SQLite file.
    #[arg(long)]
    pub database: Option<String>,
    /// kill -9 this many times a seeded process at seeded points, restarting it.
    #[arg(long, default_value_t = 0)]
    pub kills: usize,
    /// A real Neutron (faults go through the built-in fault proxy); default: the
    /// embedded Neutron as a process of its own.
    #[arg(long)]
    pub neutron_url: Option<String>,
    /// Neutron fault kinds to draw from (comma-separated): commit-then-drop,
    /// delayed-commit, commit-then-delay, error-500, error-503, reset, latency,
    /// unreachable. Default: all.
    #[arg(long, value_delimiter = ',')]
    pub faults: Vec<FaultKind>,
    /// No Neutron faults.
    #[arg(long, conflicts_with = "faults")]
    pub no_faults: bool,
    /// compute.spawn_failure_rate of every process (forces reschedules).
    #[arg(long, default_value_t = 0.1)]
    pub spawn_failure_rate: f64,
    /// heal.interval of the processes, seconds (0: only the workload's passes).
    #[arg(long, default_value_t = 2.0)]
    pub heal_interval: f64,
    /// gc.interval of the processes, seconds (0: only the workload's passes).
    #[arg(long, default_value_t = 3.0)]
    pub gc_interval: f64,
    /// gc.grace, seconds.
    #[arg(long, default_value_t = 1.0)]
    pub gc_grace: f64,
    /// gc.min_sightings.
    #[arg(long, default_value_t = 2)]
    pub gc_min_sightings: u32,
    /// neutron.timeout of the processes, seconds.
    #[arg(long, default_value_t = 3.0)]
    pub neutron_timeout: f64,
    /// Run the embedded Neutron without tag-ports-during-bulk-creation (markers in names).
    #[arg(long)]
    pub without_tag_extension: bool,
    /// TOML file merged into every generated serve config: its tables merge key by key
    /// into the harness's (e.g. `[operations]`, or `[compute]` with a test hook of a
    /// `--features testing` build), its values win.
    #[arg(long)]
    pub serve_config_extra: Option<PathBuf>,
    /// Milliseconds between samples of the API and Neutron.
    #[arg(long, default_value_t = 500)]
    pub sample_interval_ms: u64,
    /// Seconds to wait for servers to leave BUILD and task states after the workload.
    #[arg(long, default_value_t = 120)]
    pub settle_timeout: u64,
    /// Seconds a client waits for one answer.
    #[arg(long, default_value_t = 60)]
    pub request_timeout: u64,
    /// Statuses ≥ 500 the checker allows while Neutron faults are injected.
    #[arg(long, value_delimiter = ',', default_value = "502,503,504")]
    pub allowed_5xx: Vec<u16>,
    /// Write the history (JSON lines) here.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Keep the work directory (configs, logs, SQLite file) and the PostgreSQL database.
    #[arg(long)]
    pub keep: bool,
    /// Project of the workload.
    #[arg(long, default_value = "demo")]
    pub project: String,
}

impl ChaosArgs {
    fn fault_kinds(&self) -> Vec<FaultKind> {
        match (self.no_faults, self.faults.is_empty()) {
            (true, _) => Vec::new(),
            (false, true) => FaultKind::ALL.to_vec(),
            (false, false) => self.faults.clone(),
        }
    }

    fn topology_config(&self, seed: u64) -> anyhow::Result<TopologyConfig> {
        anyhow::ensure!(self.processes >= 1, "--processes must be at least 1");
        let extra_toml = self
            .serve_config_extra
            .as_ref()
            .map(|p| std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display())))
            .transpose()?;
        Ok(TopologyConfig {
            processes: self.processes,
            database: self.database.clone(),
            neutron_url: self.neutron_url.clone(),
            seed,
            keep: self.keep,
            project: self.project.clone(),
            without_tag_extension: self.without_tag_extension,
            spawn_failure_rate: self.spawn_failure_rate,
            heal_interval: self.heal_interval,
            gc_interval: self.gc_interval,
            gc_grace: self.gc_grace,
            gc_min_sightings: self.gc_min_sightings,
            neutron_timeout: self.neutron_timeout,
            neutron_retries: 1,
            extra_toml,
            start_timeout: Duration::from_secs(60),
        })
    }
}

/// Runs the chaos run; returns the exit code (0 clean, 1 violations).
pub async fn run(args: ChaosArgs) -> anyhow::Result<i32> {
    let seed = args
        .seed
        .unwrap_or_else(|| uuid::Uuid::new_v4().as_u64_pair().0 % 1_000_000_000);
    let mix: workload::Mix = args.mix.parse()?;
    let mut command_line: Vec<String> = std::env::args().collect();
    if args.seed.is_none() {
        command_line.push(format!("--seed {seed}"));
    }
    info!(seed, "netcache chaos: seed {seed}");
    let mut topology = Topology::start(args.topology_config(seed)?).await?;
    let injector = Arc::new(match (topology.proxy.take(), &topology.sim_url) {
        (Some(proxy), _) => Injector::Proxy(proxy),
        (None, Some(url)) => Injector::sim(url)?,
        (None, None) => Injector::None,
    });
    let topology = Arc::new(Mutex::new(topology));
    let run = Run::new(&args, seed, topology.clone(), injector).await;
    let result = match run {
        Ok(run) => run.execute(mix, command_line.join(" ")).await,
        Err(e) => Err(e),
    };
    topology.lock().await.shutdown().await;
    result
}

/// What every phase of a run shares.
struct Run<'a> {
    args: &'a ChaosArgs,
    seed: u64,
    topology: Arc<Mutex<Topology>>,
    injector: Arc<Injector>,
    rec: Arc<Recorder>,
    api: api::Api,
    neutron: neutron::Neutron,
    one_off: topology::OneOff,
    label: String,
}

const ONE_OFF_TIMEOUT: Duration = Duration::from_secs(120);

impl<'a> Run<'a> {
    async fn new(
        args: &'a ChaosArgs,
        seed: u64,
        topology: Arc<Mutex<Topology>>,
        injector: Arc<Injector>,
    ) -> anyhow::Result<Self> {
        let rec = Arc::new(Recorder::new());
        let topo = topology.lock().await;
        let request_timeout = Duration::from_secs(args.request_timeout);
        let api = api::Api::new(topo.addrs(), &args.project, request_timeout, rec.clone())?;
        let label = format!(
            "{} process(es) on {} — Neutron: {} — {} ops, concurrency {}, {} kill(s) — work dir {}",
            args.processes,
            if args.database.is_some() {
                "PostgreSQL"
            } else {
                "SQLite"
            },
            args.neutron_url.as_deref().unwrap_or("embedded (own process)"),
            args.ops,
            args.concurrency,
            args.kills,
            topo.work_dir().display()
        );
        let (neutron, one_off) = (topo.neutron.clone(), topo.one_off());
        drop(topo);
        Ok(Self {
            args,
            seed,
            topology,
            injector,
            rec,
            api,
            neutron,
            one_off,
            label,
        })
    }

    async fn execute(self, mix: workload::Mix, command_line: String) -> anyhow::Result<i32> {
        let model = Arc::new(std::sync::Mutex::new(model::Model::default()));
        let (sampler_stop, sampler_stopped) = watch::channel(false);
        let sampler = tokio::spawn(
            sampler::Sampler {
                seed: self.seed,
                api: self.api.clone(),
                neutron: self.neutron.clone(),
                rec: self.rec.clone(),
                model: model.clone(),
                interval: Duration::from_millis(self.args.sample_interval_ms),
                interfaces_per_round: 6,
            }
            .run(sampler_stopped),
        );
        let skipped = self.workload(mix, model).await?;
        let settle = settle::Settle {
            api: &self.api,
            neutron: &self.neutron,
            one_off: &self.one_off,
            rec: &self.rec,
            timeout: Duration::from_secs(self.args.settle_timeout),
            late_commits: Duration::from_millis(faults::MAX_DELAY_MS)
                + Duration::from_secs_f64(self.args.neutron_timeout),
            gc_grace: Duration::from_secs_f64(self.args.gc_grace),
            one_off_timeout: ONE_OFF_TIMEOUT,
        };
        let settled = settle.wait_quiet().await;
        let _ = sampler_stop.send(true);
        let _ = sampler.await;
        let planted = self.rec.snapshot().planted().into_keys().collect();
        let before_gc = settle.collect_garbage(&planted).await;
        let snapshot = settle
            .snapshot(before_gc)
            .await
            .context("could not take the final snapshot")?;
        let mut data = self.rec.snapshot();
        data.snapshot = snapshot;
        let options = CheckOptions {
            allowed_5xx: self.args.allowed_5xx.iter().copied().collect(),
        };
        let report = checker::check(&data, &options);
        let ctx = report::Context {
            seed: self.seed,
            command_line: &command_line,
            topology: self.label.clone(),
            skipped,
            settled,
        };
        report::print_summary(&ctx, &data, &report);
        report::print_violations(&ctx, &data, &report);
        if let Some(path) = &self.args.history {
            report::write_history(path, &data, &report).with_context(|| format!("cannot write {}", path.display()))?;
            println!("history: {}", path.display());
        }
        Ok(i32::from(!report.is_clean()))
    }

    /// The workload with faults and kills; when it is done, faults are cleared and
    /// every process runs. Returns the operations that found no target.
    async fn workload(&self, mix: workload::Mix, model: Arc<std::sync::Mutex<model::Model>>) -> anyhow::Result<u64> {
        let args = self.args;
        let networks = self.neutron.networks(&args.project).await?;
        let (stop, stopped) = watch::channel(false);
        let (progress, progress_rx) = watch::channel(0u64);
        let slack = Duration::from_secs_f64(args.neutron_timeout * 3.0)
            + Duration::from_millis(faults::MAX_DELAY_MS)
            + Duration::from_secs(2);
        let plan = FaultPlan {
            seed: self.seed,
            kinds: args.fault_kinds(),
            slack,
        };
        let fault_task = tokio::spawn(faults::run(
            plan,
            self.injector.clone(),
            self.rec.clone(),
            stopped.clone(),
        ));
        let kill_task = tokio::spawn(kills::run(
            self.seed,
            kills::schedule(self.seed, args.kills, args.ops, args.processes),
            self.topology.clone(),
            self.api.clone(),
            self.rec.clone(),
            progress_rx,
            stopped,
        ));
        let work = Arc::new(workload::Workload {
            seed: self.seed,
            ops: args.ops,
            concurrency: args.concurrency,
            rate: args.rate,
            mix,
            api: self.api.clone(),
            neutron: self.neutron.clone(),
            networks,
            project: args.project.clone(),
            one_off: self.one_off.clone(),
            rec: self.rec.clone(),
            model,
            progress,
            one_off_timeout: ONE_OFF_TIMEOUT,
            max_servers: args.max_servers,
            skipped: AtomicU64::new(0),
        });
        info!(ops = args.ops, "workload started");
        work.clone().run().await;
        info!("workload done; stopping faults and kills");
        let _ = stop.send(true);
        let _ = kill_task.await;
        let _ = fault_task.await;
        self.injector.set(Vec::new()).await?;
        self.topology.lock().await.ensure_all_up().await?;
        for process in 0..self.api.processes() {
            self.api.set_down(process, false);
        }
        Ok(work.skipped.load(Ordering::Relaxed))
    }
}
