//! `/v2.1/os-simple-tenant-usage`: what each project's servers used in a
//! window, as Nova 34 reports it. The list is every project's (an admin's),
//! one project's is its owner's or an admin's. A server counts if it was
//! launched before the window's end and not deleted by its start — deleted
//! servers too, until retention purges them — with its hours in the window, its
//! flavor's sizes (the flavor it booted with) and its uptime; each project's
//! summary adds up hours and sizes × hours. `start` and `end` take Nova's three
//! `strptime` formats (UTC, no zone), a missing one is now, and the end is
//! capped at now (the compute service's clock); the servers are chosen by the
//! bounds as given, where Nova cuts them to whole seconds. From 2.40 `limit` and `marker`
//! page the servers (not the projects), with a `next` link on a full page;
//! from 2.75 an unknown query parameter is refused.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::extract::Path;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use netcache_compute::UsageWindow;
use netcache_domain::ProjectId;
use netcache_domain::flavor::FlavorSnapshot;
use netcache_domain::server::Server;
use regex::Regex;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::{QueryParams, RawQuery};
use crate::request::NovaRequest;
use crate::wire::iso_micro;

const COLLECTION: &str = "os-simple-tenant-usage";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-simple-tenant-usage", get(index))
        .route("/v2.1/os-simple-tenant-usage/{tenant_id}", get(show))
}

/// The parameters of each query schema from 2.75 (none else is allowed).
const INDEX_PARAMS: [&str; 5] = ["start", "end", "detailed", "limit", "marker"];
const SHOW_PARAMS: [&str; 4] = ["start", "end", "limit", "marker"];

async fn index(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    let query = QueryParams::read(query)?;
    let paging = check_query(&state, version, &query, &INDEX_PARAMS)?;
    caller.authorize("os_compute_api:os-simple-tenant-usage:list")?;
    let report = Report::read(&state, &query, None, paging).await?;
    let detailed = query.first_given("detailed") == Some("1");
    let mut body = json!({"tenant_usages": report.summaries(detailed)});
    if let Some(links) = report.links(&state, &query, COLLECTION) {
        body["tenant_usages_links"] = links;
    }
    Ok(Json(body))
}

async fn show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(tenant_id): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    let query = QueryParams::read(query)?;
    let paging = check_query(&state, version, &query, &SHOW_PARAMS)?;
    caller.authorize_project("os_compute_api:os-simple-tenant-usage:show", &tenant_id)?;
    let project = ProjectId::from(tenant_id.as_str());
    let report = Report::read(&state, &query, Some(project), paging).await?;
    // Always detailed; a project with no server in the window is `{}`.
    let usage = report.summaries(true).into_iter().next().unwrap_or_else(|| json!({}));
    let mut body = json!({"tenant_usage": usage});
    if let Some(links) = report.links(&state, &query, &format!("{COLLECTION}/{tenant_id}")) {
        body["tenant_usage_links"] = links;
    }
    Ok(Json(body))
}

/// A page as a request asks for it (from 2.40): its size and marker.
struct Paging {
    limit: usize,
    marker: Option<String>,
}

/// Nova's query schema of `version`, checked before its policy: `known`
/// alone from 2.75, and from 2.40 `limit` a non-negative integer (capped at
/// `max_limit`). Before 2.40 there is no paging: a page of `max_limit`.
fn check_query(
    state: &AppState,
    version: Microversion,
    query: &QueryParams,
    known: &[&str],
) -> ApiResult<Option<Paging>> {
    if version.at_least(75) {
        query.only(known)?;
    }
    if !version.at_least(40) {
        return Ok(None);
    }
    let (limit, marker) = query.limit_and_marker(state.config.max_limit)?;
    Ok(Some(Paging {
        limit,
        marker: marker.map(str::to_owned),
    }))
}

/// One server's usage in the window.
struct ServerUsage {
    server: Server,
    /// The flavor it booted with (else, by its id, the flavor as it is now);
    /// `None`: no longer known.
    flavor: Option<FlavorSnapshot>,
    hours: f64,
}

impl ServerUsage {
    /// Nova's `local_gb`, `memory_mb` and `vcpus`.
    fn sizes(&self) -> Option<(i64, i64, i64)> {
        self.flavor
            .as_ref()
            .map(|f| (f.disk_gb + f.ephemeral_gb, f.ram_mb, f.vcpus))
    }

