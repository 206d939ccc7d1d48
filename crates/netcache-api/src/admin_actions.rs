//! The admin's server actions of Nova's `admin_actions` controller: `os-resetState`
//! (`{"state": "active" | "error"}`, Nova's schema: the server's vm_state set and
//! its task cleared) and `injectNetworkInfo` (its network info refreshed); 202.

use netcache_domain::server::VmState;
use serde_json::Value;

use crate::error::ApiResult;
use crate::{AppState, Caller, schema};

pub async fn reset_state(state: &AppState, caller: &Caller, id: &str, args: &Value) -> ApiResult<()> {
    let vm_state = state_of(args)?;
    let server = caller
        .server(state, id, "os_compute_api:os-admin-actions:reset_state")
        .await?;
    state.servers().reset_state(&caller.ctx, server.id, vm_state).await?;
    Ok(())
}

/// `injectNetworkInfo` (any value, as Nova's schema): the server's network
/// info refreshed from Neutron; an admin's by Nova's policy.
pub async fn inject_network_info(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    let server = caller
        .server(state, id, "os_compute_api:os-admin-actions:inject_network_info")
        .await?;
    state.attachments().inject_network_info(&caller.ctx, server.id).await?;
    Ok(())
}

/// The state asked for: the field first, then whether it is there at all,
/// then unknown keys, as Nova's validator looks.
fn state_of(args: &Value) -> ApiResult<VmState> {
    let Value::Object(fields) = args else {
        return Err(schema::not_of_type("os-resetState", args, "object"));
    };
    let vm_state = match fields.get("state") {
        Some(value) => match schema::string("state", value)? {
            "active" => VmState::Active,
            "error" => VmState::Error,
            _ => {
                return Err(schema::invalid(
                    "state",
                    value,
                    &format!("{} is not one of ['active', 'error']", schema::python_repr(value)),
                ));
            }
        },
        None => return Err(schema::invalid("os-resetState", args, "'state' is a required property")),
    };
    schema::object(Some("os-resetState"), args, &["state"], &[])?;
    Ok(vm_state)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_state_is_active_or_error_and_nothing_else() {
        assert_eq!(state_of(&json!({"state": "active"})).unwrap(), VmState::Active);
        assert_eq!(state_of(&json!({"state": "error"})).unwrap(), VmState::Error);
        for (args, want) in [
            (
                json!({"state": "invalid"}),
                "Invalid input for field/attribute state. Value: invalid. 'invalid' is not one of ['active', 'error']",
            ),
            (
                json!({"state": 1}),
                "Invalid input for field/attribute state. Value: 1. 1 is not of type 'string'",
            ),
            (
                json!({}),
                "Invalid input for field/attribute os-resetState. Value: {}. 'state' is a required property",
            ),
            (
                json!({"state": "error", "force": true}),
                "Additional properties are not allowed ('force' was unexpected)",
            ),
            (json!("error"), "'error' is not of type 'object'"),
        ] {
            let got = state_of(&args).unwrap_err().to_string();
            assert!(got.contains(want), "{args}: {got}");
        }
    }
}
