//! SCRATCH (to be deleted): records a seeded transcript of many API calls so a refactor
//! can be checked for byte-identical behaviour.

use std::fmt::Write as _;

use neutron_sim::{Caller, NeutronSim, SimConfig};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

fn norm(v: &mut Value) {
    match v {
        Value::String(s) => {
            let b = s.as_bytes();
            if b.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[19] == b'Z' {
                *s = "TS".into();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(norm),
        Value::Object(o) => o.values_mut().for_each(norm),
        _ => {}
    }
}

async fn run(cfg: SimConfig, out: &mut String, seed: u64) {
    let sim = NeutronSim::start(cfg, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("start");
    let h = sim.handle();
    let t = h.create_default_topology("demo");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut nets = vec![t.private_network_id.clone(), t.public_network_id.clone()];
    let mut subnets = vec![t.private_subnet_id.clone(), t.private_subnet_v6_id.clone(), t.public_subnet_id.clone()];
    let mut ports: Vec<String> = Vec::new();
    let mut routers = vec![t.router_id.clone()];
    let mut fips: Vec<String> = Vec::new();
    let bogus = "11111111-2222-3333-4444-555555555555".to_string();
    let keys = [
        "id", "name", "description", "admin_state_up", "shared", "router:external", "mtu",
        "project_id", "tenant_id", "port_security_enabled", "provider:network_type",
        "provider:physical_network", "provider:segmentation_id", "availability_zone_hints",
        "tags", "is_default", "vlan_transparent", "status", "subnets", "revision_number",
        "created_at", "updated_at", "network_id", "ip_version", "cidr", "gateway_ip",
        "allocation_pools", "enable_dhcp", "dns_nameservers", "host_routes", "ipv6_ra_mode",
        "ipv6_address_mode", "subnetpool_id", "service_types", "segment_id", "mac_address",
        "fixed_ips", "device_id", "device_owner", "security_groups", "binding:host_id",
        "binding:profile", "binding:vnic_type", "allowed_address_pairs", "extra_dhcp_opts",
        "binding:vif_type", "binding:vif_details", "external_gateway_info", "distributed", "ha",
        "flavor_id", "routes", "floating_network_id", "port_id", "fixed_ip_address",
        "floating_ip_address", "subnet_id", "dns_name", "dns_domain", "router_id",
        "port_details", "bogus", "zzz",
    ];
    let callers = [
        Caller::admin(),
        Caller { project_id: "demo".into(), is_admin: false, is_service: false },
        Caller { project_id: "other".into(), is_admin: false, is_service: false },
        Caller { project_id: "svc".into(), is_admin: false, is_service: true },
    ];
    let pick = |rng: &mut rand_chacha::ChaCha8Rng, v: &Vec<String>| -> String {
        if v.is_empty() || rng.random_range(0..30) == 0 {
            bogus.clone()
        } else {
            v[rng.random_range(0..v.len())].clone()
        }
    };
    for i in 0..6000 {
        let pick_value = |rng: &mut rand_chacha::ChaCha8Rng, nets: &Vec<String>, subnets: &Vec<String>, ports: &Vec<String>| -> Value {
            match rng.random_range(0..34) {
                0 => json!(null),
                1 => json!(1),
                2 => json!(-1),
                3 => json!("x"),
                4 => json!(""),
                5 => json!([]),
                6 => json!({}),
                7 => json!([{}]),
                8 => json!([1]),
                9 => json!(true),
                10 => json!(false),
                11 => json!("::1"),
                12 => json!("10.0.0.77"),
                13 => json!({"a": [1]}),
                14 => json!(pick(rng, nets)),
                15 => json!([{"subnet_id": 5}]),
                16 => json!([{"ip_address": "zz"}]),
                17 => json!(["t1", "t2"]),
                18 => json!(["dup", "dup"]),
                19 => json!("true"),
                20 => json!("0"),
                21 => json!(1400),
                22 => json!("10.9.0.0/24"),
                23 => json!(4),
                24 => json!(6),
                25 => json!("slaac"),
                26 => json!("direct"),
                27 => json!("fa:16:3e:00:00:01"),
                28 => json!([{"subnet_id": pick(rng, subnets)}]),
                29 => json!(pick(rng, subnets)),
                30 => json!(pick(rng, ports)),
                31 => json!({"network_id": pick(rng, nets)}),
                32 => json!("vlan"),
                _ => json!("a".repeat(256)),
            }
        };
        let kind = rng.random_range(0..5);
        let (coll, one) = [
            ("networks", "network"),
            ("subnets", "subnet"),
            ("ports", "port"),
            ("routers", "router"),
            ("floatingips", "floatingip"),
        ][kind];
        let mut obj = match kind {
            0 => json!({"name": format!("n{i}")}),
            1 => json!({"network_id": pick(&mut rng, &nets), "ip_version": 4, "cidr": format!("10.{}.{}.0/24", 100 + i % 100, i / 100)}),
            2 => json!({"network_id": pick(&mut rng, &nets), "device_id": format!("d{}", i % 7), "device_owner": "compute:nova"}),
            3 => json!({"name": format!("r{i}")}),
            _ => json!({"floating_network_id": t.public_network_id}),
        };
        let mut upd = serde_json::Map::new();
        let rel: &[&str] = match kind {
            0 => &["name", "description", "admin_state_up", "shared", "router:external", "mtu", "project_id", "port_security_enabled", "provider:network_type", "provider:physical_network", "provider:segmentation_id", "tags"],
            1 => &["name", "description", "gateway_ip", "allocation_pools", "enable_dhcp", "dns_nameservers", "host_routes", "ipv6_ra_mode", "ipv6_address_mode", "ip_version", "cidr", "network_id", "tags", "project_id"],
            2 => &["name", "description", "admin_state_up", "mac_address", "fixed_ips", "device_id", "device_owner", "security_groups", "binding:host_id", "binding:profile", "binding:vnic_type", "port_security_enabled", "allowed_address_pairs", "extra_dhcp_opts", "tags", "project_id"],
            3 => &["name", "description", "admin_state_up", "external_gateway_info", "tags", "project_id", "routes"],
            _ => &["port_id", "fixed_ip_address", "floating_ip_address", "description", "subnet_id", "tags", "project_id"],
        };
        for _ in 0..rng.random_range(0..4) {
            let k = if rng.random_range(0..7) == 0 { keys[rng.random_range(0..keys.len())] } else { rel[rng.random_range(0..rel.len())] };
            let v = pick_value(&mut rng, &nets, &subnets, &ports);
            obj[k] = v.clone();
            upd.insert(k.into(), v);
        }
        let caller = if rng.random_range(0..2) == 0 { callers[0].clone() } else { callers[rng.random_range(0..callers.len())].clone() };
        let existing = match kind {
            0 => pick(&mut rng, &nets),
            1 => pick(&mut rng, &subnets),
            2 => pick(&mut rng, &ports),
            3 => pick(&mut rng, &routers),
            _ => pick(&mut rng, &fips),
        };
        let (m, path, body) = match rng.random_range(0..20) {
            0..=8 => ("POST", format!("/v2.0/{coll}"), Some(json!({one: obj}))),
            9..=14 => ("PUT", format!("/v2.0/{coll}/{existing}"), Some(json!({one: upd}))),
            15 => ("DELETE", format!("/v2.0/{coll}/{existing}"), None),
            16 => ("GET", format!("/v2.0/{coll}/{existing}"), None),
            17 => {
                let tags = pick_value(&mut rng, &nets, &subnets, &ports);
                ("PUT", format!("/v2.0/{coll}/{existing}/tags"), Some(json!({"tags": tags})))
            }
            18 => {
                let r = pick(&mut rng, &routers);
                let add = rng.random_range(0..2) == 0;
                let b = if rng.random_range(0..2) == 0 {
                    json!({"subnet_id": pick(&mut rng, &subnets)})
                } else {
                    json!({"port_id": pick(&mut rng, &ports)})
                };
                let op = if add { "add" } else { "remove" };
                ("PUT", format!("/v2.0/routers/{r}/{op}_router_interface"), Some(b))
            }
            _ => ("GET", format!("/v2.0/{coll}?sort_key=id"), None),
        };
        let (st, mut v) = h.request_as(&caller, m, &path, body.clone());
        if m == "POST" && st == 201 {
            let id = v[one]["id"].as_str().unwrap_or_default().to_string();
            match kind {
                0 => nets.push(id),
                1 => subnets.push(id),
                2 => ports.push(id),
                3 => routers.push(id),
                _ => fips.push(id),
            }
        }
        norm(&mut v);
        let _ = writeln!(out, "{i} {} {m} {path} {} -> {st} {v}", caller.project_id, body.unwrap_or(Value::Null));
    }
    // Full dump of final state.
    for coll in ["networks", "subnets", "ports", "routers", "floatingips"] {
        let (st, mut v) = h.request("GET", &format!("/v2.0/{coll}"), None);
        norm(&mut v);
        let _ = writeln!(out, "FINAL {coll} {st} {v}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn golden_transcript() {
    let mut out = String::new();
    for seed in 1..=4 {
        run(SimConfig { seed, ..SimConfig::default() }, &mut out, seed).await;
        run(
            SimConfig { seed, bind_activates: false, ..SimConfig::default() }
                .without_extension("tag-ports-during-bulk-creation"),
            &mut out,
            seed + 100,
        )
        .await;
    }
    let label = std::env::var("GOLDEN_LABEL").unwrap_or_else(|_| "x".into());
    std::fs::write(format!("/tmp/golden_{label}.txt"), out).expect("write");
}
