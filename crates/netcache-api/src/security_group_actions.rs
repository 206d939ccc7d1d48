//! The server actions `addSecurityGroup` and `removeSecurityGroup`
//! (`{"addSecurityGroup": {"name": "web"}}`): Nova's request schema, its policy
//! rules and its answers; the change itself is `Compute::change_security_group`.

use netcache_domain::ServerId;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::{AppState, Caller, schema};

/// Runs `action` (one of the two) on the server `id` with its body `args`.
pub async fn act(state: &AppState, caller: &Caller, id: &str, action: &str, args: &Value) -> ApiResult<()> {
    let add = action == "addSecurityGroup";
    let name = group_name(action, args)?;
    let rule = if add {
        "os_compute_api:os-security-groups:add"
    } else {
        "os_compute_api:os-security-groups:remove"
    };
    let server: ServerId = caller.server(state, id, rule).await?.id;
    // Nova's own check after the schema's: a name of blanks is no name.
    if name.trim().is_empty() {
        return Err(ApiError::BadRequest("Security group name cannot be empty".into()));
    }
    state
        .attachments()
        .change_security_group(&caller.ctx, server, &name, add)
        .await?;
    Ok(())
}

/// Nova's schema: `{"name": "…"}`, a string of at least one character, nothing else.
fn group_name(action: &str, args: &Value) -> ApiResult<String> {
    let fields = schema::object(Some(action), args, &["name"], &["name"])?;
    let name = &fields["name"];
    match name {
        Value::String(text) if !text.is_empty() => Ok(text.clone()),
        Value::String(_) => Err(schema::invalid("name", name, "'' is too short")),
        other => Err(schema::invalid(
            "name",
            other,
            &format!("{} is not of type 'string'", schema::python_repr(other)),
        )),
    }
}