    /// Nova's server usage: `ended_at` and the `terminated` state for a
    /// deleted server, its vm_state else; its uptime to its deletion or to now.
    fn view(&self, now: DateTime<Utc>) -> Value {
        let server = &self.server;
        let started = server.launched_at.unwrap_or(now);
        let (state, until) = match server.deleted_at {
            Some(ended) => ("terminated", ended),
            None => (server.vm_state.as_str(), now),
        };
        let mut view = json!({
            "instance_id": server.id.to_string(),
            "name": server.name,
            "tenant_id": server.project_id.as_str(),
            "hours": self.hours,
            "flavor": self.flavor.as_ref().map_or("", |f| f.name.as_str()),
            "started_at": iso_micro(started),
            "ended_at": server.deleted_at.map(iso_micro),
            "state": state,
            "uptime": whole_seconds(until - started),
        });
        // A server whose flavor is known no more has no sizes (Nova's schema allows that).
        if let Some((local_gb, memory_mb, vcpus)) = self.sizes() {
            view["local_gb"] = json!(local_gb);
            view["memory_mb"] = json!(memory_mb);
            view["vcpus"] = json!(vcpus);
        }
        view
    }
}

/// What a request reports: its window and the usage of the servers of its page.
struct Report {
    start: DateTime<Utc>,
    stop: DateTime<Utc>,
    now: DateTime<Utc>,
    usages: Vec<ServerUsage>,
    /// The page's size, from 2.40 (a `next` link is judged by it).
    limit: Option<usize>,
}

impl Report {
    /// The window the query asks for, then the servers that ran in it (of
    /// `project` if given) with their flavors and hours.
    async fn read(
        state: &AppState,
        query: &QueryParams,
        project: Option<ProjectId>,
        paging: Option<Paging>,
    ) -> ApiResult<Self> {
        let compute = &state.compute;
        let now = compute.clock().now();
        let (start, stop) = window(query, now)?;
        let (limit, marker) = match paging {
            Some(Paging { limit, marker }) => (Some(limit), marker),
            None => (None, None),
        };
        // The marker may be any server, deleted or outside the window.
        let after = match marker {
            Some(marker) => Some(marker_server(state, &marker).await?),
            None => None,
        };
        // Nova's query compares with the bounds cut to whole seconds (its
        // `isotime`), so a server launched in the last second of a window
        // ending now is left out until the next second (Tempest's list right
        // after a boot would find nothing); these are compared as they are.
        let bounds = UsageWindow {
            start,
            end: stop,
            project_id: project,
        };
        let servers = compute
            .store()
            .servers_in_window(
                &bounds,
                after.as_ref(),
                page_size(limit.unwrap_or(state.config.max_limit)),
            )
            .await
            .map_err(netcache_compute::Error::from)?;
        let mut flavors: HashMap<String, Option<FlavorSnapshot>> = HashMap::new();
        let mut usages = Vec::with_capacity(servers.len());
        for server in servers {
            let flavor = match &server.flavor {
                Some(flavor) => Some(flavor.clone()),
                None => match flavors.get(&server.flavor_ref) {
                    Some(known) => known.clone(),
                    None => {
                        let found = crate::hypervisors::flavor_snapshot(state, &server.flavor_ref).await;
                        flavors.insert(server.flavor_ref.clone(), found.clone());
                        found
                    }
                },
            };
            let hours = server
                .launched_at
                .map_or(0.0, |launched| hours_in(launched, server.deleted_at, start, stop));
            usages.push(ServerUsage { server, flavor, hours });
        }
        Ok(Self {
            start,
            stop,
            now,
            usages,
            limit,
        })
    }

    /// One summary per project, in the order the servers come (by project):
    /// its totals, and its servers' usage if `detailed`.
    fn summaries(&self, detailed: bool) -> Vec<Value> {
        let mut summaries: Vec<Summary> = Vec::new();
        for usage in &self.usages {
            let project = usage.server.project_id.as_str();
            if summaries.last().is_none_or(|s| s.tenant_id != project) {
                summaries.push(Summary::new(project));
            }
            let summary = summaries.last_mut().expect("the project's summary");
            summary.add(usage);
            if detailed {
                summary.server_usages.push(usage.view(self.now));
            }
        }
        summaries.iter().map(|s| s.view(self, detailed)).collect()
    }

    /// From 2.40, the `next` link of a full page (of servers) to `path`.
    fn links(&self, state: &AppState, query: &QueryParams, path: &str) -> Option<Value> {
        let last = self.usages.last().map(|u| u.server.id.to_string());
        query.next_links(
            &state.config.public_url,
            path,
            self.limit?,
            self.usages.len(),
            last.as_deref(),
        )
    }
}

