//! netcache's own throughput against the embedded Neutron, measured side by side
//! with the embedded Neutron alone, so the ratio shows which one is the
//! bottleneck. Run: `cargo bench -p netcache --bench throughput`.
//!
//! - boots: N servers with one port each through the compute service (intent,
//!   create, VIF and cache commits, spawn), one after another;
//! - creates: N create-port calls straight to the embedded Neutron over HTTP;
//! - heal: one heal pass over the N servers.

use std::time::{Duration, Instant};

use netcache::app::App;
use netcache::settings::Settings;
use netcache_compute::{CreateServer, RequestContext};
use netcache_domain::NetworkId;
use netcache_domain::server::{NetworkRequest, NetworkRequests};
use neutron_sim::{NeutronSim, SimConfig};
use serde_json::json;

const SERVERS: usize = 200;

fn per_op(total: Duration, n: usize) -> String {
    format!(
        "{:>8.2} ms/op {:>8.1} op/s",
        total.as_secs_f64() * 1e3 / n as f64,
        n as f64 / total.as_secs_f64()
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let sim = NeutronSim::start(SimConfig::default(), "127.0.0.1:0".parse()?).await?;
    // A /16, so boots and direct creates never run out of addresses.
    let (_, network) = sim.handle().request(
        "POST",
        "/v2.0/networks",
        Some(json!({"network": {"name": "bench", "project_id": "demo"}})),
    );
    let network_id = network["network"]["id"].as_str().unwrap_or_default().to_owned();
    let (status, _) = sim.handle().request(
        "POST",
        "/v2.0/subnets",
        Some(json!({"subnet": {"network_id": network_id, "cidr": "10.200.0.0/16", "ip_version": 4, "project_id": "demo"}})),
    );
    anyhow::ensure!(status == 201, "cannot create the bench subnet");
    let dir = tempfile::tempdir()?;
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        database: format!("sqlite:{}/bench.db", dir.path().display()),
        ..Settings::default()
    };
    settings.neutron.url = Some(sim.url());
    settings.heal.interval = 0.0;
    settings.gc.interval = 0.0;
    // More servers in one project than Nova's default quotas allow.
    settings.quota.instances = -1;
    settings.quota.cores = -1;
    settings.quota.ram = -1;
    let app = App::start(&settings).await?;
    let ctx = RequestContext::system("demo");
    let boot = || CreateServer {
        name: "bench".into(),
        flavor_ref: "1".into(),
        image_ref: "img".into(),
        metadata: Default::default(),
        access_ip_v4: None,
        access_ip_v6: None,
        networks: NetworkRequests::Explicit(vec![NetworkRequest::Network {
            network_id: Some(NetworkId::from(network_id.as_str())),
            fixed_ip: None,
            tag: None,
        }]),
        key_name: None,
        security_groups: vec![],
    };
    // Warm-up: learn the network, open connections.
    app.compute.create_server(&ctx, boot()).await?;
    app.compute.settle().await;

    let started = Instant::now();
    for _ in 0..SERVERS {
        app.compute.create_server(&ctx, boot()).await?;
        app.compute.settle().await;
    }
    let boots = started.elapsed();

    let http = reqwest::Client::new();
    let started = Instant::now();
    for i in 0..SERVERS {
        let response = http
            .post(format!("{}/v2.0/ports", sim.url()))
            .json(
                &json!({"port": {"network_id": network_id, "device_id": format!("bench-{i}"),
                "device_owner": "compute:nova", "binding:host_id": "host1", "project_id": "demo"}}),
            )
            .send()
            .await?;
        anyhow::ensure!(response.status().is_success(), "create failed: {}", response.status());
    }
    let creates = started.elapsed();

    let started = Instant::now();
    let report = app.compute.heal().await?;
    let heal = started.elapsed();

    println!(
        "netcache throughput against the embedded Neutron ({SERVERS} servers, SQLite, debug={})",
        cfg!(debug_assertions)
    );
    println!("  boot through netcache        {}", per_op(boots, SERVERS));
    println!("  create-port, Neutron alone   {}", per_op(creates, SERVERS));
    println!(
        "  heal pass over {} servers    {:>8.2} ms ({} batches)",
        report.servers,
        heal.as_secs_f64() * 1e3,
        report.batches
    );
    println!(
        "  ratio: the embedded Neutron's own create is {:.1}% of a boot's time",
        100.0 * creates.as_secs_f64() / boots.as_secs_f64()
    );
    app.shutdown().await;
    sim.shutdown().await;
    Ok(())
}
