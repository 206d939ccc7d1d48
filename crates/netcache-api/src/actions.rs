//! `POST /v2.1/servers/{id}/action`: the body names one action (`{"os-stop":
//! null}`, `{"reboot": {"type": "SOFT"}}`, …). As in Nova, a body that is not an
//! object with exactly one key is malformed, an action netcache does not have is
//! a 400, and an action the server's state does not allow a 409.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use netcache_domain::power::PowerAction;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::{AppState, Caller, wire};

pub fn routes() -> Router<AppState> {
    Router::new().route("/v2.1/servers/{id}/action", post(act))
}

async fn act(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let body: Value = wire::parse_body(&body)?;
    let (name, args) = match body {
        Value::Object(map) if map.len() == 1 => map.into_iter().next().expect("one key"),
        _ => return Err(ApiError::BadRequest("Malformed request body".into())),
    };
    let (power, rule) = power_action(&name, &args)?;
    let server = caller.server(&state, &id, rule).await?;
    state.compute.power(&caller.ctx, server.id, power).await?;
    Ok(StatusCode::ACCEPTED)
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
    let invalid = |what: &str| ApiError::BadRequest(format!("Invalid input for field/attribute reboot. {what}"));
    let fields: &Map<String, Value> = args.as_object().ok_or_else(|| invalid("Value must be an object"))?;
    if let Some(extra) = fields.keys().find(|k| *k != "type") {
        return Err(invalid(&format!(
            "Additional properties are not allowed ('{extra}' was unexpected)"
        )));
    }
    match fields.get("type").and_then(Value::as_str) {
        Some("HARD" | "Hard" | "hard") => Ok(true),
        Some("SOFT" | "Soft" | "soft") => Ok(false),
        Some(kind) => Err(invalid(&format!("Value: {kind} is not one of HARD, SOFT"))),
        None => Err(invalid("'type' is a required property")),
    }
}
