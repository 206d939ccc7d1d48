//! The bodies of an admin's flavor create and update, with Nova's schemas
//! (`schemas/flavors.py`: `create`, `create_v255` with a description,
//! `create_v2102` without `rxtx_factor`; `update`) and its validator's words.

use std::collections::{BTreeMap, BTreeSet};

use netcache_domain::flavor::Flavor;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::schema::{self, invalid, not_of_type, python_repr};

/// Nova's database integer limit (`db.MAX_INT`).
const MAX_INT: i64 = 2_147_483_647;
/// The largest `rxtx_factor` Nova stores (`SQL_SP_FLOAT_MAX`).
const RXTX_MAX: f64 = 3.40282e38;
const DESCRIPTION_MAX: usize = 65535;
const ID_MAX: usize = 255;

fn body(bytes: &[u8]) -> ApiResult<Value> {
    if bytes.is_empty() {
        return Err(ApiError::BadRequest(
            "The request body is empty; a JSON object is required.".into(),
        ));
    }
    serde_json::from_slice(bytes).map_err(|_| ApiError::BadRequest("Malformed request body".into()))
}

/// A new flavor from `POST /flavors` (its id a new UUID when none is given).
pub fn parse(bytes: &[u8], version: Microversion) -> ApiResult<Flavor> {
    let body = body(bytes)?;
    let outer = schema::object(None, &body, &["flavor"], &["flavor"])?;
    let mut allowed = vec![
        "name",
        "id",
        "ram",
        "vcpus",
        "disk",
        "OS-FLV-EXT-DATA:ephemeral",
        "swap",
        "os-flavor-access:is_public",
    ];
    if !version.at_least(102) {
        allowed.push("rxtx_factor");
    }
    if version.at_least(55) {
        allowed.push("description");
    }
    let fields = schema::object(
        Some("flavor"),
        &outer["flavor"],
        &allowed,
        &["name", "ram", "vcpus", "disk"],
    )?;
    let int = |key: &str, min: i64| fields.get(key).map_or(Ok(0), |v| integer(key, v, min));
    Ok(Flavor {
        id: match fields.get("id") {
            None | Some(Value::Null) => uuid::Uuid::new_v4().to_string(),
            Some(value) => flavor_id(value)?,
        },
        name: schema::name(&fields["name"])?,
        ram_mb: int("ram", 1)?,
        vcpus: int("vcpus", 1)?,
        disk_gb: int("disk", 0)?,
        ephemeral_gb: int("OS-FLV-EXT-DATA:ephemeral", 0)?,
        swap_mb: int("swap", 0)?,
        rxtx_factor: fields.get("rxtx_factor").map_or(Ok(1.0), rxtx_factor)?,
        is_public: fields
            .get("os-flavor-access:is_public")
            .map_or(Ok(true), |v| schema::boolean("os-flavor-access:is_public", v))?,
        description: match fields.get("description") {
            Some(value) => description(value)?,
            None => None,
        },
        extra_specs: BTreeMap::new(),
        projects: BTreeSet::new(),
    })
}

/// The description of `PUT /flavors/{id}` (2.55).
pub fn parse_update(bytes: &[u8]) -> ApiResult<Option<String>> {
    let body = body(bytes)?;
    let outer = schema::object(None, &body, &["flavor"], &["flavor"])?;
    let fields = schema::object(Some("flavor"), &outer["flavor"], &["description"], &["description"])?;
    description(&fields["description"])
}

/// Nova's flavor id: a string (or a number, taken as its text) of 1 to 255 of
/// `[a-zA-Z0-9. _-]`, not starting or ending with a space.
fn flavor_id(value: &Value) -> ApiResult<String> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(not_of_type("id", value, "string', 'number', 'null")),
    };
    let repr = python_repr(value);
    if text.is_empty() {
        return Err(invalid("id", value, &format!("{repr} is too short")));
    }
    if text.chars().count() > ID_MAX {
        return Err(invalid("id", value, &format!("{repr} is too long")));
    }
    let allowed = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ' ' | '_' | '-'));
    if !allowed || text.starts_with(' ') || text.ends_with(' ') {
        return Err(invalid(
            "id",
            value,
            &format!("{repr} does not match '^(?! )[a-zA-Z0-9. _-]+(?<! )$'"),
        ));
    }
    Ok(text)
}

/// Nova's `flavor_param_positive` / `_non_negative`: an integer, or a string of
/// digits, from `min` to the database's largest integer.
fn integer(key: &str, value: &Value, min: i64) -> ApiResult<i64> {
    let number = match value {
        Value::Number(n) => n.as_i64().ok_or_else(|| not_of_type(key, value, "integer', 'string"))?,
        Value::String(s) => {
            if !s.bytes().all(|b| b.is_ascii_digit()) || s.is_empty() {
                return Err(invalid(
                    key,
                    value,
                    &format!("{} does not match '^[0-9]*$'", python_repr(value)),
                ));
            }
            s.parse::<i64>().unwrap_or(i64::MAX)
        }
        _ => return Err(not_of_type(key, value, "integer', 'string")),
    };
    if number < min {
        return Err(invalid(
            key,
            value,
            &format!("{} is less than the minimum of {min}", python_repr(value)),
        ));
    }
    if number > MAX_INT {
        return Err(invalid(
            key,
            value,
            &format!("{} is greater than the maximum of {MAX_INT}", python_repr(value)),
        ));
    }
    Ok(number)
}

/// Nova's `rxtx_factor`: a number (or a string of one) above 0.
fn rxtx_factor(value: &Value) -> ApiResult<f64> {
    let number = match value {
        Value::Number(n) => n.as_f64().unwrap_or(f64::MAX),
        Value::String(s) => {
            let (whole, fraction) = s.split_once('.').unwrap_or((s, "0"));
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            if !digits(whole) || !digits(fraction) {
                return Err(invalid(
                    "rxtx_factor",
                    value,
                    &format!("{} does not match '^[0-9]+(\\\\.[0-9]+)?$'", python_repr(value)),
                ));
            }
            s.parse::<f64>().unwrap_or(f64::MAX)
        }
        _ => return Err(not_of_type("rxtx_factor", value, "number', 'string")),
    };
    if number <= 0.0 {
        return Err(invalid(
            "rxtx_factor",
            value,
            &format!("{} is less than or equal to the minimum of 0", python_repr(value)),
        ));
    }
    if number > RXTX_MAX {
        return Err(invalid(
            "rxtx_factor",
            value,
            &format!("{} is greater than the maximum of 3.40282e+38", python_repr(value)),
        ));
    }
    Ok(number)
}

/// Nova's flavor description: null, or printable text of at most 65,535 characters.
fn description(value: &Value) -> ApiResult<Option<String>> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => {
            if text.chars().count() > DESCRIPTION_MAX {
                return Err(invalid(
                    "description",
                    value,
                    &format!("{} is too long", python_repr(value)),
                ));
            }
            if text.chars().any(char::is_control) {
                return Err(invalid(
                    "description",
                    value,
                    &format!(
                        "{} does not match the description pattern (printable characters)",
                        python_repr(value)
                    ),
                ));
            }
            Ok(Some(text.clone()))
        }
        _ => Err(not_of_type("description", value, "string', 'null")),
    }
}
