//! `GET /v2.1/extensions` and `/extensions/{alias}`: Nova's 2.1 list of API
//! extensions, limited to those netcache serves. Nova lists every extension it
//! ever had whatever the deployment runs; netcache lists one only when it
//! answers what the entry names as Nova does (the calls, or the view fields
//! it adds; `os-consoles` is Nova's 410 in both), so a client that reads the
//! list is not told of `os-volumes` and the like netcache has not got. An
//! unknown alias is 404; from 2.102 any query parameter is refused.

use axum::extract::Path;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::{QueryParams, RawQuery};
use crate::{AppState, Caller};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/extensions", get(list))
        .route("/v2.1/extensions/{alias}", get(show))
}

/// Nova's entries (alias, name, description) for what netcache serves, in
/// Nova's order.
const EXTENSIONS: &[(&str, &str, &str)] = &[
    ("NMN", "Multinic", "Multiple network support."),
    (
        "OS-EXT-AZ",
        "ExtendedAvailabilityZone",
        "Extended Availability Zone support.",
    ),
    ("OS-EXT-IPS", "ExtendedIps", "Adds type parameter to the ip list."),
    (
        "OS-EXT-IPS-MAC",
        "ExtendedIpsMac",
        "Adds mac address parameter to the ip list.",
    ),
    (
        "OS-EXT-SRV-ATTR",
        "ExtendedServerAttributes",
        "Extended Server Attributes support.",
    ),
    ("OS-EXT-STS", "ExtendedStatus", "Extended Status support."),
    (
        "OS-FLV-DISABLED",
        "FlavorDisabled",
        "Support to show the disabled status of a flavor.",
    ),
    (
        "OS-FLV-EXT-DATA",
        "FlavorExtraData",
        "Provide additional data for flavors.",
    ),
    (
        "OS-SRV-USG",
        "ServerUsage",
        "Adds launched_at and terminated_at on Servers.",
    ),
    ("os-access-ips", "AccessIPs", "Access IPs support."),
    (
        "os-admin-actions",
        "AdminActions",
        "Enable admin-only server actions\n\n    Actions include: resetNetwork, injectNetworkInfo, os-resetState\n    ",
    ),
    (
        "os-admin-password",
        "AdminPassword",
        "Admin password management support.",
    ),
    ("os-aggregates", "Aggregates", "Admin-only aggregate administration."),
    ("os-attach-interfaces", "AttachInterfaces", "Attach interface support."),
    (
        "os-availability-zone",
        "AvailabilityZone",
        "1. Add availability_zone to the Create Server API.\n       2. Add availability zones describing.\n    ",
    ),
    (
        "os-console-output",
        "ConsoleOutput",
        "Console log output support, with tailing ability.",
    ),
    ("os-consoles", "Consoles", "Interactive Console support."),
    ("os-deferred-delete", "DeferredDelete", "Instance deferred delete."),
    (
        "os-extended-floating-ips",
        "ExtendedFloatingIps",
        "Adds optional fixed_address to the add floating IP command.",
    ),
    (
        "os-extended-hypervisors",
        "ExtendedHypervisors",
        "Extended hypervisors support.",
    ),
    (
        "os-extended-quotas",
        "ExtendedQuotas",
        "Adds ability for admins to delete quota and optionally force the update Quota command.",
    ),
    ("os-extended-services", "ExtendedServices", "Extended services support."),
    (
        "os-extended-services-delete",
        "ExtendedServicesDelete",
        "Extended services deletion support.",
    ),
    ("os-extended-status", "ExtendedStatus", "Extended Status support."),
    ("os-flavor-access", "FlavorAccess", "Flavor access support."),
    (
        "os-flavor-extra-specs",
        "FlavorExtraSpecs",
        "Flavors extra specs support.",
    ),
    ("os-flavor-manage", "FlavorManage", "Flavor create/delete API support."),
    (
        "os-flavor-rxtx",
        "FlavorRxtx",
        "Support to show the rxtx status of a flavor.",
    ),
    (
        "os-flavor-swap",
        "FlavorSwap",
        "Support to show the swap status of a flavor.",
    ),
    ("os-floating-ip-pools", "FloatingIpPools", "Floating IPs support."),
    ("os-floating-ips", "FloatingIps", "Floating IPs support."),
    ("os-hosts", "Hosts", "Admin-only host administration."),
    ("os-hypervisor-status", "HypervisorStatus", "Show hypervisor status."),
    ("os-hypervisors", "Hypervisors", "Admin-only hypervisor administration."),
    (
        "os-instance-actions",
        "InstanceActions",
        "View a log of actions and events taken on an instance.",
    ),
    (
        "os-instance_usage_audit_log",
        "OSInstanceUsageAuditLog",
        "Admin-only Task Log Monitoring.",
    ),
    ("os-keypairs", "Keypairs", "Keypair Support."),
    ("os-lock-server", "LockServer", "Enable lock/unlock server actions."),
    (
        "os-multiple-create",
        "MultipleCreate",
        "Allow multiple create in the Create Server v2.1 API.",
    ),
    ("os-networks", "Networks", "Admin-only Network Management Extension."),
    ("os-pause-server", "PauseServer", "Enable pause/unpause server actions."),
    (
        "os-quota-class-sets",
        "QuotaClasses",
        "Quota classes management support.",
    ),
    ("os-quota-sets", "Quotas", "Quotas management support."),
    ("os-rescue", "Rescue", "Instance rescue mode."),
    ("os-security-groups", "SecurityGroups", "Security group support."),
    (
        "os-server-diagnostics",
        "ServerDiagnostics",
        "Allow Admins to view server diagnostics through server action.",
    ),
    (
        "os-server-external-events",
        "ServerExternalEvents",
        "Server External Event Triggers.",
    ),
    (
        "os-server-group-quotas",
        "ServerGroupQuotas",
        "Adds quota support to server groups.",
    ),
    ("os-server-groups", "ServerGroups", "Server group support."),
    ("os-server-password", "ServerPassword", "Server password support."),
    (
        "os-server-sort-keys",
        "ServerSortKeys",
        "Add sorting support in get Server v2 API.",
    ),
    (
        "os-server-start-stop",
        "ServerStartStop",
        "Start/Stop instance compute API support.",
    ),
    ("os-services", "Services", "Services support."),
    (
        "os-simple-tenant-usage",
        "SimpleTenantUsage",
        "Simple tenant usage extension.",
    ),
    (
        "os-suspend-server",
        "SuspendServer",
        "Enable suspend/resume server actions.",
    ),
    (
        "os-tenant-networks",
        "OSTenantNetworks",
        "Tenant-based Network Management Extension.",
    ),
    (
        "os-used-limits",
        "UsedLimits",
        "Provide data on limited resources that are being used.",
    ),
    (
        "os-used-limits-for-admin",
        "UsedLimitsForAdmin",
        "Provide data to admin on limited resources used by other tenants.",
    ),
    ("os-user-data", "UserData", "Add user_data to the Create Server API."),
    ("os-user-quotas", "UserQuotas", "Project user quota support."),
];

/// One entry in Nova's form (its namespace and date are the same for all).
fn view(&(alias, name, description): &(&str, &str, &str)) -> Value {
    json!({
        "alias": alias,
        "description": description,
        "links": [],
        "name": name,
        "namespace": "http://docs.openstack.org/compute/ext/fake_xml",
        "updated": "2014-12-03T00:00:00Z",
    })
}

async fn list(caller: Caller, version: Microversion, query: RawQuery) -> ApiResult<Json<Value>> {
    QueryParams::none_from_2_102(version, query)?;
    caller.authorize("os_compute_api:extensions")?;
    Ok(Json(
        json!({"extensions": EXTENSIONS.iter().map(view).collect::<Vec<_>>()}),
    ))
}

async fn show(
    caller: Caller,
    version: Microversion,
    Path(alias): Path<String>,
    query: RawQuery,
) -> ApiResult<Json<Value>> {
    QueryParams::none_from_2_102(version, query)?;
    caller.authorize("os_compute_api:extensions")?;
    let entry = EXTENSIONS
        .iter()
        .find(|(a, _, _)| *a == alias)
        .ok_or_else(|| ApiError::NotFound("The resource could not be found.".into()))?;
    Ok(Json(json!({"extension": view(entry)})))
}
