//! One server's views: as `GET /servers/{id}` shows it, and what an update and
//! a rebuild answer (Nova's basic server view below 2.75, the shown one from 2.75).

use netcache_domain::server::Server;
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::microversion::Microversion;
use crate::server_view::{Addresses, ServerDetail, ViewOptions};
use crate::{AppState, Caller};

/// What the detail view adds to Nova's basic server view.
const DETAIL_ONLY: &[&str] = &[
    "key_name",
    "security_groups",
    "config_drive",
    "OS-EXT-AZ:availability_zone",
    "OS-SRV-USG:launched_at",
    "OS-SRV-USG:terminated_at",
    "OS-EXT-STS:task_state",
    "OS-EXT-STS:vm_state",
    "OS-EXT-STS:power_state",
    "os-extended-volumes:volumes_attached",
];

/// The server as `GET /servers/{id}` shows it: the detail view with its
/// security groups' names and, from 2.71, its server groups.
pub async fn shown(state: &AppState, caller: &Caller, version: Microversion, server: &Server) -> ApiResult<Value> {
    let info = state.servers().addresses(server.id).await?;
    let names = state
        .attachments()
        .security_groups_of(&[server.id])
        .await?
        .remove(&server.id)
        .unwrap_or_default();
    let groups = crate::server_groups::of_server(state, version, server.id).await?;
    let options = ViewOptions::of(caller, version);
    Ok(json!(
        ServerDetail::new(&state.config.public_url, server, &info, &names, options).with_server_groups(groups)
    ))
}

/// What an update and a rebuild answer: below 2.75 Nova's basic view (no
/// extension keys, addresses without type and MAC), from 2.75 the server as
/// `GET /servers/{id}` shows it.
pub async fn server_answer(
    state: &AppState,
    caller: &Caller,
    version: Microversion,
    server: &Server,
) -> ApiResult<Value> {
    if version.at_least(75) {
        return shown(state, caller, version, server).await;
    }
    let base = &state.config.public_url;
    let info = state.servers().addresses(server.id).await?;
    let options = ViewOptions::of(caller, version);
    // Without the detail view's groups: no Neutron look-up for them.
    let mut view = json!(ServerDetail::new(base, server, &info, &[], options));
    if let Value::Object(fields) = &mut view {
        fields.retain(|key, _| {
            !DETAIL_ONLY.contains(&key.as_str()) && !key.starts_with("OS-EXT-SRV-ATTR:") && key != "host_status"
        });
    }
    view["addresses"] = json!(Addresses::of(server, &info, false));
    if let Some(groups) = crate::server_groups::of_server(state, version, server.id).await? {
        view["server_groups"] = json!(groups);
    }
    Ok(view)
}
