//! `netcache demo`: the seed scenario end to end against the embedded Neutron.
//!
//! The first create-port call is committed by Neutron only after netcache gave
//! up on it; netcache looks its marker up, abandons the intent, reschedules, and
//! boots the server with one port. Then the late port appears: Neutron lists two
//! ports with the server's `device_id`, netcache shows one, and the other is a
//! ghost that carries the abandoned intent's marker.

use std::time::Duration;

use anyhow::Context;
use netcache_compute::AuditOps;
use netcache_domain::ServerId;
use netcache_domain::ghost::{GhostOwner, classify_ports};
use netcache_neutron::{NeutronApi, PortFilter};
use neutron_sim::{FaultAction, FaultRule, SimConfig};

use crate::app::App;
use crate::client::{ApiClient, Progress, format_addresses, list_items, print_table};
use crate::settings::Settings;

/// How long Neutron holds the first create before committing it.
const LATE_COMMIT: Duration = Duration::from_millis(1500);

pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile_dir()?;
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        database: format!("sqlite:{}/demo.db", dir.display()),
        ..Settings::default()
    };
    settings.neutron.embedded_listen = "127.0.0.1:0".parse()?;
    settings.neutron.timeout = 0.5;
    let sim = SimConfig {
        faults: vec![
            FaultRule::new(
                "ports.create",
                FaultAction::DelayedCommit {
                    ms: LATE_COMMIT.as_millis() as u64,
                    status: None,
                },
            )
            .nth(1),
        ],
        ..SimConfig::default()
    };
    let app = App::start_with_sim(&settings, sim).await?;
    let api = ApiClient::new(&app.api_url(), None, None)?;

    println!("== The seed scenario (Nova bugs 1258620/1272195)");
    println!("Neutron will commit the first create-port request only after {LATE_COMMIT:?};");
    println!(
        "netcache gives up after {:?}.\n",
        Duration::from_secs_f64(settings.neutron.timeout)
    );

    let networks = app.compute.neutron().list_networks(&Default::default()).await?;
    let private = networks
        .iter()
        .find(|n| n.name == "private")
        .context("no private network")?;
    let image = api.image_ref(None).await?;
    let created = api
        .post(
            "/servers",
            serde_json::json!({"server": {"name": "demo", "flavorRef": "1", "imageRef": image, "networks": [{"uuid": private.id.to_string()}]}}),
        )
        .await?;
    let id = created["server"]["id"].as_str().context("no server id")?.to_owned();
    // A line of its own on stdout, beside the others: no spinner to clear.
    println!("Waiting for server {id} to build…");
    let server = api.wait_until_built(&id, Progress::Hidden).await?;
    println!(
        "Server {id} is {} on {}.",
        server["status"].as_str().unwrap_or("?"),
        server["OS-EXT-SRV-ATTR:host"].as_str().unwrap_or("?")
    );

    let server_id: ServerId = id.parse()?;
    let ports = wait_for_late_port(app.compute.neutron().as_ref(), &id).await?;
    let interfaces = api.get(&format!("/servers/{id}/os-interface")).await?;
    println!("\n-- netcache (source of truth): GET /servers/{id}");
    println!("addresses: {}", format_addresses(&server["addresses"]));
    let attached: Vec<&str> = list_items(&interfaces["interfaceAttachments"])
        .filter_map(|i| i["port_id"].as_str())
        .collect();
    println!("os-interface: {}", attached.join(", "));

    println!("\n-- Neutron: GET /v2.0/ports?device_id={id}");
    let vifs = app.compute.vifs(server_id).await?;
    let ghosts = classify_ports(&id, &vifs, &ports, app.compute.deployment_id());
    let intents = app.compute.store().intents(server_id).await?;
    let rows: Vec<Vec<String>> = ports
        .iter()
        .map(|p| {
            let verdict = match ghosts.iter().find(|g| g.port_id == p.id) {
                None => "attached (in netcache's VIF records)".to_owned(),
                Some(g) => match &g.owner {
                    GhostOwner::Ours { intent: Some(intent) } => {
                        let state = intents
                            .iter()
                            .find(|i| i.id == *intent)
                            .map_or("unknown".to_owned(), |i| i.state.to_string());
                        format!("GHOST: carries our marker of intent {intent} ({state}); never shown")
                    }
                    GhostOwner::Ours { intent: None } => "GHOST: carries our owner marker; never shown".to_owned(),
                    GhostOwner::Foreign => "GHOST: foreign; never shown".to_owned(),
                },
            };
            let ips: Vec<String> = p.fixed_ips.iter().map(|f| f.ip_address.to_string()).collect();
            vec![
                p.id.to_string(),
                ips.join(", "),
                p.binding_host_id.clone().unwrap_or_default(),
                verdict,
            ]
        })
        .collect();
    print_table(&["Port", "IPs", "Bound to", "netcache's verdict"], &rows);

    println!("\n-- Intents of server {id}");
    let rows: Vec<Vec<String>> = intents
        .iter()
        .map(|i| {
            vec![
                i.id.to_string(),
                i.host.to_string(),
                i.state.to_string(),
                i.port_id.as_ref().map(ToString::to_string).unwrap_or_default(),
                i.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print_table(&["Intent", "Host", "State", "Port", "Why"], &rows);
    println!(
        "\nNeutron holds {} ports for the server; netcache shows {}. Nova would show the ghost in os-interface (and adopt it on heal).",
        ports.len(),
        attached.len()
    );

    println!("\n== Garbage collection");
    let compute = &app.compute;
    let audit = compute.audit(&|_, _| {}).await?;
    println!(
        "audit before: {} ghost(s) ours, {} foreign — {}",
        audit.totals.ghosts_ours,
        audit.totals.ghosts_foreign,
        if audit.is_clean() { "clean" } else { "drift" }
    );
    for pass in 1..=2 {
        let heal = compute.heal().await?;
        println!("heal pass {pass}: {} ghost sighting(s)", heal.ghosts.len());
    }
    let grace = compute.config().gc.policy.grace;
    println!(
        "fast-forwarding netcache's clock past the GC grace period ({} s)",
        grace.num_seconds()
    );
    compute.clock().advance(grace + chrono::TimeDelta::seconds(1));
    let gc = compute.gc().await?;
    for port in &gc.deleted {
        println!("GC deleted ghost port {port} (ours, abandoned intent, seen twice, unchanged at re-check)");
    }
    let audit = compute.audit(&|_, _| {}).await?;
    let filter = PortFilter {
        device_ids: vec![id.clone()],
        ..PortFilter::default()
    };
    let left = app.compute.neutron().list_ports(&filter).await?;
    println!(
        "audit after: {} — Neutron now holds {} port(s) for the server",
        if audit.is_clean() { "clean" } else { "drift" },
        left.len()
    );
    app.shutdown().await;
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

async fn wait_for_late_port(
    neutron: &dyn NeutronApi,
    device_id: &str,
) -> anyhow::Result<Vec<netcache_domain::neutron::Port>> {
    let filter = PortFilter {
        device_ids: vec![device_id.to_owned()],
        ..PortFilter::default()
    };
    for _ in 0..40 {
        let ports = neutron.list_ports(&filter).await?;
        if ports.len() >= 2 {
            return Ok(ports);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(neutron.list_ports(&filter).await?)
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("netcache-demo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
