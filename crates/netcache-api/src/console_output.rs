//! The `os-getConsoleOutput` server action: `{"length": N}` as Nova's schema
//! takes it, and `{"output": "…"}`, the last N lines of what the guest printed
//! (200), or Nova's 409 for a server with no host yet.

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::{AppState, Caller, schema};

pub async fn act(state: &AppState, caller: &Caller, id: &str, args: &Value) -> ApiResult<Response> {
    let length = length_of(args)?;
    let server = caller.server(state, id, "os_compute_api:os-console-output").await?;
    let output = state.servers().console_output(server.id, length).await?;
    Ok(Json(json!({ "output": output })).into_response())
}

/// Nova's schema: an object with at most `length`, which is null (all of the
/// log), an integer of at least -1, or a string of digits with an optional
/// sign (not held to the minimum: the schema's `minimum` is for numbers). A
/// number past an `i64` counts as the largest one, as Python's slice would.
fn length_of(args: &Value) -> ApiResult<Option<i64>> {
    let Value::Object(fields) = args else {
        return Err(schema::not_of_type("os-getConsoleOutput", args, "object"));
    };
    let length = match fields.get("length") {
        None | Some(Value::Null) => None,
        Some(value @ Value::Number(n)) if n.is_i64() || n.is_u64() => {
            let n = n.as_i64().unwrap_or(i64::MAX);
            if n < -1 {
                return Err(schema::invalid(
                    "length",
                    value,
                    &format!("{n} is less than the minimum of -1"),
                ));
            }
            Some(n)
        }
        Some(value @ Value::String(text)) => Some(digits(value, text)?),
        Some(other) => {
            return Err(schema::invalid(
                "length",
                other,
                &format!(
                    "{} is not of type 'integer', 'string', 'null'",
                    schema::python_repr(other)
                ),
            ));
        }
    };
    schema::object(Some("os-getConsoleOutput"), args, &["length"], &[])?;
    Ok(length)
}

/// The pattern `^-?[0-9]+$` (Python's `$` also matches before a final newline).
fn digits(value: &Value, text: &str) -> ApiResult<i64> {
    let number = text.strip_suffix('\n').unwrap_or(text);
    let unsigned = number.strip_prefix('-').unwrap_or(number);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return Err(schema::invalid(
            "length",
            value,
            &format!("{} does not match '^-?[0-9]+$'", schema::python_repr(value)),
        ));
    }
    let saturated = if number.starts_with('-') { i64::MIN } else { i64::MAX };
    Ok(number.parse().unwrap_or(saturated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_is_a_number_a_string_of_digits_or_null() {
        for (args, want) in [
            (json!({}), None),
            (json!({"length": null}), None),
            (json!({"length": 3}), Some(3)),
            (json!({"length": -1}), Some(-1)),
            (json!({"length": 0}), Some(0)),
            (json!({"length": "10"}), Some(10)),
            (json!({"length": "-5"}), Some(-5)),
            (json!({"length": "7\n"}), Some(7)),
            (json!({"length": u64::MAX}), Some(i64::MAX)),
            (json!({"length": "99999999999999999999"}), Some(i64::MAX)),
        ] {
            assert_eq!(length_of(&args).unwrap(), want, "{args}");
        }
    }

    #[test]
    fn anything_else_is_novas_400() {
        for (args, want) in [
            (
                json!(null),
                "Invalid input for field/attribute os-getConsoleOutput. Value: None. None is not of type 'object'",
            ),
            (
                json!({"length": -2}),
                "Invalid input for field/attribute length. Value: -2. -2 is less than the minimum of -1",
            ),
            (
                json!({"length": "ten"}),
                "Invalid input for field/attribute length. Value: ten. 'ten' does not match '^-?[0-9]+$'",
            ),
            (json!({"length": "-"}), "'-' does not match"),
            (json!({"length": ""}), "'' does not match"),
            (
                json!({"length": 1.5}),
                "Invalid input for field/attribute length. Value: 1.5. 1.5 is not of type 'integer', 'string', 'null'",
            ),
            (
                json!({"length": true}),
                "True is not of type 'integer', 'string', 'null'",
            ),
            (
                json!({"length": 3, "tail": true}),
                "Additional properties are not allowed ('tail' was unexpected)",
            ),
        ] {
            let got = length_of(&args).unwrap_err().to_string();
            assert!(got.contains(want), "{args}: {got}");
        }
    }
}
