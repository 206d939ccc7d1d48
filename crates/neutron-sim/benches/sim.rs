//! Throughput of the simulator with 100,000 ports: port creation and a list filtered by
//! 100 device_ids, over HTTP (reqwest, keep-alive) and in-process (no HTTP).
//! `cargo bench -p neutron-sim --bench sim` (about a minute on 2 cores).

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use neutron_sim::{NeutronSim, SimConfig, SimHandle};
use serde_json::json;

const PORTS: usize = 100_000;

fn populate(h: &SimHandle) -> String {
    let (_, v) = h.request("POST", "/v2.0/networks", Some(json!({"network": {"name": "bench"}})));
    let net = v["network"]["id"].as_str().expect("net").to_string();
    let (st, _) = h.request(
        "POST",
        "/v2.0/subnets",
        Some(json!({"subnet": {"network_id": net, "ip_version": 4, "cidr": "10.0.0.0/10"}})),
    );
    assert_eq!(st, 201);
    for i in 0..PORTS {
        let (st, _) = h.request(
            "POST",
            "/v2.0/ports",
            Some(
                json!({"port": {"network_id": net, "device_id": format!("vm-{i:06}"), "device_owner": "compute:nova"}}),
            ),
        );
        assert_eq!(st, 201);
    }
    net
}

fn list_query(round: usize) -> String {
    let ids: Vec<String> = (0..100)
        .map(|k| format!("device_id=vm-{:06}", (k * 997 + round * 31) % PORTS))
        .collect();
    format!("/v2.0/ports?{}&fields=id&fields=device_id", ids.join("&"))
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sim = rt
        .block_on(NeutronSim::start(
            SimConfig::default(),
            "127.0.0.1:0".parse().expect("addr"),
        ))
        .expect("start");
    let h = sim.handle();
    let t0 = std::time::Instant::now();
    let net = populate(&h);
    eprintln!("populated {} ports in-process in {:.2?}", h.port_count(), t0.elapsed());
    let client = reqwest::Client::new();
    let base = sim.url();

    let mut g = c.benchmark_group("neutron_sim_100k_ports");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.throughput(Throughput::Elements(1));

    let mut n = 0usize;
    g.bench_function("http_list_filtered_by_100_device_ids", |b| {
        b.to_async(&rt).iter(|| {
            n += 1;
            let url = format!("{base}{}", list_query(n));
            let client = client.clone();
            async move {
                let v: serde_json::Value = client.get(url).send().await.expect("send").json().await.expect("json");
                assert_eq!(v["ports"].as_array().map(Vec::len), Some(100));
            }
        });
    });
    let mut n = 0usize;
    g.bench_function("core_list_filtered_by_100_device_ids", |b| {
        b.iter(|| {
            n += 1;
            let (st, v) = h.request("GET", &list_query(n), None);
            assert_eq!((st, v["ports"].as_array().map(Vec::len)), (200, Some(100)));
        });
    });
    let body = json!({"port": {"network_id": net, "device_id": "bench-new", "device_owner": "compute:nova", "binding:host_id": "h1"}});
    g.bench_function("http_create_port", |b| {
        b.to_async(&rt).iter(|| {
            let (client, url, body) = (client.clone(), format!("{base}/v2.0/ports"), body.clone());
            async move {
                let r = client.post(url).json(&body).send().await.expect("send");
                assert_eq!(r.status(), 201);
            }
        });
    });
    g.bench_function("core_create_port", |b| {
        b.iter(|| {
            let (st, _) = h.request("POST", "/v2.0/ports", Some(body.clone()));
            assert_eq!(st, 201);
        });
    });
    g.finish();
    eprintln!("ports at the end: {}", h.port_count());
    rt.block_on(sim.shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
