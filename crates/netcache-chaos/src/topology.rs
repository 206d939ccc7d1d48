//! The processes of a run: the embedded Neutron as a process of its own (it outlives
//! netcache's kills) or a real Neutron behind the fault proxy, and N `netcache serve`
//! processes, each with a generated TOML file, its own hosts and one shared database
//! (a SQLite file for one process, a scratch PostgreSQL database for several).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use netcache_app::scratch_pg::ScratchDatabase;
use tokio::process::{Child, Command};
use tracing::{info, warn};

use super::neutron::Neutron;
use super::proxy::FaultProxy;

/// What the processes are started with.
#[derive(Clone, Debug)]
pub struct TopologyConfig {
    pub processes: usize,
    /// PostgreSQL admin URL (a scratch database is made on its server).
    pub database: Option<String>,
    /// A real Neutron, reached through the fault proxy.
    pub neutron_url: Option<String>,
    pub seed: u64,
    pub keep: bool,
    pub project: String,
    pub without_tag_extension: bool,
    pub spawn_failure_rate: f64,
    pub heal_interval: f64,
    pub gc_interval: f64,
    pub gc_grace: f64,
    pub gc_min_sightings: u32,
    pub neutron_timeout: f64,
    pub neutron_retries: u32,
    /// TOML appended to every generated config (keys this harness does not know).
    pub extra_toml: Option<String>,
    pub start_timeout: Duration,
}

pub struct ServeProcess {
    pub addr: SocketAddr,
    pub config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// Runs a one-off `netcache heal|gc|audit` against the run's database and Neutron.
#[derive(Clone, Debug)]
pub struct OneOff {
    exe: PathBuf,
    config: PathBuf,
}

pub struct OneOffOutput {
    /// `None`: killed after the timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl OneOff {
    pub async fn run(&self, command: &str, extra: &[&str], timeout: Duration) -> anyhow::Result<OneOffOutput> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg(command)
            .arg("--config")
            .arg(&self.config)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        scrub_env(&mut cmd);
        let child = cmd.spawn().context("cannot run netcache")?;
        match tokio::time::timeout(timeout, child.wait_with_output()).await {
            Ok(output) => {
                let output = output?;
                Ok(OneOffOutput {
                    code: output.status.code(),
                    stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
                })
            }
            Err(_) => Ok(OneOffOutput {
                code: None,
                stdout: String::new(),
                stderr: format!("killed after {timeout:?}"),
            }),
        }
    }
}

pub struct Topology {
    config: TopologyConfig,
    exe: PathBuf,
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    /// Where the harness reaches Neutron directly (never faulted).
    pub neutron: Neutron,
    /// The embedded Neutron's admin API (`/_sim`), when it is the embedded one.
    pub sim_url: Option<String>,
    pub proxy: Option<FaultProxy>,
    sim: Option<Child>,
    pg: Option<ScratchDatabase>,
    pub database: String,
    pub processes: Vec<ServeProcess>,
}

/// A free loopback port below the kernel's ephemeral range (bound, then released).
/// A killed process restarts on the same port; a port from the ephemeral range may
/// meanwhile have become the local end of some outgoing connection (a PostgreSQL
/// pool's, say), and the restart would then fail with "address in use" for good.
fn free_addr() -> anyhow::Result<SocketAddr> {
    let low = ephemeral_range_start().unwrap_or(32768);
    let floor = 20000.min(low / 2);
    let start = rand::random_range(floor..low);
    for port in (start..low).chain(floor..start) {
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            return Ok(listener.local_addr()?);
        }
    }
    bail!("no free loopback port in {floor}..{low}")
}

fn ephemeral_range_start() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

/// Configuration must come from the generated file, not the caller's environment.
fn scrub_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if let Some(key) = key.to_str()
            && key.starts_with("NETCACHE_")
            && key != "NETCACHE_LOG"
        {
            cmd.env_remove(key);
        }
    }
}

fn log_file(path: &Path) -> anyhow::Result<(Stdio, Stdio)> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    Ok((Stdio::from(file.try_clone()?), Stdio::from(file)))
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// `extra` merged into the generated config `base`: a table both have (e.g.
/// `[compute]`) merges key by key, any other value of `extra` wins. (Appending the
/// text would define such a table twice, which TOML refuses.)
fn with_extra(base: &str, extra: &str) -> anyhow::Result<String> {
    fn merge(base: &mut toml::Table, extra: toml::Table) {
        for (key, value) in extra {
            match (base.get_mut(&key), value) {
                (Some(toml::Value::Table(b)), toml::Value::Table(e)) => merge(b, e),
                (_, value) => {
                    base.insert(key, value);
                }
            }
        }
    }
    let mut merged: toml::Table = base.parse().context("the generated serve config is not TOML")?;
    let extra: toml::Table = extra.parse().context("--serve-config-extra is not TOML")?;
    merge(&mut merged, extra);
    let header: String = base
        .lines()
        .take_while(|l| l.starts_with('#'))
        .flat_map(|l| [l, "\n"])
        .collect();
    Ok(format!("{header}{}", toml::to_string(&merged)?))
}

