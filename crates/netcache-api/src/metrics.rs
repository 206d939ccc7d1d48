//! Prometheus metrics: the process-wide recorder and `GET /metrics` (admin-only
//! on the compute API; open on the optional metrics listener).
//!
//! The recorder is installed once per process ([`handle`]); every crate records
//! through the `metrics` macros. [`describe`] gives each netcache series its HELP
//! text. The exporter prints a series (and its HELP/TYPE lines) only once it has been
//! recorded at least once.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use netcache_compute::Compute;

use crate::AppState;

/// Content type of the Prometheus text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// Upper bounds (seconds) of the buckets of every `*_duration_seconds` histogram.
const DURATION_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// How often recorded histogram samples are folded into their buckets (scrapes do
/// it too); bounds the memory held between scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The handle of netcache's recorder, installed as the global recorder on first use.
///
/// If another recorder is already installed, netcache's own is returned uninstalled
/// (it renders nothing) and a warning is logged; this never panics.
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(install)
}

/// Upper bounds of the buckets of `netcache_store_group_batches` (SQLite's
/// writer takes at most 64 batches a group).
const GROUP_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

fn builder() -> PrometheusBuilder {
    let suffix = Matcher::Suffix("_duration_seconds".to_owned());
    let groups = Matcher::Full("netcache_store_group_batches".to_owned());
    let buckets = PrometheusBuilder::new()
        .set_buckets_for_metric(suffix, DURATION_BUCKETS)
        .and_then(|b| b.set_buckets_for_metric(groups, GROUP_BUCKETS));
    match buckets {
        Ok(builder) => builder,
        Err(error) => {
            tracing::warn!(%error, "histogram buckets refused; durations are exported as summaries");
            PrometheusBuilder::new()
        }
    }
}

fn install() -> PrometheusHandle {
    match builder().install_recorder() {
        Ok(handle) => {
            let upkeep = handle.clone();
            let spawned = std::thread::Builder::new()
                .name("metrics-upkeep".to_owned())
                .spawn(move || {
                    loop {
                        std::thread::sleep(UPKEEP_INTERVAL);
                        upkeep.run_upkeep();
                    }
                });
            if let Err(error) = spawned {
                tracing::warn!(%error, "cannot start the metrics upkeep thread; histograms are folded at scrapes only");
            }
            handle
        }
        Err(error) => {
            tracing::warn!(%error, "another metrics recorder is installed; GET /metrics serves an empty registry");
            builder().build_recorder().handle()
        }
    }
}

