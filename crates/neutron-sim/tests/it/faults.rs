//! Each fault kind does exactly what it says, seen by a real reqwest client with a timeout.
//! Timing uses tokio's paused clock: delays are virtual and exact, nothing sleeps for real.

use crate::common;

use std::ops::Range;
use std::time::Duration;

use common::{client, network_with_subnet, send, start, try_send};
use neutron_sim::{FaultAction, FaultRule, RunningSim, SimConfig, SimHandle};
use serde_json::{Value, json};
use tokio::time::Instant;

struct Fixture {
    sim: RunningSim,
    h: SimHandle,
    net: String,
}

async fn fixture(cfg: SimConfig) -> Fixture {
    let sim = start(cfg).await;
    let h = sim.handle();
    let net = network_with_subnet(&h, "f", "10.0.0.0/16");
    Fixture { sim, h, net }
}

/// A fixture (default configuration) with `rules` added once it is set up.
async fn fixture_with_faults(rules: impl IntoIterator<Item = FaultRule>) -> Fixture {
    let f = fixture(SimConfig::default()).await;
    for rule in rules {
        f.h.add_fault(rule);
    }
    f
}

/// Asserts that the (virtual) time since `start` lies in `ms`, in milliseconds.
fn assert_took(start: Instant, ms: Range<u64>) {
    let took = start.elapsed();
    let range = Duration::from_millis(ms.start)..Duration::from_millis(ms.end);
    assert!(range.contains(&took), "{took:?} not in {range:?}");
}

/// A rule on port creates.
fn on_port_create(action: FaultAction) -> FaultRule {
    FaultRule::new("ports.create", action)
}

impl Fixture {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.sim.url())
    }
    async fn create(&self, c: &reqwest::Client, device: &str) -> reqwest::Result<(u16, Value)> {
        let body = json!({"port": {"network_id": self.net, "device_id": device}});
        try_send(c.post(self.url("/v2.0/ports")).json(&body)).await
    }
    /// Creates a port with a client that waits up to `timeout`, and expects an answer.
    async fn create_answered(&self, timeout: Duration, device: &str) -> (u16, Value) {
        self.create(&client(timeout), device).await.expect("answer")
    }
    /// Creates a port with a client that gives up after `timeout`, and expects it to.
    async fn create_times_out(&self, timeout: Duration, device: &str) {
        let err = self.create(&client(timeout), device).await.expect_err("no answer");
        assert!(err.is_timeout(), "{err:?}");
    }
    /// Ports with this device_id, read in-process (no I/O).
    fn ports_of(&self, device: &str) -> usize {
        let (st, v) = self
            .h
            .request("GET", &format!("/v2.0/ports?device_id={device}&fields=id"), None);
        assert_eq!(st, 200);
        v["ports"].as_array().map_or(0, Vec::len)
    }
    /// How many `ports.create` calls ended with `outcome`.
    fn port_creates(&self, outcome: &str) -> u64 {
        self.h.stats().outcome("ports.create", outcome)
    }
}

