//! `/v2.1/os-instance_usage_audit_log` (admin): the state of Nova's periodic
//! instance usage audit over the last completed period (Nova's default: the
//! previous calendar month). netcache runs no such audit, as a Nova whose
//! `instance_usage_audit` is off (its default) runs none: every compute host
//! is listed as not run, with no log, no errors and no instances. A period
//! before a given time (`{before_timestamp}`, `%Y-%m-%d %H:%M:%S[.%f]`) is
//! shown the same way.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{Datelike, Months, NaiveDate, NaiveDateTime};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-instance_usage_audit_log", get(index))
        .route("/v2.1/os-instance_usage_audit_log/{before}", get(show))
}

async fn index(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-instance-usage-audit-log:list")?;
    let now = state.compute.clock().now();
    let log = audit_log(&state, now.naive_utc()).await?;
    Ok(Json(json!({"instance_usage_audit_logs": log})))
}

async fn show(State(state): State<AppState>, caller: Caller, Path(before): Path<String>) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-instance-usage-audit-log:show")?;
    let format = if before.contains('.') {
        "%Y-%m-%d %H:%M:%S%.f"
    } else {
        "%Y-%m-%d %H:%M:%S"
    };
    let before = NaiveDateTime::parse_from_str(&before, format)
        .map_err(|_| ApiError::BadRequest(format!("Invalid timestamp for date {before}")))?;
    let log = audit_log(&state, before).await?;
    Ok(Json(json!({"instance_usage_audit_log": log})))
}

/// The audit of the month before `before`'s, as a Nova that never ran it shows it.
async fn audit_log(state: &AppState, before: NaiveDateTime) -> ApiResult<Value> {
    let (begin, end) = last_completed_month(before);
    let hosts: Vec<String> = state
        .services()
        .services()
        .await?
        .iter()
        .map(|s| s.service.host.to_string())
        .collect();
    let count = hosts.len();
    let done = if count == 0 {
        "ALL".to_owned()
    } else {
        format!("0 of {count}")
    };
    Ok(json!({
        "hosts_not_run": hosts,
        "log": {},
        "num_hosts": count,
        "num_hosts_done": 0,
        "num_hosts_not_run": count,
        "num_hosts_running": 0,
        "overall_status": format!("{done} hosts done. 0 errors."),
        "period_beginning": python_str(begin),
        "period_ending": python_str(end),
        "total_errors": 0,
        "total_instances": 0,
    }))
}

/// Nova's `last_completed_audit_period` for `month` (day 1): the whole month
/// that ended before `before`.
fn last_completed_month(before: NaiveDateTime) -> (NaiveDateTime, NaiveDateTime) {
    let first = NaiveDate::from_ymd_opt(before.year(), before.month(), 1)
        .expect("the first of a month")
        .and_hms_opt(0, 0, 0)
        .expect("midnight");
    let end = if first >= before { first - Months::new(1) } else { first };
    (end - Months::new(1), end)
}

/// Python's `str(datetime)`: a space, and microseconds only when there are some.
fn python_str(at: NaiveDateTime) -> String {
    if at.and_utc().timestamp_subsec_micros() == 0 {
        at.format("%Y-%m-%d %H:%M:%S").to_string()
    } else {
        at.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn the_period_is_the_last_whole_month_before() {
        assert_eq!(
            last_completed_month(at("2025-06-15 10:00:00")),
            (at("2025-05-01 00:00:00"), at("2025-06-01 00:00:00"))
        );
        assert_eq!(
            last_completed_month(at("2025-06-01 00:00:00")),
            (at("2025-04-01 00:00:00"), at("2025-05-01 00:00:00")),
            "a month is complete only after its end"
        );
        assert_eq!(
            last_completed_month(at("2026-01-02 00:00:00")),
            (at("2025-12-01 00:00:00"), at("2026-01-01 00:00:00"))
        );
        assert_eq!(python_str(at("2025-05-01 00:00:00")), "2025-05-01 00:00:00");
    }
}