/// A project's summary: its totals (sizes × hours), and its servers' usage.
struct Summary<'a> {
    tenant_id: &'a str,
    server_usages: Vec<Value>,
    local_gb: f64,
    memory_mb: f64,
    vcpus: f64,
    hours: f64,
}

impl<'a> Summary<'a> {
    fn new(tenant_id: &'a str) -> Self {
        Self {
            tenant_id,
            server_usages: Vec::new(),
            local_gb: 0.0,
            memory_mb: 0.0,
            vcpus: 0.0,
            hours: 0.0,
        }
    }

    fn add(&mut self, usage: &ServerUsage) {
        if let Some((local_gb, memory_mb, vcpus)) = usage.sizes() {
            self.local_gb += as_f64(local_gb) * usage.hours;
            self.memory_mb += as_f64(memory_mb) * usage.hours;
            self.vcpus += as_f64(vcpus) * usage.hours;
        }
        self.hours += usage.hours;
    }

    /// Nova's 7 keys, and `server_usages` if `detailed`.
    fn view(&self, report: &Report, detailed: bool) -> Value {
        let mut view = json!({
            "tenant_id": self.tenant_id,
            "total_local_gb_usage": self.local_gb,
            "total_vcpus_usage": self.vcpus,
            "total_memory_mb_usage": self.memory_mb,
            "total_hours": self.hours,
            "start": iso_micro(report.start),
            "stop": iso_micro(report.stop),
        });
        if detailed {
            view["server_usages"] = json!(self.server_usages);
        }
        view
    }
}

/// The server a marker names, deleted or not; Nova's 400 if none.
async fn marker_server(state: &AppState, marker: &str) -> ApiResult<Server> {
    let not_found = || ApiError::BadRequest(format!("Marker {marker} could not be found."));
    let id = marker.parse().map_err(|_| not_found())?;
    state.servers().server_or_deleted(id).await.map_err(|e| match e {
        netcache_compute::Error::ServerNotFound(_) => not_found(),
        other => other.into(),
    })
}

/// Nova's `_parse_qs_params`: the first non-blank `start` and `end` (a missing
/// one is now: the start read first, a microsecond before), the start before
/// the end, and then the end capped at now.
fn window(query: &QueryParams, now: DateTime<Utc>) -> ApiResult<(DateTime<Utc>, DateTime<Utc>)> {
    let start = query
        .first_given("start")
        .map_or(Ok(now - TimeDelta::microseconds(1)), parse_time)?;
    let end = query.first_given("end").map_or(Ok(now), parse_time)?;
    if start >= end {
        return Err(ApiError::BadRequest(
            "Invalid start time. The start time cannot occur after the end time.".into(),
        ));
    }
    Ok((start, end.min(now)))
}

/// Python's `strptime` patterns for Nova's three formats, `%Y-%m-%dT%H:%M:%S`,
/// `%Y-%m-%dT%H:%M:%S.%f` and `%Y-%m-%d %H:%M:%S.%f`, as `_strptime` builds
/// them (case-insensitive; a space is any run of white space), whole.
static TIME_FORMATS: LazyLock<[Regex; 3]> = LazyLock::new(|| {
    const DATE: &str = "(?P<Y>[0-9]{4})-(?P<m>1[0-2]|0[1-9]|[1-9])-(?P<d>3[01]|[12][0-9]|0[1-9]|[1-9]| [1-9])";
    const TIME: &str = "(?P<H>2[0-3]|[0-1][0-9]|[0-9]):(?P<M>[0-5][0-9]|[0-9]):(?P<S>6[0-1]|[0-5][0-9]|[0-9])";
    const FRACTION: &str = r"\.(?P<f>[0-9]{1,6})";
    [
        format!("(?i)^{DATE}T{TIME}$"),
        format!("(?i)^{DATE}T{TIME}{FRACTION}$"),
        format!(r"(?i)^{DATE}\s+{TIME}{FRACTION}$"),
    ]
    .map(|pattern| Regex::new(&pattern).expect("a valid pattern"))
});