/// Registers the HELP text and unit of every netcache series with the global recorder.
/// Idempotent.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};

    describe_counter!(
        "netcache_neutron_calls_total",
        Unit::Count,
        "Neutron HTTP attempts (retries and pages included) by operation and outcome (ok, rejected, ambiguous, unreachable, auth, protocol)."
    );
    describe_histogram!(
        "netcache_neutron_call_duration_seconds",
        Unit::Seconds,
        "Duration of one Neutron HTTP attempt by operation."
    );
    describe_counter!(
        "netcache_keystone_auth_total",
        Unit::Count,
        "Keystone token requests by outcome (ok, auth)."
    );
    describe_counter!(
        "netcache_api_requests_total",
        Unit::Count,
        "Compute API requests by method, route template (unmatched: no route) and status."
    );
    describe_histogram!(
        "netcache_api_request_duration_seconds",
        Unit::Seconds,
        "Duration of one compute API request by method, route template and status."
    );
    describe_counter!(
        "netcache_api_token_validations_total",
        Unit::Count,
        "Users' token validations by outcome (valid, invalid, error: Keystone could not be asked, cached, cached_invalid: refused from the cache)."
    );
    describe_counter!("netcache_heal_passes_total", Unit::Count, "Completed heal passes.");
    describe_histogram!(
        "netcache_heal_pass_duration_seconds",
        Unit::Seconds,
        "Duration of one heal pass."
    );
    describe_counter!(
        "netcache_heal_servers_total",
        Unit::Count,
        "Servers examined by heal passes."
    );
    describe_counter!(
        "netcache_lost_vifs_total",
        Unit::Count,
        "VIF records whose Neutron port was found gone."
    );
    describe_counter!(
        "netcache_gc_actions_total",
        Unit::Count,
        "Garbage-collector decisions on ghost ports by action (delete, unbind, skip, would_delete, would_unbind) and reason."
    );
    describe_counter!(
        "netcache_heal_batch_failures_total",
        Unit::Count,
        "Heal batches a pass could not heal (a Neutron or store error); the next pass heals them again."
    );
    describe_counter!(
        "netcache_gc_failures_total",
        Unit::Count,
        "Ghost ports (object=ghost) and servers' releases (object=release) a GC pass could not deal with; the next pass tries again."
    );
    describe_counter!(
        "netcache_pass_failures_total",
        Unit::Count,
        "Whole passes of a periodic loop (heal, gc, purge) that failed."
    );
    describe_counter!(
        "netcache_cache_writes_total",
        Unit::Count,
        "Network info cache writes by source (allocate, detach, heal, event, release)."
    );
    describe_gauge!(
        "netcache_ghosts",
        Unit::Count,
        "Ghost ports (carry a server's device_id without a VIF record) by owner (ours, foreign)."
    );
    describe_counter!(
        "netcache_restored_vifs_total",
        Unit::Count,
        "VIF records marked lost whose port Neutron gave the server again."
    );
    describe_counter!(
        "netcache_purged_servers_total",
        Unit::Count,
        "Deleted servers purged with their records (retention)."
    );
    describe_gauge!(
        "netcache_operations",
        Unit::Count,
        "Operations in flight by kind and lease (live, expired), read from the store at each scrape."
    );
    describe_counter!(
        "netcache_operations_started_total",
        Unit::Count,
        "Operations this process recorded and started, by kind."
    );
    describe_counter!(
        "netcache_operations_finished_total",
        Unit::Count,
        "Operations this process finished, by kind."
    );
    describe_counter!(
        "netcache_operations_taken_over_total",
        Unit::Count,
        "Operations this process took over from a dead owner (expired lease), by kind."
    );
    describe_counter!(
        "netcache_operation_retries_total",
        Unit::Count,
        "Steps of operations that failed and are retried, by kind."
    );
    describe_histogram!(
        "netcache_store_commit_duration_seconds",
        Unit::Seconds,
        "Duration of one batch's commit as its caller sees it (a wait for SQLite's writer included)."
    );
    describe_counter!(
        "netcache_store_commits_total",
        Unit::Count,
        "Batches committed or refused, by outcome (ok, conflict, not_found, over_quota, unavailable: the database down, unreachable or full, error)."
    );
    describe_histogram!(
        "netcache_store_group_batches",
        Unit::Count,
        "Batches SQLite's writer committed in one transaction (one fsync)."
    );
    describe_counter!(
        "netcache_store_writer_panics_total",
        Unit::Count,
        "Groups of batches SQLite's writer failed because committing them panicked (a bug; the writer goes on)."
    );
    describe_counter!(
        "netcache_store_writer_reconnects_total",
        Unit::Count,
        "Times SQLite's writer closed its connection after a failed transaction (a full disk) for a fresh one."
    );
    describe_gauge!(
        "netcache_store_write_queue",
        Unit::Count,
        "Batches queued for SQLite's writer behind the group it is committing."
    );
    describe_gauge!(
        "netcache_intents",
        Unit::Count,
        "Port intents by state (pending, created, failed, abandoned)."
    );
    describe_nova();
}

/// The series of `netcache nova audit|gc|watch`.
fn describe_nova() {
    use metrics::{describe_counter, describe_gauge};

    describe_gauge!(
        "netcache_nova_findings",
        Unit::Count,
        "Findings of the last Nova audit by kind (ghost_shown, ghost_hidden, leaked, stale, missing, undecided)."
    );
    describe_gauge!(
        "netcache_nova_instances_audited",
        Unit::Count,
        "Live Nova instances the last audit judged."
    );
    describe_gauge!(
        "netcache_nova_audit_last_success_timestamp_seconds",
        Unit::Seconds,
        "When the last Nova audit finished (Unix time)."
    );
    describe_counter!(
        "netcache_nova_gc_total",
        Unit::Count,
        "Findings Nova GC was ready to act on, by kind and outcome (would_act, deleted, deleted_nova_not_told, gone, skipped, failed)."
    );
    describe_counter!(
        "netcache_nova_events_total",
        Unit::Count,
        "External events sent to Nova (network-vif-deleted, network-changed), by HTTP status of the answer."
    );
    describe_counter!(
        "netcache_nova_pass_failures_total",
        Unit::Count,
        "Passes of netcache nova watch that failed (Nova's database or Neutron)."
    );
    describe_counter!(
        "netcache_nova_db_queries_total",
        Unit::Count,
        "Statements sent to Nova's cell databases, by cell."
    );
}

/// `GET /metrics`: the Prometheus text exposition.
pub(crate) async fn render(State(state): State<AppState>, caller: crate::Caller) -> Response {
    if let Err(refused) = caller.authorize("netcache:metrics") {
        return refused.into_response();
    }
    scrape(&state.compute).await
}

/// The metrics listener (`api.metrics_listen`): `GET /metrics` with no identity,
/// for a Prometheus that cannot carry a token; it serves nothing else.
pub fn router(compute: Arc<Compute>) -> Router {
    handle();
    describe();
    Router::new()
        .route(
            "/metrics",
            get(|State(compute): State<Arc<Compute>>| async move { scrape(&compute).await }),
        )
        .fallback(|| async { crate::nova_error(StatusCode::NOT_FOUND, "The resource could not be found.") })
        .with_state(compute)
}

