//! `POST /v2.1/servers/{id}/action`: the body names one action (`{"os-stop":
//! null}`, `{"reboot": {"type": "SOFT"}}`, `{"addFixedIp": {"networkId": …}}`,
//! `{"addSecurityGroup": {"name": …}}` in `security_group_actions`,
//! `{"addFloatingIp": {"address": …}}` in `floating_ips`, …). As in Nova, a
//! body that is not an object with exactly one key is malformed, an action
//! netcache does not have is a 400, and an action the server's state does not
//! allow a 409. Actions with an answer of their own (`rebuild`,
//! `os-getConsoleOutput`, `rescue`) and those of Nova's
//! other controllers live in their own modules.

use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::net::IpAddr;

use netcache_compute::{Error as ComputeError, ServerEdit};
use netcache_domain::NetworkId;
use netcache_domain::power::PowerAction;
use netcache_domain::server::LockedBy;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{
    AppState, admin_actions, console_output, deferred_delete, floating_ips, rescue, schema, security_group_actions,
    server_rebuild, wire,
};

/// `addFixedIp` and `removeFixedIp` went in 2.44 (Nova's multinic).
const MULTINIC_LAST_VERSION: u16 = 43;

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}/action", post(act))
}

async fn act(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = wire::parse_body(&body)?;
    let (name, args) = match body {
        Value::Object(map) if map.len() == 1 => map.into_iter().next().expect("one key"),
        _ => return Err(ApiError::BadRequest("Malformed request body".into())),
    };
    match name.as_str() {
        "rebuild" => return server_rebuild::act(&state, &caller, version, &id, &args).await,
        "os-getConsoleOutput" => return console_output::act(&state, &caller, &id, &args).await,
        "rescue" => return rescue::rescue(&state, &caller, &id, &args).await,
        "changePassword" => {
            schema::object(Some("changePassword"), &args, &["adminPass"], &["adminPass"])?;
            schema::string("adminPass", &args["adminPass"])?;
            let server = caller.server(&state, &id, "os_compute_api:os-admin-password").await?;
            state
                .servers()
                .power(&caller.ctx, server.id, PowerAction::ChangePassword)
                .await?;
        }
        "unrescue" => return rescue::unrescue(&state, &caller, &id, &args).await,
        "os-resetState" => admin_actions::reset_state(&state, &caller, &id, &args).await?,
        "injectNetworkInfo" => admin_actions::inject_network_info(&state, &caller, &id).await?,
        "forceDelete" => deferred_delete::force_delete(&state, &caller, &id).await?,
        "restore" => deferred_delete::restore(&state, &caller, &id).await?,
        "addFixedIp" => {
            version.served_until(MULTINIC_LAST_VERSION)?;
            let network_id = network_of(&args)?;
            let server = caller.server(&state, &id, "os_compute_api:os-multinic:add").await?;
            // Refusals of the network are the request's fault here (a 400), not
            // a missing resource as they are to os-interface.
            let added = state
                .attachments()
                .add_fixed_ip(&caller.ctx, server.id, network_id)
                .await;
            added.map_err(|e| match e {
                ComputeError::OnAttach(refusal) => *refusal,
                other => other,
            })?;
        }
        "lock" => {
            let server = caller.server(&state, &id, "os_compute_api:os-lock-server:lock").await?;
            let by = LockedBy::side_of(&caller.ctx.project_id, &server);
            let reason = locked_reason(&args, version)?;
            state
                .servers()
                .edit_server(&caller.ctx, server.id, &ServerEdit::Lock(by, reason))
                .await?;
        }
        "unlock" => {
            let server = caller
                .server(&state, &id, "os_compute_api:os-lock-server:unlock")
                .await?;
            // Unlocking a lock someone else's side set takes the override (admins).
            let mine = LockedBy::side_of(&caller.ctx.project_id, &server);
            if server.locked_by.is_some_and(|by| by != mine) {
                caller.authorize("os_compute_api:os-lock-server:unlock:unlock_override")?;
            }
            state
                .servers()
                .edit_server(&caller.ctx, server.id, &ServerEdit::Unlock)
                .await?;
        }
        "trigger_crash_dump" => {
            version.served_from(17)?;
            if !args.is_null() {
                return Err(schema::not_of_type("trigger_crash_dump", &args, "null"));
            }
            let server = caller
                .server(&state, &id, "os_compute_api:servers:trigger_crash_dump")
                .await?;
            state
                .servers()
                .edit_server(&caller.ctx, server.id, &ServerEdit::TriggerCrashDump)
                .await?;
        }
        // netcache never moves a server between hosts; Nova finds the server
        // (and the caller's right to move it) before anything else.
        "migrate" | "os-migrateLive" => {
            let rule = if name == "migrate" {
                "os_compute_api:os-migrate-server:migrate"
            } else {
                "os_compute_api:os-migrate-server:migrate_live"
            };
            caller.server(&state, &id, rule).await?;
            return Err(ApiError::BadRequest(format!(
                "netcache does not migrate servers: {name} is not served."
            )));
        }
        "addFloatingIp" => floating_ips::add(&state, &caller, version, &id, &args).await?,
        "removeFloatingIp" => floating_ips::remove(&state, &caller, version, &id, &args).await?,
        "addSecurityGroup" | "removeSecurityGroup" => {
            security_group_actions::act(&state, &caller, &id, &name, &args).await?;
        }
        "removeFixedIp" => {
            version.served_until(MULTINIC_LAST_VERSION)?;
            let address = address_of(&args)?;
            let server = caller.server(&state, &id, "os_compute_api:os-multinic:remove").await?;
            state
                .attachments()
                .remove_fixed_ip(&caller.ctx, server.id, address)
                .await?;
        }
        _ => {
            let (power, rule) = power_action(&name, &args)?;
            let server = caller.server(&state, &id, rule).await?;
            state.servers().power(&caller.ctx, server.id, power).await?;
        }
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// 2.73's `{"lock": {"locked_reason": …}}` (before it, the lock's value is ignored).
fn locked_reason(args: &Value, version: Microversion) -> ApiResult<Option<String>> {
    if !version.at_least(73) || args.is_null() {
        return Ok(None);
    }
    let Value::Object(_) = args else {
        return Err(schema::not_of_type("lock", args, "object, null"));
    };
    let fields = schema::object(Some("lock"), args, &["locked_reason"], &[])?;
    fields.get("locked_reason").map(schema::locked_reason).transpose()
}

/// The single field an action's object must hold, with Nova's messages.
fn only_field<'a>(action: &str, args: &'a Value, field: &str) -> ApiResult<&'a Value> {
    let invalid = |what: String| ApiError::BadRequest(format!("Invalid input for field/attribute {action}. {what}"));
    let fields = args
        .as_object()
        .ok_or_else(|| invalid("Value must be an object".into()))?;
    if let Some(extra) = fields.keys().find(|k| *k != field) {
        return Err(invalid(format!(
            "Additional properties are not allowed ('{extra}' was unexpected)"
        )));
    }
    fields
        .get(field)
        .ok_or_else(|| invalid(format!("'{field}' is a required property")))
}