#[tokio::test(start_paused = true)]
async fn latency_fixed_and_random_range() {
    let f = fixture_with_faults([FaultRule::new(
        "ports.list",
        FaultAction::Latency { ms: 1500, max_ms: None },
    )])
    .await;
    let c = client(Duration::from_secs(3600));
    let t0 = Instant::now();
    let (st, _) = send(c.get(f.url("/v2.0/ports"))).await;
    assert_took(t0, 1500..1510);
    assert_eq!(st, 200);
    // Other operations are not delayed.
    let t0 = Instant::now();
    f.create(&c, "d").await.expect("create");
    assert!(t0.elapsed() < Duration::from_millis(10));
    // Random range, seeded.
    f.h.clear_faults();
    f.h.add_fault(FaultRule::new(
        "networks.list",
        FaultAction::Latency {
            ms: 100,
            max_ms: Some(200),
        },
    ));
    for _ in 0..5 {
        let t0 = Instant::now();
        send(c.get(f.url("/v2.0/networks"))).await;
        assert_took(t0, 100..210);
    }
    assert_eq!(f.h.stats().outcome("networks.list", "ok"), 5);
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn error_500_and_503_before_commit() {
    let f = fixture_with_faults([
        on_port_create(FaultAction::Error { status: 503 }).nth(1),
        on_port_create(FaultAction::Error { status: 500 }).nth(2),
    ])
    .await;
    let c = client(Duration::from_secs(30));
    let (st, v) = f.create(&c, "e1").await.expect("response");
    assert_eq!(st, 503);
    assert_eq!(v["NeutronError"]["type"], "HTTPServiceUnavailable");
    let (st, v) = f.create(&c, "e1").await.expect("response");
    assert_eq!(st, 500);
    assert_eq!(v["NeutronError"]["type"], "HTTPInternalServerError");
    assert_eq!(f.ports_of("e1"), 0, "nothing committed");
    let (st, _) = f.create(&c, "e1").await.expect("response");
    assert_eq!(st, 201);
    assert_eq!(f.ports_of("e1"), 1);
    assert_eq!(
        (
            f.port_creates("fault_503"),
            f.port_creates("fault_500"),
            f.port_creates("ok")
        ),
        (1, 1, 1)
    );
    assert_eq!(f.h.stats().calls("ports.create"), 3);
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn reset_before_commit() {
    let f = fixture_with_faults([on_port_create(FaultAction::Reset).times(1)]).await;
    let c = client(Duration::from_secs(30));
    let t0 = Instant::now();
    let err = f.create(&c, "r1").await.expect_err("connection reset, no response");
    assert!(!err.is_timeout(), "{err:?}");
    // The socket was closed with RST: the client sees ECONNRESET, not a response.
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut reset = false;
    while let Some(e) = src {
        reset |= e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionReset);
        src = e.source();
    }
    assert!(reset, "{err:?}");
    assert!(t0.elapsed() < Duration::from_secs(1), "reset is immediate");
    assert_eq!(f.ports_of("r1"), 0);
    assert_eq!(f.port_creates("fault_reset"), 1);
    // The rule fired once; the same client recovers on a new connection.
    let (st, _) = f.create(&c, "r1").await.expect("response");
    assert_eq!(st, 201);
    assert_eq!(f.ports_of("r1"), 1);
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn commit_then_drop() {
    let f = fixture_with_faults([on_port_create(FaultAction::CommitThenDrop)]).await;
    let t0 = Instant::now();
    f.create_times_out(Duration::from_secs(5), "cd").await;
    assert_eq!(t0.elapsed(), Duration::from_secs(5));
    assert_eq!(f.ports_of("cd"), 1, "committed although never answered");
    assert_eq!(f.port_creates("fault_commit_then_drop"), 1);
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn commit_then_answer_late() {
    let f = fixture_with_faults([on_port_create(FaultAction::CommitThenDelay { ms: 8000 })]).await;
    // A patient client gets the 201 after 8 s.
    let t0 = Instant::now();
    let (st, v) = f.create_answered(Duration::from_secs(60), "late").await;
    assert_eq!(st, 201);
    assert_eq!(v["port"]["device_id"], "late");
    assert_took(t0, 8000..8010);
    // An impatient one times out, but the port exists.
    f.create_times_out(Duration::from_secs(2), "late2").await;
    assert_eq!(f.ports_of("late2"), 1);
    assert_eq!(f.port_creates("fault_commit_then_delay"), 2);
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn delayed_commit_port_appears_after_client_gave_up() {
    let f = fixture_with_faults([on_port_create(FaultAction::DelayedCommit {
        ms: 10_000,
        status: None,
    })
    .times(1)])
    .await;
    let t0 = Instant::now();
    f.create_times_out(Duration::from_secs(3), "race").await;
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    assert_eq!(f.ports_of("race"), 0, "absent right after the client gave up");
    tokio::time::sleep_until(t0 + Duration::from_millis(9_990)).await;
    assert_eq!(f.ports_of("race"), 0);
    tokio::time::sleep_until(t0 + Duration::from_millis(10_010)).await;
    assert_eq!(f.ports_of("race"), 1, "present after 10 s");
    // With a status: the error comes at once, the commit still happens later.
    f.h.add_fault(
        on_port_create(FaultAction::DelayedCommit {
            ms: 4000,
            status: Some(500),
        })
        .times(1),
    );
    let t1 = Instant::now();
    let (st, _) = f.create_answered(Duration::from_secs(30), "race2").await;
    assert_eq!(st, 500);
    assert!(t1.elapsed() < Duration::from_millis(10));
    assert_eq!(f.ports_of("race2"), 0);
    tokio::time::sleep_until(t1 + Duration::from_millis(4010)).await;
    assert_eq!(f.ports_of("race2"), 1);
    assert_eq!(f.port_creates("fault_delayed_commit"), 2);
    f.sim.shutdown().await;
}

/// A held call is neither answered nor applied until the test releases it, however
/// long it waits; then it is handled as if it had just arrived.
#[tokio::test(start_paused = true)]
async fn a_held_call_waits_for_the_release() {
    let f = fixture_with_faults([on_port_create(FaultAction::Hold).times(1)]).await;
    let c = client(Duration::from_secs(3600));
    let held = tokio::spawn({
        let body = json!({"port": {"network_id": f.net, "device_id": "held"}});
        let url = f.url("/v2.0/ports");
        async move { try_send(c.post(url).json(&body)).await }
    });
    // tidy: allow sleep — ten minutes pass on the paused clock while the call is held
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!held.is_finished(), "answered before the release");
    assert_eq!(f.ports_of("held"), 0, "applied before the release");
    assert_eq!(f.h.release_held(), 1);
    let (st, v) = held.await.unwrap().expect("answer");
    assert_eq!(st, 201);
    assert_eq!(v["port"]["device_id"], "held");
    assert_eq!(f.ports_of("held"), 1);
    assert_eq!(f.port_creates("fault_hold"), 1);
    assert_eq!(f.h.release_held(), 0, "nothing else was held");
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn nth_call_rule() {
    let f = fixture_with_faults([on_port_create(FaultAction::Error { status: 500 }).nth(3)]).await;
    let c = client(Duration::from_secs(30));
    let mut codes = Vec::new();
    for i in 0..5 {
        codes.push(f.create(&c, &format!("n{i}")).await.expect("response").0);
    }
    assert_eq!(codes, [201, 201, 500, 201, 201]);
    assert_eq!(f.h.faults()[0].fired, 1);
    assert_eq!(f.h.faults()[0].matched, 5);
    f.sim.shutdown().await;
}

async fn probability_pattern(seed: u64) -> Vec<u16> {
    let cfg = SimConfig {
        seed,
        faults: vec![FaultRule::new("networks.list", FaultAction::Error { status: 500 }).probability(0.3)],
        ..SimConfig::default()
    };
    let f = fixture(cfg).await;
    let c = client(Duration::from_secs(30));
    let mut out = Vec::new();
    for _ in 0..40 {
        out.push(send(c.get(f.url("/v2.0/networks"))).await.0);
    }
    let s = f.h.stats();
    assert_eq!(
        s.outcome("networks.list", "fault_500") as usize,
        out.iter().filter(|c| **c == 500).count()
    );
    f.sim.shutdown().await;
    out
}

#[tokio::test(start_paused = true)]
async fn probability_rule_is_seeded() {
    let a = probability_pattern(42).await;
    let b = probability_pattern(42).await;
    assert_eq!(a, b, "same seed, same faults");
    let n = a.iter().filter(|c| **c == 500).count();
    assert!((4..=20).contains(&n), "about 30% of 40: {n}");
    assert_ne!(probability_pattern(43).await, a, "another seed, other faults");
}

#[tokio::test(start_paused = true)]
async fn body_and_query_match_rules() {
    let f = fixture_with_faults([
        on_port_create(FaultAction::Error { status: 500 }).body_matches(json!({"port": {"device_id": "victim"}})),
        FaultRule::new("ports.list", FaultAction::Error { status: 503 })
            .query_param("device_id", "victim")
            .times(1),
        FaultRule::new("ports.list", FaultAction::Error { status: 500 }).query_contains("name=boom"),
    ])
    .await;
    let c = client(Duration::from_secs(30));
    assert_eq!(f.create(&c, "other").await.expect("r").0, 201);
    assert_eq!(f.create(&c, "victim").await.expect("r").0, 500);
    assert_eq!(f.ports_of("victim"), 0);
    for (query, status, why) in [
        ("device_id=other", 200, "no rule matches"),
        ("device_id=other&device_id=victim", 503, "query_param matches"),
        ("device_id=victim", 200, "times(1) exhausted"),
        ("name=boom", 500, "query_contains matches"),
    ] {
        let (st, _) = send(c.get(f.url(&format!("/v2.0/ports?{query}")))).await;
        assert_eq!(st, status, "{query}: {why}");
    }
    f.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn admin_endpoints_faults_stats_reset() {
    let f = fixture(SimConfig::default()).await;
    let c = client(Duration::from_secs(30));
    // Add a rule over HTTP (JSON), list it, see it fire.
    let rule = json!({"op": "ports.create", "action": {"kind": "error", "status": 503}, "nth": 1});
    let (st, _) = send(c.post(f.url("/_sim/faults")).json(&rule)).await;
    assert_eq!(st, 201);
    assert_eq!(f.create(&c, "a").await.expect("r").0, 503);
    assert_eq!(f.create(&c, "a").await.expect("r").0, 201);
    let (_, v) = send(c.get(f.url("/_sim/faults"))).await;
    assert_eq!(v["faults"][0]["op"], "ports.create");
    assert_eq!(v["faults"][0]["fired"], 1);
    assert_eq!(v["faults"][0]["matched"], 2);
    send(c.get(f.url("/v2.0/nope"))).await;
    let (_, v) = send(c.get(f.url("/_sim/stats"))).await;
    assert_eq!(v["operations"]["ports.create"], json!({"fault_503": 1, "ok": 1}));
    assert_eq!(v["operations"]["unknown"], json!({"error_4xx": 1}));
    assert_eq!(v["total"], 3);
    // Bulk add, clear.
    let (st, _) = send(c.post(f.url("/_sim/faults")).json(&json!({"faults": [rule, rule]}))).await;
    assert_eq!(st, 201);
    assert_eq!(f.h.faults().len(), 3);
    let (st, _) = send(c.delete(f.url("/_sim/faults"))).await;
    assert_eq!(st, 204);
    assert!(f.h.faults().is_empty());
    // Bad rule: 400, not a panic.
    let (st, _) = send(
        c.post(f.url("/_sim/faults"))
            .json(&json!({"op": "x", "action": {"kind": "nope"}})),
    )
    .await;
    assert_eq!(st, 400);
    // Reset: stats and faults; with data, resources too.
    f.h.add_fault(FaultRule::new("*", FaultAction::Reset));
    let (st, _) = send(c.post(f.url("/_sim/reset"))).await;
    assert_eq!(st, 204);
    assert_eq!(f.h.stats().total(), 0);
    assert!(f.h.faults().is_empty());
    assert_eq!(f.ports_of("a"), 1);
    let (st, _) = send(c.post(f.url("/_sim/reset")).json(&json!({"data": true}))).await;
    assert_eq!(st, 204);
    assert_eq!(f.h.port_count(), 0);
    f.sim.shutdown().await;
}

/// `text` (JSON or TOML) as a config, checked for its seed and its first rule's action.
fn parsed_config(text: &str, seed: u64, action: FaultAction) -> SimConfig {
    let c = SimConfig::from_text(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(c.seed, seed);
    assert_eq!(c.faults[0].action, action);
    c
}

#[test]
fn config_from_json_and_toml() {
    let json_cfg = r#"{"seed": 7, "bind_activates": false, "extensions": ["binding"],
        "faults": [{"op": "ports.create", "action": {"kind": "delayed_commit", "ms": 500, "status": 503},
                    "body": {"port": {"device_id": "x"}}, "times": 2}]}"#;
    let c = parsed_config(
        json_cfg,
        7,
        FaultAction::DelayedCommit {
            ms: 500,
            status: Some(503),
        },
    );
    assert!(!c.bind_activates);
    assert_eq!(c.faults[0].times, Some(2));
    let toml_cfg = r#"
        seed = 9
        nova_url = "http://127.0.0.1:8774/v2.1"
        [[faults]]
        op = "ports.list"
        probability = 0.25
        action = { kind = "latency", ms = 100, max_ms = 300 }
    "#;
    let c = parsed_config(
        toml_cfg,
        9,
        FaultAction::Latency {
            ms: 100,
            max_ms: Some(300),
        },
    );
    assert_eq!(c.faults[0].probability, Some(0.25));
    assert!(
        SimConfig::from_text(r#"{"sede": 1}"#).is_err(),
        "unknown keys are rejected"
    );
}