async fn scrape(compute: &Compute) -> Response {
    if let Err(e) = compute.refresh_gauges().await {
        tracing::warn!(error = %e, "Could not refresh gauges from the store: {e}");
    }
    exposition()
}

fn exposition() -> Response {
    let handle = handle();
    handle.run_upkeep();
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], handle.render()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `# HELP` and `# TYPE` lines of `name`, if rendered.
    fn help_and_type(text: &str, name: &str) -> (Option<String>, Option<String>) {
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{prefix} {name} ")))
                .map(str::to_owned)
        };
        (line("# HELP"), line("# TYPE"))
    }

    #[tokio::test]
    async fn render_shows_described_series_once_recorded() {
        handle();
        handle(); // idempotent
        describe();
        describe();

        // Described but never recorded: not rendered.
        metrics::describe_counter!("netcache_test_described_only_total", "never recorded");
        let text = handle().render();
        assert!(!text.contains("netcache_test_described_only_total"), "{text}");

        metrics::counter!("netcache_neutron_calls_total", "operation" => "ports.list", "outcome" => "ok").increment(1);
        metrics::counter!("netcache_keystone_auth_total", "outcome" => "ok").increment(1);
        metrics::counter!("netcache_heal_passes_total").increment(1);
        metrics::counter!("netcache_heal_servers_total").increment(3);
        metrics::counter!("netcache_lost_vifs_total").increment(1);
        metrics::counter!("netcache_gc_actions_total", "action" => "would_delete", "reason" => "abandoned_intent")
            .increment(1);
        metrics::counter!("netcache_cache_writes_total", "source" => "allocate").increment(1);
        metrics::histogram!("netcache_neutron_call_duration_seconds", "operation" => "ports.list").record(0.003);
        metrics::histogram!("netcache_heal_pass_duration_seconds").record(0.2);
        metrics::gauge!("netcache_ghosts", "owner" => "ours").set(2.0);
        metrics::gauge!("netcache_intents", "state" => "pending").set(1.0);
        metrics::histogram!("netcache_store_commit_duration_seconds").record(0.002);
        metrics::counter!("netcache_store_commits_total", "outcome" => "ok").increment(1);
        metrics::histogram!("netcache_store_group_batches").record(3.0);
        metrics::gauge!("netcache_store_write_queue").set(0.0);
        metrics::counter!("netcache_store_writer_panics_total").increment(1);
        metrics::counter!("netcache_store_writer_reconnects_total").increment(1);
        metrics::counter!("netcache_api_requests_total", "method" => "GET", "route" => "/", "status" => "200")
            .increment(1);
        metrics::histogram!("netcache_api_request_duration_seconds", "method" => "GET", "route" => "/", "status" => "200")
            .record(0.001);
        metrics::counter!("netcache_api_token_validations_total", "outcome" => "valid").increment(1);

        let response = exposition();
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();

        for (name, kind) in [
            ("netcache_neutron_calls_total", "counter"),
            ("netcache_keystone_auth_total", "counter"),
            ("netcache_heal_passes_total", "counter"),
            ("netcache_heal_servers_total", "counter"),
            ("netcache_lost_vifs_total", "counter"),
            ("netcache_gc_actions_total", "counter"),
            ("netcache_cache_writes_total", "counter"),
            ("netcache_neutron_call_duration_seconds", "histogram"),
            ("netcache_heal_pass_duration_seconds", "histogram"),
            ("netcache_ghosts", "gauge"),
            ("netcache_intents", "gauge"),
            ("netcache_store_commit_duration_seconds", "histogram"),
            ("netcache_store_commits_total", "counter"),
            ("netcache_store_group_batches", "histogram"),
            ("netcache_store_write_queue", "gauge"),
            ("netcache_store_writer_panics_total", "counter"),
            ("netcache_store_writer_reconnects_total", "counter"),
            ("netcache_api_requests_total", "counter"),
            ("netcache_api_request_duration_seconds", "histogram"),
            ("netcache_api_token_validations_total", "counter"),
        ] {
            let (help, type_line) = help_and_type(&text, name);
            assert!(help.is_some(), "no HELP for {name}:\n{text}");
            assert_eq!(
                type_line.as_deref(),
                Some(format!("# TYPE {name} {kind}").as_str()),
                "{text}"
            );
        }
        // Series names are exported as given (no unit suffix appended).
        assert!(
            text.contains(r#"netcache_neutron_calls_total{operation="ports.list",outcome="ok"} "#),
            "{text}"
        );
        assert!(text.contains(r#"netcache_ghosts{owner="ours"} 2"#), "{text}");
        // Durations are histograms with the explicit buckets.
        assert!(
            text.contains(r#"netcache_heal_pass_duration_seconds_bucket{le="0.25"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"netcache_store_group_batches_bucket{le="4"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"netcache_neutron_call_duration_seconds_bucket{operation="ports.list",le="0.001"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"netcache_neutron_call_duration_seconds_bucket{operation="ports.list",le="30"} "#),
            "{text}"
        );
    }
}
