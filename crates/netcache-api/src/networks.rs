//! Nova's network proxies, served until 2.35 (404 from 2.36, as Nova):
//! `/v2.1/os-networks` and `/v2.1/os-tenant-networks`, list and show of the
//! Neutron networks the caller sees. Their views are Nova's: a network's id
//! and name (`label`), every nova-network field `null` (an admin sees more of
//! them), and `os-tenant-networks`' `cidr` the string `"None"` (Nova reads no
//! subnet). Their creates, deletes and actions are nova-network's, answered
//! 410 at every microversion as Nova does.

use axum::extract::Path;
use axum::routing::{get, post};
use axum::{Json, Router};
use netcache_domain::neutron::Network;
use netcache_domain::{NetworkId, ProjectId};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{AppState, Caller};

/// The last microversion of the proxies.
const LAST_VERSION: u16 = 35;

/// The nova-network fields every `os-networks` view has, `null` with Neutron.
const FIELDS: [&str; 9] = [
    "cidr",
    "netmask",
    "gateway",
    "broadcast",
    "dns1",
    "dns2",
    "cidr_v6",
    "gateway_v6",
    "netmask_v6",
];

/// The ones an admin sees as well.
const ADMIN_FIELDS: [&str; 21] = [
    "created_at",
    "updated_at",
    "deleted_at",
    "deleted",
    "injected",
    "bridge",
    "vlan",
    "vpn_public_address",
    "vpn_public_port",
    "vpn_private_address",
    "dhcp_start",
    "project_id",
    "host",
    "bridge_interface",
    "multi_host",
    "priority",
    "rxtx_base",
    "mtu",
    "dhcp_server",
    "enable_dhcp",
    "share_address",
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-networks", get(list).post(gone))
        .route("/v2.1/os-networks/add", post(gone))
        .route("/v2.1/os-networks/{id}", get(show).delete(gone))
        .route("/v2.1/os-networks/{id}/action", post(gone))
        .route("/v2.1/os-tenant-networks", get(tenant_list).post(gone))
        .route("/v2.1/os-tenant-networks/{id}", get(tenant_show).delete(gone))
}

async fn gone() -> ApiError {
    ApiError::Gone
}

/// Whose networks the caller sees: their project's (`Some`), or all.
fn scope(caller: &Caller) -> Option<ProjectId> {
    (!caller.is_admin()).then(|| caller.project())
}

fn network_view(network: &Network, admin: bool) -> Value {
    let mut view = Map::new();
    view.insert("id".into(), json!(network.id.as_str()));
    view.insert("label".into(), json!(network.name));
    let extra: &[&str] = if admin { &ADMIN_FIELDS } else { &[] };
    for field in FIELDS.iter().chain(extra) {
        view.insert((*field).into(), Value::Null);
    }
    Value::Object(view)
}

fn tenant_view(network: &Network) -> Value {
    json!({"id": network.id.as_str(), "cidr": "None", "label": network.name})
}

/// Which of the two proxies: its policy rules and its view of a network.
#[derive(Clone, Copy)]
enum Proxy {
    Networks,
    TenantNetworks,
}

impl Proxy {
    fn rule(self, show: bool) -> &'static str {
        match (self, show) {
            (Self::Networks, false) => "os_compute_api:os-networks:list",
            (Self::Networks, true) => "os_compute_api:os-networks:show",
            (Self::TenantNetworks, false) => "os_compute_api:os-tenant-networks:list",
            (Self::TenantNetworks, true) => "os_compute_api:os-tenant-networks:show",
        }
    }

    fn view(self, network: &Network, caller: &Caller) -> Value {
        match self {
            Self::Networks => network_view(network, caller.is_admin()),
            Self::TenantNetworks => tenant_view(network),
        }
    }
}

async fn listed(proxy: Proxy, state: &AppState, caller: &Caller, version: Microversion) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project(proxy.rule(false))?;
    let networks = state.networks().visible_networks(scope(caller).as_ref()).await?;
    let views: Vec<Value> = networks.iter().map(|n| proxy.view(n, caller)).collect();
    Ok(Json(json!({"networks": views})))
}

async fn shown(
    proxy: Proxy,
    state: &AppState,
    caller: &Caller,
    version: Microversion,
    id: &str,
) -> ApiResult<Json<Value>> {
    version.served_until(LAST_VERSION)?;
    caller.authorize_own_project(proxy.rule(true))?;
    let network = state
        .networks()
        .visible_network(&NetworkId::from(id), scope(caller).as_ref())
        .await?
        .ok_or_else(|| ApiError::NotFound("Network not found".into()))?;
    Ok(Json(json!({"network": proxy.view(&network, caller)})))
}

async fn list(NovaRequest { state, caller, version }: NovaRequest) -> ApiResult<Json<Value>> {
    listed(Proxy::Networks, &state, &caller, version).await
}

async fn show(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    shown(Proxy::Networks, &state, &caller, version, &id).await
}

async fn tenant_list(NovaRequest { state, caller, version }: NovaRequest) -> ApiResult<Json<Value>> {
    listed(Proxy::TenantNetworks, &state, &caller, version).await
}

async fn tenant_show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    shown(Proxy::TenantNetworks, &state, &caller, version, &id).await
}