/// A `start` or `end` in the first of Nova's formats it fits, as UTC; Nova's
/// 400 if none does (or the date or time does not exist).
fn parse_time(text: &str) -> ApiResult<DateTime<Utc>> {
    let invalid = || ApiError::BadRequest("Invalid datetime string: Datetime is in invalid format".into());
    let captures = TIME_FORMATS
        .iter()
        .find_map(|format| format.captures(text))
        .ok_or_else(invalid)?;
    let number = |name: &str| -> u32 {
        captures
            .name(name)
            .map_or(0, |m| m.as_str().trim().parse().unwrap_or(0))
    };
    // `%f` is the fraction's digits: `5` is half a second.
    let micros = captures
        .name("f")
        .map_or(0, |m| format!("{:0<6}", m.as_str()).parse().unwrap_or(0));
    let year = i32::try_from(number("Y")).map_err(|_| invalid())?;
    // Python's years start at 1, and its seconds end at 59.
    if year < 1 {
        return Err(invalid());
    }
    NaiveDate::from_ymd_opt(year, number("m"), number("d"))
        .and_then(|date| date.and_hms_micro_opt(number("H"), number("M"), number("S"), micros))
        .map(|t| t.and_utc())
        .ok_or_else(invalid)
}

/// Nova's `_hours_for`: the part of `start`..`stop` a server launched at
/// `launched` (and deleted at `ended`) was up, in hours.
fn hours_in(launched: DateTime<Utc>, ended: Option<DateTime<Utc>>, start: DateTime<Utc>, stop: DateTime<Utc>) -> f64 {
    if ended.is_some_and(|e| e < start) || launched > stop {
        return 0.0;
    }
    let up = ended.map_or(stop, |e| e.min(stop)) - launched.max(start);
    seconds(up) / 3600.0
}

/// Python's `timedelta.total_seconds()`.
fn seconds(delta: TimeDelta) -> f64 {
    as_f64(delta.num_microseconds().unwrap_or(i64::MAX)) / 1e6
}

/// Python's `int(delta.total_seconds())`: whole seconds, toward zero.
fn whole_seconds(delta: TimeDelta) -> i64 {
    delta.num_microseconds().unwrap_or(i64::MAX) / 1_000_000
}

/// A page's size as the store takes it.
fn page_size(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// A size or a count of microseconds as Python's float of it.
fn as_f64(n: i64) -> f64 {
    n as f64
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn times_are_read_in_novas_three_formats_and_nothing_else() {
        for (text, want) in [
            ("2025-06-15T10:11:12", "2025-06-15T10:11:12Z"),
            ("2025-06-15T10:11:12.5", "2025-06-15T10:11:12.5Z"),
            ("2025-06-15T10:11:12.000123", "2025-06-15T10:11:12.000123Z"),
            ("2025-06-15 10:11:12.25", "2025-06-15T10:11:12.25Z"),
            ("2025-06-15  10:11:12.25", "2025-06-15T10:11:12.25Z"),
            ("2025-6-5t1:2:3", "2025-06-05T01:02:03Z"),
            ("2025-06- 5T10:11:12", "2025-06-05T10:11:12Z"),
        ] {
            assert_eq!(parse_time(text).unwrap(), utc(want), "{text}");
        }
        for bad in [
            "",
            "2025-06-15",
            "2025-06-15T10:11:12Z",
            "2025-06-15T10:11:12+00:00",
            "2025-06-15 10:11:12",
            "2025-06-15T10:11:12.1234567",
            "2025-06-15T24:00:00",
            "2025-02-30T10:11:12",
            "2025-06-15T10:11:60",
            "0000-06-15T10:11:12",
            "25-06-15T10:11:12",
            "2025-06-15T10:11:12 ",
            "tomorrow",
        ] {
            match parse_time(bad) {
                Err(ApiError::BadRequest(m)) => {
                    assert_eq!(m, "Invalid datetime string: Datetime is in invalid format");
                }
                other => panic!("{bad:?}: {:?}", other.map(|t| t.to_rfc3339())),
            }
        }
    }

    #[test]
    fn hours_are_the_part_of_the_window_the_server_was_up() {
        let t = |h: i64| Utc.with_ymd_and_hms(2025, 6, 15, 0, 0, 0).unwrap() + TimeDelta::hours(h);
        let (start, stop) = (t(10), t(20));
        for (launched, deleted, hours) in [
            (0, None, 10.0),
            (12, None, 8.0),
            (12, Some(15), 3.0),
            (5, Some(30), 10.0),
            (5, Some(8), 0.0),
            (21, None, 0.0),
        ] {
            assert_eq!(
                hours_in(t(launched), deleted.map(t), start, stop),
                hours,
                "{launched}..{deleted:?}"
            );
        }
        assert_eq!(whole_seconds(TimeDelta::milliseconds(5_999)), 5);
        assert!((seconds(TimeDelta::microseconds(1_500_000)) - 1.5).abs() < f64::EPSILON);
    }
}
