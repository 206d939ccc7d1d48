//! `netcache`: the compute side's source of truth for port attachments.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use netcache_app::app::App;
use netcache_app::client::{self, ApiClient, Output, Progress};
use netcache_app::settings::Settings;
use serde_json::json;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "netcache",
    version,
    about = "Keeps which Neutron ports are attached to which servers — netcache is the source of truth."
)]
struct Cli {
    /// Log to stderr (-v info, -vv debug, -vvv trace). One-off commands log
    /// nothing without it unless NETCACHE_LOG or RUST_LOG is set; `serve`,
    /// `neutron-sim` and `chaos` log at info.
    #[arg(long, short, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// The log filter: NETCACHE_LOG, else RUST_LOG, else `-v`, else the
    /// command's default. `None` is no logging at all.
    fn log_filter(&self) -> Option<EnvFilter> {
        for var in ["NETCACHE_LOG", "RUST_LOG"] {
            if let Ok(filter) = EnvFilter::try_from_env(var) {
                return Some(filter);
            }
        }
        let level = match self.verbose {
            0 if self.command.runs_until_stopped() => "info",
            0 => return None,
            1 => "info",
            2 => "debug",
            _ => "trace",
        };
        Some(EnvFilter::new(level))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the compute API and hosts, with the embedded Neutron unless neutron.url is set.
    Serve(ServeArgs),
    /// Run the embedded Neutron on its own.
    NeutronSim(SimArgs),
    /// Run the seed scenario end to end and show the ghost port.
    Demo,
    /// One heal pass over every server, now.
    Heal(OpsArgs),
    /// One garbage-collection pass, now.
    Gc {
        #[command(flatten)]
        ops: OpsArgs,
        /// Report what would be deleted or unbound; do nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Purge servers deleted before a date, with their cache, intents and actions
    /// (never one still watched for ghosts; needs no Neutron).
    Purge {
        #[command(flatten)]
        ops: OpsArgs,
        /// `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time.
        #[arg(long, value_parser = netcache_app::ops::parse_before)]
        before: chrono::DateTime<chrono::Utc>,
        /// Count what would be purged; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Measure netcache beside the embedded Neutron (heal, lists, boots, memory).
    Bench(netcache_bench::BenchOptions),
    /// An existing Nova cloud: find, prove and clean up the ghost ports Nova makes.
    Nova {
        #[command(flatten)]
        ops: OpsArgs,
        #[command(subcommand)]
        command: NovaCommand,
    },
    /// Drift report; exits 0 when clean, 2 on drift, 1 on error.
    Audit {
        #[command(flatten)]
        ops: OpsArgs,
        #[arg(long)]
        json: bool,
    },
    /// Servers: list, show, create, delete.
    Server {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: ServerCommand,
    },
    /// Interfaces of a server: list, attach, detach.
    Interface {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: InterfaceCommand,
    },
    /// Seeded workload with faults and kills against real processes, then an invariant check.
    Chaos(Box<netcache_chaos::ChaosArgs>),
}

impl Command {
    /// Services and long runs whose logs are their account of what happens.
    fn runs_until_stopped(&self) -> bool {
        matches!(self, Self::Serve(_) | Self::NeutronSim(_) | Self::Chaos(_))
    }
}

#[derive(Subcommand)]
enum NovaCommand {
    /// Ghost, leaked, stale and missing ports, each with why; exits 0 when
    /// clean, 2 on drift, 1 on error. Changes nothing.
    Audit {
        #[arg(long)]
        json: bool,
        /// Also write the findings' gauges to this Prometheus text file.
        #[arg(long)]
        metrics_file: Option<PathBuf>,
    },
    /// Audits twice, `--grace` apart, and acts on what both saw (a dry run
    /// unless --apply): deletes leaked ports and ghosts, tells Nova.
    Gc {
        /// Delete and tell Nova; without it nothing is changed.
        #[arg(long, conflicts_with = "dry_run")]
        apply: bool,
        /// Change nothing (the default).
        #[arg(long)]
        dry_run: bool,
        /// Time between the two looks, `90s`, `10m` or seconds (default: nova.grace).
        #[arg(long, value_parser = parse_duration)]
        grace: Option<std::time::Duration>,
        #[arg(long)]
        json: bool,
    },
    /// Audit and GC every nova.interval, as a sidecar (acts unless --dry-run).
    Watch {
        #[arg(long)]
        dry_run: bool,
        /// Serve Prometheus metrics at http://ADDR/metrics.
        #[arg(long)]
        metrics_listen: Option<SocketAddr>,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// TOML configuration file.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Address of the compute API (default 127.0.0.1:8774).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// sqlite:PATH or postgres://… (default sqlite:netcache.db).
    #[arg(long)]
    database: Option<String>,
    /// A real Neutron's URL instead of the embedded one.
    #[arg(long)]
    neutron_url: Option<String>,
}

#[derive(Args)]
struct OpsArgs {
    /// TOML configuration file (the same as `serve`'s).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// sqlite:PATH or postgres://… (default: the configured database).
    #[arg(long)]
    database: Option<String>,
    /// Neutron URL (default: the configured one, or the embedded Neutron's address).
    #[arg(long)]
    neutron_url: Option<String>,
}

impl OpsArgs {
    fn settings(&self) -> anyhow::Result<Settings> {
        let mut overrides: Vec<(&str, String)> = Vec::new();
        if let Some(database) = &self.database {
            overrides.push(("database", database.clone()));
        }
        if let Some(url) = &self.neutron_url {
            overrides.push(("neutron.url", url.clone()));
        }
        Settings::load(self.config.as_deref(), &overrides)
    }
}

#[derive(Args)]
struct SimArgs {
    #[arg(long, default_value = "127.0.0.1:9696")]
    listen: SocketAddr,
    /// JSON or TOML file with the simulator's configuration (faults, extensions…).
    #[arg(long, short)]
    config: Option<PathBuf>,
    #[arg(long)]
    seed: Option<u64>,
    /// Hide an extension alias (repeatable), e.g. tag-ports-during-bulk-creation.
    #[arg(long = "without-extension")]
    without_extensions: Vec<String>,
    /// Nova endpoint for os-server-external-events.
    #[arg(long)]
    nova_url: Option<String>,
    /// Create networks `private` and `public` for this project at start.
    #[arg(long)]
    default_topology: Option<String>,
}

#[derive(Args)]
struct Target {
    /// netcache's compute API.
    #[arg(long, env = "NETCACHE_URL", default_value = "http://127.0.0.1:8774", global = true)]
    url: String,
    /// Project to act as (X-Project-Id).
    #[arg(long, env = "NETCACHE_PROJECT", global = true)]
    project: Option<String>,
    /// A Keystone token (X-Auth-Token), for a service with `auth.strategy = keystone`.
    #[arg(long, env = "OS_TOKEN", hide_env_values = true, global = true)]
    token: Option<String>,
    #[arg(long, short, value_enum, default_value = "table", global = true)]
    output: Output,
}

#[derive(Subcommand)]
enum ServerCommand {
    List,
    Show {
        server: String,
    },
    Create {
        name: String,
        /// Network id for a new port (repeatable; none and no --port means "auto").
        #[arg(long = "network")]
        networks: Vec<String>,
        /// Fixed IP on the first --network.
        #[arg(long)]
        fixed_ip: Option<String>,
        /// A port you created (repeatable).
        #[arg(long = "port")]
        ports: Vec<String>,
        #[arg(long, default_value = "1")]
        flavor: String,
        /// Image id or name (default: the first image the service lists).
        #[arg(long)]
        image: Option<String>,
        /// Return at once instead of waiting for the build.
        #[arg(long)]
        no_wait: bool,
    },
    Delete {
        server: String,
    },
}

#[derive(Subcommand)]
enum InterfaceCommand {
    List {
        server: String,
    },
    Attach {
        server: String,
        #[arg(long, conflicts_with = "port")]
        network: Option<String>,
        #[arg(long, requires = "network")]
        fixed_ip: Option<String>,
        #[arg(long)]
        port: Option<String>,
    },
    Detach {
        server: String,
        port: String,
    },
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let filter = cli.log_filter();
    let progress = Progress::on_stderr(filter.is_some());
    if let Some(filter) = filter {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .init();
    }
    match run(cli, progress).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}

/// Runs a command; returns the process exit code.
async fn run(cli: Cli, progress: Progress) -> anyhow::Result<i32> {
    let done = |result: anyhow::Result<()>| result.map(|()| 0);
    match cli.command {
        Command::Nova { ops, command } => nova_command(&ops, command, progress).await,
        Command::Audit { ops, json } => netcache_app::ops::audit(&ops.settings()?, json, progress).await,
        Command::Heal(ops) => done(netcache_app::ops::heal(&ops.settings()?).await),
        Command::Gc { ops, dry_run } => {
            let mut settings = ops.settings()?;
            settings.gc.dry_run |= dry_run;
            done(netcache_app::ops::gc(&settings).await)
        }
        Command::Purge { ops, before, dry_run } => {
            done(netcache_app::ops::purge(&ops.settings()?, before, dry_run, progress).await)
        }
        Command::Bench(options) => done(netcache_bench::run(options).await),
        Command::Serve(args) => done(serve(args).await),
        Command::NeutronSim(args) => {
            let listen = args.listen;
            done(serve_sim(sim_config(args)?, listen).await)
        }
        Command::Demo => done(netcache_app::demo::run().await),
        Command::Server { target, command } => done(server_command(target, command, progress).await),
        Command::Interface { target, command } => done(interface_command(target, command).await),
        Command::Chaos(args) => netcache_chaos::run(*args).await,
    }
}

/// A duration: `humantime`'s (`90s`, `10m`, `1h 30m`) or a number of seconds.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        return std::time::Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"));
    }
    humantime::parse_duration(text).map_err(|e| format!("{text:?} is not a duration (90s, 10m, or seconds): {e}"))
}

async fn nova_command(ops: &OpsArgs, command: NovaCommand, progress: Progress) -> anyhow::Result<i32> {
    match command {
        NovaCommand::Audit { json, metrics_file } => {
            netcache_app::nova::audit(&ops.settings()?, json, metrics_file.as_deref(), progress).await
        }
        NovaCommand::Gc {
            apply,
            dry_run: _,
            grace,
            json,
        } => {
            let mut settings = ops.settings()?;
            if let Some(grace) = grace {
                settings.nova.grace = grace.as_secs_f64();
            }
            netcache_app::nova::gc(&settings, apply, json, progress).await
        }
        NovaCommand::Watch {
            dry_run,
            metrics_listen,
        } => netcache_app::nova::watch(&ops.settings()?, !dry_run, metrics_listen)
            .await
            .map(|()| 0),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut overrides = Vec::new();
    if let Some(listen) = args.listen {
        overrides.push(("listen", listen.to_string()));
    }
    if let Some(database) = args.database {
        overrides.push(("database", database));
    }
    if let Some(url) = args.neutron_url {
        overrides.push(("neutron.url", url));
    }
    let settings = Settings::load(args.config.as_deref(), &overrides)?;
    let app = App::start(&settings).await?;
    println!(
        "netcache is serving the compute API on {}/v2.1 (Neutron: {})",
        app.api_url(),
        app.neutron_url
    );
    tokio::select! {
        result = app.wait() => result,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("shutting down");
            Ok(())
        }
    }
}

async fn server_command(target: Target, command: ServerCommand, progress: Progress) -> anyhow::Result<()> {
    let api = ApiClient::new(&target.url, target.project, target.token)?;
    match command {
        ServerCommand::List => client::print_servers(target.output, &api.get("/servers/detail").await?),
        ServerCommand::Show { server } => {
            let id = api.server_id(&server).await?;
            client::print_server(target.output, &api.get(&format!("/servers/{id}")).await?["server"]);
        }
        ServerCommand::Create {
            name,
            networks,
            fixed_ip,
            ports,
            flavor,
            image,
            no_wait,
        } => {
            let image = api.image_ref(image.as_deref()).await?;
            let body = client::create_body(&name, &flavor, &image, &networks, &ports, fixed_ip.as_deref());
            let created = api.post("/servers", body).await?;
            let id = created["server"]["id"]
                .as_str()
                .context("the API returned no server id")?;
            let server = if no_wait {
                api.get(&format!("/servers/{id}")).await?["server"].take()
            } else {
                api.wait_until_built(id, progress).await?
            };
            client::print_server(target.output, &server);
        }
        ServerCommand::Delete { server } => {
            let id = api.server_id(&server).await?;
            api.delete(&format!("/servers/{id}")).await?;
            println!("Deleted server {server}");
        }
    }
    Ok(())
}

async fn interface_command(target: Target, command: InterfaceCommand) -> anyhow::Result<()> {
    let api = ApiClient::new(&target.url, target.project, target.token)?;
    match command {
        InterfaceCommand::List { server } => {
            let id = api.server_id(&server).await?;
            client::print_interfaces(target.output, &api.get(&format!("/servers/{id}/os-interface")).await?);
        }
        InterfaceCommand::Attach {
            server,
            network,
            fixed_ip,
            port,
        } => {
            let mut attachment = json!({});
            if let Some(network) = network {
                attachment["net_id"] = json!(network);
            }
            if let Some(ip) = fixed_ip {
                attachment["fixed_ips"] = json!([{"ip_address": ip}]);
            }
            if let Some(port) = port {
                attachment["port_id"] = json!(port);
            }
            let id = api.server_id(&server).await?;
            let attached = api
                .post(
                    &format!("/servers/{id}/os-interface"),
                    json!({"interfaceAttachment": attachment}),
                )
                .await?;
            let list = json!({"interfaceAttachments": [attached["interfaceAttachment"]]});
            client::print_interfaces(target.output, &list);
        }
        InterfaceCommand::Detach { server, port } => {
            let id = api.server_id(&server).await?;
            api.delete(&format!("/servers/{id}/os-interface/{port}")).await?;
            println!("Detached port {port} from server {server}");
        }
    }
    Ok(())
}

/// The simulator's configuration: the file (JSON or TOML) first, then the flags.
fn sim_config(args: SimArgs) -> anyhow::Result<neutron_sim::SimConfig> {
    let mut config = match &args.config {
        Some(path) => neutron_sim::SimConfig::from_text(
            &std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?,
        )?,
        None => neutron_sim::SimConfig::default(),
    };
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    for alias in &args.without_extensions {
        config = config.without_extension(alias);
    }
    if args.nova_url.is_some() {
        config.nova_url = args.nova_url;
    }
    if args.default_topology.is_some() {
        config.default_topology_project = args.default_topology;
    }
    Ok(config)
}

/// Runs the embedded Neutron on its own until Ctrl-C, with the default topology
/// first when the configuration names a project for it.
async fn serve_sim(config: neutron_sim::SimConfig, listen: SocketAddr) -> anyhow::Result<()> {
    let project = config.default_topology_project.clone();
    let sim = neutron_sim::NeutronSim::start(config, listen).await?;
    if let Some(project) = project {
        let topology = sim.handle().create_default_topology(&project);
        tracing::info!(?topology, "Default topology ready");
    }
    println!("{}/v2.0", sim.url());
    tokio::signal::ctrl_c().await?;
    sim.shutdown().await;
    Ok(())
}