impl Topology {
    pub async fn start(config: TopologyConfig) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot find the netcache binary")?;
        let dir = tempfile::Builder::new().prefix("netcache-chaos-").tempdir()?;
        let path = dir.path().to_owned();
        info!(dir = %path.display(), "chaos work directory {}", path.display());
        let (database, pg) = match (&config.database, config.processes) {
            (Some(url), _) if url.starts_with("postgres") => {
                let scratch = ScratchDatabase::create(url, &format!("chaos_{}", config.seed)).await?;
                info!(database = %scratch.name, "scratch PostgreSQL database {}", scratch.name);
                (scratch.url.clone(), Some(scratch))
            }
            (Some(url), _) => bail!("--database must be a postgres:// URL, not {url}"),
            (None, 1) => (format!("sqlite:{}", path.join("netcache.db").display()), None),
            (None, n) => bail!("{n} processes share a PostgreSQL database: give --database postgres://…"),
        };
        let addrs: Vec<SocketAddr> = (0..config.processes).map(|_| free_addr()).collect::<Result<_, _>>()?;
        let mut topology = Self {
            exe,
            dir: Some(dir),
            path,
            neutron: Neutron::new("http://127.0.0.1:1")?,
            sim_url: None,
            proxy: None,
            sim: None,
            pg,
            database,
            processes: Vec::new(),
            config,
        };
        if let Err(e) = topology.start_all(addrs).await {
            topology.shutdown().await;
            return Err(e);
        }
        Ok(topology)
    }

    async fn start_all(&mut self, addrs: Vec<SocketAddr>) -> anyhow::Result<()> {
        let netcache_neutron = self.start_neutron(addrs[0]).await?;
        for (i, addr) in addrs.into_iter().enumerate() {
            let config_path = self.path.join(format!("serve-{i}.toml"));
            std::fs::write(&config_path, self.serve_toml(i, addr, &netcache_neutron)?)?;
            self.processes.push(ServeProcess {
                addr,
                config: config_path,
                log: self.path.join(format!("serve-{i}.log")),
                child: None,
            });
        }
        for i in 0..self.processes.len() {
            self.start_process(i).await?;
        }
        Ok(())
    }

    /// Starts the embedded Neutron (or the proxy before a real one); returns the URL
    /// netcache is to use.
    async fn start_neutron(&mut self, nova: SocketAddr) -> anyhow::Result<String> {
        if let Some(url) = self.config.neutron_url.clone() {
            self.neutron = Neutron::new(&url)?;
            let proxy = FaultProxy::start(&url, self.config.seed).await?;
            let proxied = proxy.url();
            self.proxy = Some(proxy);
            info!(upstream = %url, proxy = %proxied, "real Neutron behind the fault proxy");
            return Ok(proxied);
        }
        let addr = free_addr()?;
        let log = self.path.join("neutron-sim.log");
        let (out, err) = log_file(&log)?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("neutron-sim")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--default-topology")
            .arg(&self.config.project)
            .arg("--seed")
            .arg(self.config.seed.to_string())
            .arg("--nova-url")
            .arg(format!("http://{nova}/v2.1"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true);
        if self.config.without_tag_extension {
            cmd.arg("--without-extension").arg("tag-ports-during-bulk-creation");
        }
        scrub_env(&mut cmd);
        self.sim = Some(cmd.spawn().context("cannot start neutron-sim")?);
        let url = format!("http://{addr}");
        self.neutron = Neutron::new(&url)?;
        let deadline = Instant::now() + self.config.start_timeout;
        while !self.neutron.ready().await {
            if Instant::now() > deadline {
                bail!("neutron-sim did not start:\n{}", tail(&log, 20));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.sim_url = Some(url.clone());
        Ok(url)
    }

    /// The generated config of process `i`, with the extra TOML merged in.
    fn serve_toml(&self, i: usize, addr: SocketAddr, neutron: &str) -> anyhow::Result<String> {
        let c = &self.config;
        let toml = format!(
            "# generated by netcache chaos (seed {seed})\n\
             listen = {listen}\n\
             database = {database}\n\n\
             [neutron]\nurl = {neutron}\ntimeout = {timeout:?}\nretries = {retries}\n\n\
             [compute]\nhosts = [\"p{i}-h1\", \"p{i}-h2\"]\nspawn_failure_rate = {rate:?}\nseed = {cseed}\n\n\
             [heal]\ninterval = {heal:?}\njitter = {jitter:?}\n\n\
             [gc]\ninterval = {gc:?}\ngrace = {grace:?}\nmin_sightings = {sightings}\n\n\
             # the workload keeps up to --max-servers servers in one project\n\
             [quota]\ninstances = -1\ncores = -1\nram = -1\n",
            seed = c.seed,
            listen = toml_string(&addr.to_string()),
            database = toml_string(&self.database),
            neutron = toml_string(neutron),
            timeout = c.neutron_timeout,
            retries = c.neutron_retries,
            rate = c.spawn_failure_rate,
            cseed = c.seed.wrapping_add(i as u64) % (1 << 53),
            heal = c.heal_interval,
            jitter = c.heal_interval / 4.0,
            gc = c.gc_interval,
            grace = c.gc_grace,
            sightings = c.gc_min_sightings,
        );
        match &c.extra_toml {
            None => Ok(toml),
            Some(extra) => with_extra(&toml, extra),
        }
    }

    pub fn one_off(&self) -> OneOff {
        OneOff {
            exe: self.exe.clone(),
            config: self.processes[0].config.clone(),
        }
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.processes.iter().map(|p| p.addr).collect()
    }

    pub fn work_dir(&self) -> &Path {
        &self.path
    }

    fn spawn(&mut self, i: usize) -> anyhow::Result<()> {
        let p = &mut self.processes[i];
        let (out, err) = log_file(&p.log)?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("serve")
            .arg("--config")
            .arg(&p.config)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true);
        scrub_env(&mut cmd);
        p.child = Some(cmd.spawn().context("cannot start netcache serve")?);
        Ok(())
    }

    /// Starts process `i` and waits until its API answers; a start that fails (e.g.
    /// Neutron unreachable during a fault) is retried until the start timeout.
    pub async fn start_process(&mut self, i: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + self.config.start_timeout;
        let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
        let url = format!("http://{}/v2.1/", self.processes[i].addr);
        self.spawn(i)?;
        loop {
            if http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            let p = &mut self.processes[i];
            let exited = match p.child.as_mut() {
                Some(child) => child.try_wait()?.is_some(),
                None => true,
            };
            if Instant::now() > deadline {
                bail!(
                    "netcache process {i} did not start within {:?}:\n{}",
                    self.config.start_timeout,
                    tail(&p.log, 30)
                );
            }
            if exited {
                warn!(
                    process = i,
                    "netcache process {i} exited during start-up; starting it again"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
                self.spawn(i)?;
            } else {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// `kill -9` of process `i`, waiting until it is gone.
    pub async fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(mut child) = self.processes[i].child.take() {
            child.start_kill()?;
            child.wait().await?;
        }
        Ok(())
    }

    pub fn is_running(&mut self, i: usize) -> bool {
        self.processes[i]
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Restarts every process that is not running.
    pub async fn ensure_all_up(&mut self) -> anyhow::Result<()> {
        for i in 0..self.processes.len() {
            if !self.is_running(i) {
                warn!(process = i, "netcache process {i} is not running; starting it");
                self.start_process(i).await?;
            }
        }
        Ok(())
    }

    /// Stops every process; drops the scratch database and the work directory unless
    /// `keep`.
    pub async fn shutdown(&mut self) {
        for i in 0..self.processes.len() {
            let _ = self.kill(i).await;
        }
        if let Some(mut sim) = self.sim.take() {
            let _ = sim.start_kill();
            let _ = sim.wait().await;
        }
        if let Some(proxy) = self.proxy.take() {
            proxy.shutdown();
        }
        if let Some(pg) = &self.pg {
            if self.config.keep {
                println!("kept database {}", pg.url);
            } else if let Err(e) = pg.drop_database().await {
                warn!(error = %e, "could not drop database {}", pg.name);
            }
        }
        if let Some(dir) = self.dir.take() {
            if self.config.keep {
                println!("kept work directory {}", dir.keep().display());
            } else {
                drop(dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_extra;

    #[test]
    fn extra_toml_merges_into_the_generated_tables() {
        let base =
            "# generated\nlisten = \"127.0.0.1:1\"\n\n[compute]\nhosts = [\"p0-h1\"]\nseed = 3\n\n[gc]\ngrace = 1.0\n";
        let extra = "[compute]\nsabotage = \"skip-release\"\nseed = 4\n\n[operations]\nlease = 5.0\n";
        let merged = with_extra(base, extra).unwrap();
        assert!(merged.starts_with("# generated\n"), "{merged}");
        let table: toml::Table = merged.parse().unwrap();
        assert_eq!(table["listen"].as_str(), Some("127.0.0.1:1"));
        let compute = table["compute"].as_table().unwrap();
        assert_eq!(compute["hosts"].as_array().unwrap().len(), 1);
        assert_eq!(compute["sabotage"].as_str(), Some("skip-release"));
        assert_eq!(compute["seed"].as_integer(), Some(4));
        assert_eq!(table["gc"]["grace"].as_float(), Some(1.0));
        assert_eq!(table["operations"]["lease"].as_float(), Some(5.0));
        assert!(with_extra(base, "[compute\n").is_err());
    }
}