/// `addFixedIp`'s `{"networkId": …}` (a string or a number, as Nova's schema allows).
fn network_of(args: &Value) -> ApiResult<NetworkId> {
    let id = match only_field("addFixedIp", args, "networkId")? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(ApiError::BadRequest(format!(
                "Invalid input for field/attribute networkId. Value: {other}"
            )));
        }
    };
    Ok(NetworkId::from(schema::neutron_uuid(&id, "network")?))
}

/// `removeFixedIp`'s `{"address": "10.0.0.4"}`.
fn address_of(args: &Value) -> ApiResult<IpAddr> {
    match only_field("removeFixedIp", args, "address")? {
        Value::String(s) => wire::parse_ip(s),
        other => Err(ApiError::BadRequest(format!(
            "Invalid input for field/attribute address. Value: {other}"
        ))),
    }
}

/// The power action `name` asks for, with the policy rule that guards it.
fn power_action(name: &str, args: &Value) -> ApiResult<(PowerAction, &'static str)> {
    Ok(match name {
        "os-stop" => (PowerAction::Stop, "os_compute_api:servers:stop"),
        "os-start" => (PowerAction::Start, "os_compute_api:servers:start"),
        "reboot" => (
            PowerAction::Reboot {
                hard: reboot_is_hard(args)?,
            },
            "os_compute_api:servers:reboot",
        ),
        "pause" => (PowerAction::Pause, "os_compute_api:os-pause-server:pause"),
        "unpause" => (PowerAction::Unpause, "os_compute_api:os-pause-server:unpause"),
        "suspend" => (PowerAction::Suspend, "os_compute_api:os-suspend-server:suspend"),
        "resume" => (PowerAction::Resume, "os_compute_api:os-suspend-server:resume"),
        other => return Err(ApiError::BadRequest(format!("There is no such action: {other}"))),
    })
}

/// `{"type": "SOFT" | "HARD"}` (or `Soft`, `soft`, … as Nova's schema allows), nothing else.
fn reboot_is_hard(args: &Value) -> ApiResult<bool> {
    match only_field("reboot", args, "type")?.as_str() {
        Some("HARD" | "Hard" | "hard") => Ok(true),
        Some("SOFT" | "Soft" | "soft") => Ok(false),
        _ => Err(ApiError::BadRequest(format!(
            "Invalid input for field/attribute type. Value: {}. It is not one of HARD, SOFT",
            args["type"]
        ))),
    }
}
