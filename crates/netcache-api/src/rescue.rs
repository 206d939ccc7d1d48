//! The `rescue` and `unrescue` server actions. A rescue boots the guest from a
//! rescue image (the one named, or the server's own) and answers 200 with the
//! rescue image's `adminPass` (the one asked for or a new one), as Nova does for
//! backwards compatibility; `unrescue` answers 202. Both run as power actions.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use netcache_domain::power::PowerAction;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::server_create::admin_password;
use crate::{AppState, Caller, images, schema};

pub async fn rescue(state: &AppState, caller: &Caller, id: &str, args: &Value) -> ApiResult<Response> {
    let request = RescueRequest::parse(args)?;
    let password = admin_password(request.admin_pass)?;
    let server = caller.server(state, id, "os_compute_api:os-rescue").await?;
    // Nova reads the rescue image before anything changes (its 400).
    if let Some(image) = request.image_ref.filter(|image| images::find(image).is_none()) {
        return Err(ApiError::BadRequest(format!(
            "Requested rescue image '{image}' is not supported"
        )));
    }
    state
        .servers()
        .power(&caller.ctx, server.id, PowerAction::Rescue)
        .await?;
    Ok(Json(json!({ "adminPass": password })).into_response())
}

pub async fn unrescue(state: &AppState, caller: &Caller, id: &str, args: &Value) -> ApiResult<Response> {
    // Nova's schema leaves `unrescue`'s value unchecked (`{}`).
    let _ = args;
    let server = caller.server(state, id, "os_compute_api:os-unrescue").await?;
    state
        .servers()
        .power(&caller.ctx, server.id, PowerAction::Unrescue)
        .await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// `{"rescue": null}` or `{"rescue": {"adminPass": …, "rescue_image_ref": …}}`.
struct RescueRequest<'a> {
    admin_pass: Option<&'a Value>,
    image_ref: Option<String>,
}

impl<'a> RescueRequest<'a> {
    fn parse(args: &'a Value) -> ApiResult<Self> {
        if args.is_null() {
            return Ok(Self {
                admin_pass: None,
                image_ref: None,
            });
        }
        if !args.is_object() {
            let reason = format!("{} is not of type 'object', 'null'", schema::python_repr(args));
            return Err(schema::invalid("rescue", args, &reason));
        }
        let fields = schema::object(Some("rescue"), args, &["adminPass", "rescue_image_ref"], &[])?;
        let image_ref = fields
            .get("rescue_image_ref")
            .map(|v| schema::image_id("rescue_image_ref", v))
            .transpose()?;
        Ok(Self {
            admin_pass: fields.get("adminPass"),
            image_ref,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rescue_body_is_null_or_novas_object() {
        assert!(RescueRequest::parse(&Value::Null).unwrap().image_ref.is_none());
        let image = "70a599e0-31e7-49b7-b260-868f441e862b";
        let body = json!({"adminPass": "pw", "rescue_image_ref": image});
        let parsed = RescueRequest::parse(&body).unwrap();
        assert_eq!(parsed.image_ref.as_deref(), Some(image));
        assert_eq!(parsed.admin_pass, Some(&json!("pw")));
        for (body, want) in [
            (json!("x"), "'x' is not of type 'object', 'null'"),
            (
                json!({"rescue_image_ref": "img"}),
                "Invalid input for field/attribute rescue_image_ref. Value: img. 'img' is not a 'uuid'",
            ),
            (
                json!({"adminPass": 1}),
                "Invalid input for field/attribute adminPass. Value: 1. 1 is not of type 'string'",
            ),
            (
                json!({"image": image}),
                "Additional properties are not allowed ('image' was unexpected)",
            ),
        ] {
            let got = match RescueRequest::parse(&body) {
                Ok(parsed) => admin_password(parsed.admin_pass).map(|_| ()).unwrap_err(),
                Err(e) => e,
            };
            assert!(got.to_string().contains(want), "{body}: {got}");
        }
    }
}
