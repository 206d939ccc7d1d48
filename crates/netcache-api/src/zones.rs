//! `/v2.1/os-availability-zone`: the zones of the compute hosts — each host's
//! aggregate's zone, or the deployment's default zone (`os-aggregates`) —,
//! available while one of the zone's `nova-compute` services is enabled (Nova
//! lists the zones only disabled services are in as unavailable); the admin
//! `detail` lists each available zone's hosts whose service is enabled, with
//! whether it is up and its last heartbeat. netcache has no scheduler or
//! conductor service, so Nova's `internal` zone, which lists those, is never
//! shown.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use crate::error::ApiResult;
use crate::wire::{Zone, ZoneHost};
use crate::{AppState, Caller, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-availability-zone", get(list))
        .route("/v2.1/os-availability-zone/detail", get(detail))
}

/// Nova's `get_availability_zones`: the available zones, by name, with their
/// enabled hosts, then the unavailable ones.
async fn zones(state: &AppState) -> ApiResult<Vec<Zone>> {
    let aggregates = state.aggregates().aggregates().await?;
    let default = &state.compute.config().availability_zone;
    let mut enabled: BTreeMap<String, Vec<ZoneHost>> = BTreeMap::new();
    let mut disabled: BTreeSet<String> = BTreeSet::new();
    for s in state.services().services().await? {
        let zone = aggregates.zone_of(&s.service.host, default).to_owned();
        if s.service.disabled {
            disabled.insert(zone);
            continue;
        }
        enabled.entry(zone).or_default().push(ZoneHost {
            host: s.service.host.to_string(),
            available: s.service.is_up(s.heartbeat_live),
            active: true,
            updated_at: s.service.updated_at,
        });
    }
    let unavailable: Vec<Zone> = disabled
        .into_iter()
        .filter(|z| !enabled.contains_key(z))
        .map(|name| Zone {
            name,
            available: false,
            hosts: None,
        })
        .collect();
    let mut zones: Vec<Zone> = enabled
        .into_iter()
        .map(|(name, hosts)| Zone {
            name,
            available: true,
            hosts: Some(hosts),
        })
        .collect();
    zones.extend(unavailable);
    Ok(zones)
}

/// The zones a boot may ask for (Nova's available zones).
pub(crate) async fn available(state: &AppState) -> ApiResult<BTreeSet<String>> {
    Ok(zones(state)
        .await?
        .into_iter()
        .filter(|z| z.available)
        .map(|z| z.name)
        .collect())
}

async fn list(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let mut zones = zones(&state).await?;
    for zone in &mut zones {
        zone.hosts = None;
    }
    Ok(Json(wire::availability_zones(&zones)))
}

async fn detail(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.authorize("os_compute_api:os-availability-zone:detail")?;
    Ok(Json(wire::availability_zones(&zones(&state).await?)))
}
