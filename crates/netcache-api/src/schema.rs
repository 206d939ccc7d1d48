//! Nova's request-schema checks of the server fields a user sets (name, access
//! addresses, metadata) and of request bodies' keys, with the messages of Nova's
//! validator: `Invalid input for field/attribute FIELD. Value: VALUE. REASON`,
//! where FIELD is the last step of the path and VALUE is printed as Python
//! prints it (a failure at the top of the body is the reason alone).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::{Map, Value};
use serde_path_to_error::Segment;

use netcache_domain::quota::InjectedFile;

use crate::error::{ApiError, ApiResult};

/// Nova's `metadata` key pattern: `^[a-zA-Z0-9-_:. ]{1,255}$`.
const METADATA_KEY_MAX: usize = 255;
const METADATA_VALUE_MAX: usize = 255;
const NAME_MAX: usize = 255;

/// A 400 for `value` at `field`.
pub fn invalid(field: &str, value: &Value, reason: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "Invalid input for field/attribute {field}. Value: {}. {reason}",
        python_str(value)
    ))
}

/// How Python's `str()` prints a JSON value (a string bare, the rest as `repr`).
fn python_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

/// How Python's `repr()` prints a JSON value: `{'k': 'v'}`, `None`, `True`.
pub fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) => format!("[{}]", items.iter().map(python_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", python_repr(&Value::String(k.clone())), python_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Nova's `boolean`: true or false, or one of the words and digits it reads as them.
pub fn boolean(field: &str, value: &Value) -> ApiResult<bool> {
    let word = match value {
        Value::Bool(b) => return Ok(*b),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.to_lowercase(),
        _ => String::new(),
    };
    match word.as_str() {
        "true" | "1" | "t" | "on" | "y" | "yes" => Ok(true),
        "false" | "0" | "f" | "off" | "n" | "no" => Ok(false),
        _ => Err(invalid(
            field,
            value,
            &format!("{} is not one of the boolean values", python_repr(value)),
        )),
    }
}

/// A string (Nova's `admin_password` and the like).
pub fn string<'a>(field: &str, value: &'a Value) -> ApiResult<&'a str> {
    value.as_str().ok_or_else(|| not_of_type(field, value, "string"))
}

/// A 400 for `value` at `field`, not of the JSON type `wanted` (Nova's words).
pub fn not_of_type(field: &str, value: &Value, wanted: &str) -> ApiError {
    invalid(
        field,
        value,
        &format!("{} is not of type '{wanted}'", python_repr(value)),
    )
}

/// Nova's `personality` (before 2.57): a list of `{"path": …, "contents": …}`
/// strings, the contents in base64.
pub fn personality(value: &Value) -> ApiResult<Vec<InjectedFile>> {
    let Value::Array(files) = value else {
        return Err(not_of_type("personality", value, "array"));
    };
    let mut parsed = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        let index = index.to_string();
        let Value::Object(entry) = file else {
            return Err(not_of_type(&index, file, "object"));
        };
        let path = entry.get("path").map(|p| string("path", p)).transpose()?;
        let contents = entry.get("contents").map(|c| string("contents", c)).transpose()?;
        if let Some(text) = contents.filter(|text| !is_base64(text)) {
            let value = Value::String(text.to_owned());
            return Err(invalid(
                "contents",
                &value,
                &format!("{} is not a 'base64'", python_repr(&value)),
            ));
        }
        object(Some(&index), file, &["path", "contents"], &[])?;
        parsed.push(InjectedFile {
            path: path.unwrap_or_default().to_owned(),
            contents: contents.unwrap_or_default().to_owned(),
        });
    }
    Ok(parsed)
}

/// Whether Python's `base64.decodebytes` reads `text`: characters outside the
/// alphabet are skipped; the data characters before the padding must fill
/// whole groups of four, or be padded to them.
fn is_base64(text: &str) -> bool {
    let data = text
        .bytes()
        .take_while(|b| *b != b'=')
        .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
        .count();
    let padding = text.bytes().filter(|b| *b == b'=').count();
    match data % 4 {
        0 => true,
        2 => padding >= 2,
        3 => padding >= 1,
        _ => false,
    }
}

/// A Neutron id, which is a UUID: anything else is a 400 before Neutron is asked.
pub fn neutron_uuid(text: &str, what: &str) -> ApiResult<String> {
    uuid::Uuid::parse_str(text)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            ApiError::BadRequest(format!(
                "Bad networks format: {what} uuid is not in proper format ({text})"
            ))
        })
}

/// Nova's `image_id`: a string in the form of a UUID.
pub fn image_id(field: &str, value: &Value) -> ApiResult<String> {
    let id = string(field, value)?;
    if uuid::Uuid::try_parse(id).is_err() {
        return Err(invalid(
            field,
            value,
            &format!("{} is not a 'uuid'", python_repr(value)),
        ));
    }
    Ok(id.to_owned())
}

/// `value` as an object (`field` names it; `None`: the body itself), with only
/// the `allowed` keys and every `required` one.
pub fn object<'a>(
    field: Option<&str>,
    value: &'a Value,
    allowed: &[&str],
    required: &[&str],
) -> ApiResult<&'a Map<String, Value>> {
    let fail = |reason: String| match field {
        Some(field) => invalid(field, value, &reason),
        None => ApiError::BadRequest(reason),
    };
    let Value::Object(map) = value else {
        return Err(fail(format!("{} is not of type 'object'", python_repr(value))));
    };
    if let Some(missing) = required.iter().find(|k| !map.contains_key(**k)) {
        return Err(fail(format!("'{missing}' is a required property")));
    }
    match unexpected(map, allowed) {
        None => Ok(map),
        Some(reason) => Err(fail(reason)),
    }
}

/// Nova's words for the keys of `map` not `allowed`, if any.
fn unexpected(map: &Map<String, Value>, allowed: &[&str]) -> Option<String> {
    let extra: Vec<String> = map
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| python_repr(&Value::String(k.clone())))
        .collect();
    match extra.as_slice() {
        [] => None,
        [one] => Some(format!("Additional properties are not allowed ({one} was unexpected)")),
        many => Some(format!(
            "Additional properties are not allowed ({} were unexpected)",
            many.join(", ")
        )),
    }
}

/// A body serde refused (`error`, at its path in `body`), in the words of Nova's
/// validator rather than the parser's: an unexpected key, a missing one, a value
/// of the wrong type; anything else with serde's reason.
pub fn refused(body: &Value, error: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let mut path: Vec<&Segment> = error.path().iter().collect();
    let serde_reason = error.inner().to_string();
    let reason = if let Some(key) = quoted_after(&serde_reason, "unknown field ") {
        // The path ends at the key; Nova names the object that holds it.
        path.pop();
        let allowed = expected_names(&serde_reason);
        let map = value_at(body, &path).and_then(Value::as_object);
        map.and_then(|m| unexpected(m, &allowed))
            .unwrap_or_else(|| format!("Additional properties are not allowed ('{key}' was unexpected)"))
    } else if let Some(key) = quoted_after(&serde_reason, "missing field ") {
        format!("'{key}' is a required property")
    } else if let (Some(value), Some(wanted)) = (value_at(body, &path), json_type(&serde_reason)) {
        format!("{} is not of type '{wanted}'", python_repr(value))
    } else {
        serde_reason
    };
    match (path.last(), value_at(body, &path)) {
        (Some(last), Some(value)) => invalid(&segment_name(last), value, &reason),
        _ => ApiError::BadRequest(reason),
    }
}

/// The text between the backticks after `prefix` in serde's `reason`.
fn quoted_after<'a>(reason: &'a str, prefix: &str) -> Option<&'a str> {
    reason.strip_prefix(prefix)?.strip_prefix('`')?.split('`').next()
}

/// The fields serde's unknown-field error lists as expected.
fn expected_names(reason: &str) -> Vec<&str> {
    reason
        .split_once("expected")
        .map(|(_, names)| names.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default()
}

/// The JSON schema type of what serde's invalid-type error expected (or its
/// invalid-length one: an array where an object was expected).
fn json_type(reason: &str) -> Option<&'static str> {
    if !reason.starts_with("invalid type: ") && !reason.starts_with("invalid length ") {
        return None;
    }
    let expected = reason.rsplit_once(", expected ")?.1;
    Some(match expected {
        "a string" | "a borrowed string" => "string",
        "a boolean" => "boolean",
        "a sequence" => "array",
        "a map" => "object",
        "f32" | "f64" => "number",
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => "integer",
        e if e.starts_with("struct ") => "object",
        _ => return None,
    })
}

fn value_at<'a>(body: &'a Value, path: &[&Segment]) -> Option<&'a Value> {
    path.iter().try_fold(body, |value, segment| match segment {
        Segment::Seq { index } => value.get(index),
        Segment::Map { key } => value.get(key.as_str()),
        Segment::Enum { .. } | Segment::Unknown => None,
    })
}

/// Nova's name of a field: the last step of its path (a key, or an index).
fn segment_name(segment: &Segment) -> String {
    match segment {
        Segment::Seq { index } => index.to_string(),
        Segment::Map { key } => key.clone(),
        Segment::Enum { variant } => variant.clone(),
        Segment::Unknown => "?".into(),
    }
}

/// Nova's `tag` (a device's role): a string of 1 to 60 characters with no
/// `,` or `/`.
pub fn device_tag(value: &Value) -> ApiResult<&str> {
    const TAG_MAX: usize = 60;
    let tag = string("tag", value)?;
    let reason = if tag.is_empty() {
        format!("{} is too short", python_repr(value))
    } else if tag.chars().count() > TAG_MAX {
        format!("{} is too long", python_repr(value))
    } else if tag.contains([',', '/']) {
        format!("{} does not match '^[^,/]*$'", python_repr(value))
    } else {
        return Ok(tag);
    };
    Err(invalid("tag", value, &reason))
}

/// Nova's `name` (servers): a string of 1 to 255 printable characters, with no
/// whitespace at either end.
pub fn name(value: &Value) -> ApiResult<String> {
    name_of("name", value)
}

/// Nova's `name` format of another field (`field` names it in the refusal).
pub fn name_of(field: &str, value: &Value) -> ApiResult<String> {
    let Value::String(text) = value else {
        return Err(not_of_type(field, value, "string"));
    };
    let repr = python_repr(value);
    if text.is_empty() {
        return Err(invalid(field, value, &format!("{repr} is too short")));
    }
    if text.chars().count() > NAME_MAX {
        return Err(invalid(field, value, &format!("{repr} is too long")));
    }
    let edge_space = text.starts_with(char::is_whitespace) || text.ends_with(char::is_whitespace);
    if edge_space || text.chars().any(char::is_control) {
        return Err(invalid(
            field,
            value,
            &format!(
                "{repr} does not match the name pattern (printable characters, no leading or trailing whitespace)"
            ),
        ));
    }
    Ok(text.clone())
}

/// Nova's `accessIPv4`: a string in IPv4 format.
pub fn access_ip_v4(value: &Value) -> ApiResult<Ipv4Addr> {
    access_ip(value, "accessIPv4", "ipv4")
}

/// Nova's `accessIPv6`: a string in IPv6 format.
pub fn access_ip_v6(value: &Value) -> ApiResult<Ipv6Addr> {
    access_ip(value, "accessIPv6", "ipv6")
}

fn access_ip<T: std::str::FromStr>(value: &Value, field: &str, format: &str) -> ApiResult<T> {
    let Value::String(text) = value else {
        return Err(not_of_type(field, value, "string"));
    };
    text.parse()
        .map_err(|_| invalid(field, value, &format!("{} is not a '{format}'", python_repr(value))))
}

/// Nova's `OS-DCF:diskConfig`: `AUTO` (true: Nova's `auto_disk_config`) or `MANUAL`.
pub fn disk_config(value: &Value) -> ApiResult<bool> {
    match value.as_str() {
        Some("AUTO") => return Ok(true),
        Some("MANUAL") => return Ok(false),
        _ => {}
    }
    Err(invalid(
        "OS-DCF:diskConfig",
        value,
        &format!("{} is not one of ['AUTO', 'MANUAL']", python_repr(value)),
    ))
}

/// Nova's `metadata` (`field` names it: `metadata` or `meta`): an object whose
/// keys match `^[a-zA-Z0-9-_:. ]{1,255}$` and whose values are strings of at
/// most 255 characters. The item count is the quota's (checked by Compute).
pub fn metadata(field: &str, value: &Value) -> ApiResult<BTreeMap<String, String>> {
    let items = metadata_items(field, value, false)?;
    Ok(items.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect())
}

/// Nova's `metadata_with_null` (an aggregate's `set_metadata`): as
/// [`metadata`], a value may also be null (the key removed).
pub fn metadata_with_null(field: &str, value: &Value) -> ApiResult<BTreeMap<String, Option<String>>> {
    metadata_items(field, value, true)
}

fn metadata_items(field: &str, value: &Value, nullable: bool) -> ApiResult<BTreeMap<String, Option<String>>> {
    let Value::Object(map) = value else {
        return Err(not_of_type(field, value, "object"));
    };
    let bad_key = |k: &String| {
        k.is_empty()
            || k.chars().count() > METADATA_KEY_MAX
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.' | ' '))
    };
    if let Some(key) = map.keys().find(|k| bad_key(k)) {
        return Err(invalid(
            field,
            value,
            &format!(
                "Additional properties are not allowed ({} was unexpected)",
                python_repr(&Value::String(key.clone()))
            ),
        ));
    }
    let mut items = BTreeMap::new();
    for (key, item) in map {
        let text = match item {
            Value::String(text) => text,
            Value::Null if nullable => {
                items.insert(key.clone(), None);
                continue;
            }
            _ if nullable => return Err(not_of_type(key, item, "string', 'null")),
            _ => return Err(not_of_type(key, item, "string")),
        };
        if text.chars().count() > METADATA_VALUE_MAX {
            return Err(invalid(key, item, &format!("{} is too long", python_repr(item))));
        }
        items.insert(key.clone(), Some(text.clone()));
    }
    Ok(items)
}

/// Nova's `az_name`: a `name` without `:`.
pub fn az_name(field: &str, value: &Value) -> ApiResult<String> {
    let name = name_of(field, value)?;
    if name.contains(':') {
        return Err(invalid(
            field,
            value,
            &format!(
                "{} does not match the availability zone name pattern (printable characters except :, no leading or trailing whitespace)",
                python_repr(value)
            ),
        ));
    }
    Ok(name)
}

/// Nova's `name_with_leading_trailing_spaces`: 1 to 255 printable characters,
/// not all whitespace; answered stripped, as Nova's `normalize_name` does.
pub fn name_with_spaces(field: &str, value: &Value) -> ApiResult<String> {
    let name = bounded(field, value, 1, NAME_MAX, "name_with_leading_trailing_spaces", |t| {
        !t.trim().is_empty() && !t.chars().any(char::is_control)
    })?;
    Ok(name.trim().to_owned())
}

/// Nova's `fqdn` (a host's name): 1 to 255 of `[a-zA-Z0-9-._]`.
pub fn fqdn(field: &str, value: &Value) -> ApiResult<String> {
    bounded(field, value, 1, 255, "^[a-zA-Z0-9-._]*$", |t| {
        t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    })
}

/// A string of `min` to `max` characters matching `ok` (described by
/// `pattern` in the refusal, as Nova's validator names the pattern).
fn bounded(
    field: &str,
    value: &Value,
    min: usize,
    max: usize,
    pattern: &str,
    ok: impl Fn(&str) -> bool,
) -> ApiResult<String> {
    let Value::String(text) = value else {
        return Err(not_of_type(field, value, "string"));
    };
    let repr = python_repr(value);
    let length = text.chars().count();
    if length < min {
        return Err(invalid(field, value, &format!("{repr} is too short")));
    }
    if length > max {
        return Err(invalid(field, value, &format!("{repr} is too long")));
    }
    if !ok(text) {
        return Err(invalid(field, value, &format!("{repr} does not match '{pattern}'")));
    }
    Ok(text.clone())
}

/// Nova's `description` (2.19): null, or up to 255 printable characters.
pub fn description(value: &Value) -> ApiResult<Option<String>> {
    if value.is_null() {
        return Ok(None);
    }
    bounded("description", value, 0, 255, "printable characters", |t| {
        !t.chars().any(|c| c.is_control() && !c.is_whitespace())
    })
    .map(Some)
}

/// Nova's `hostname` (2.90; 2.94 allows a fully qualified name).
pub fn hostname(value: &Value, fqdn: bool) -> ApiResult<String> {
    if fqdn {
        return self::fqdn("hostname", value);
    }
    bounded(
        "hostname",
        value,
        2,
        63,
        "^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$",
        |t| t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') && !t.starts_with('-') && !t.ends_with('-'),
    )
}

/// Nova's `tag`: 1 to 60 characters, no `,` or `/`.
pub fn tag(field: &str, value: &Value) -> ApiResult<String> {
    let text = value.as_str().ok_or_else(|| not_of_type(field, value, "string"))?;
    match tag_problem(text) {
        Some(reason) => Err(invalid(field, value, &reason)),
        None => Ok(text.to_owned()),
    }
}

/// Why Nova's validator refuses `tag`, in its words.
pub fn tag_problem(tag: &str) -> Option<String> {
    let repr = python_repr(&Value::String(tag.to_owned()));
    let length = tag.chars().count();
    if length == 0 {
        Some(format!("{repr} is too short"))
    } else if length > netcache_domain::server_attributes::MAX_TAG_LENGTH {
        Some(format!("{repr} is too long"))
    } else if tag.contains(',') || tag.contains('/') {
        Some(format!("{repr} does not match '^[^,/]*$'"))
    } else {
        None
    }
}

/// Nova's `tags`: a list of at most 50 tags (a tag given twice counts once).
pub fn tags(value: &Value) -> ApiResult<std::collections::BTreeSet<String>> {
    let Value::Array(items) = value else {
        return Err(not_of_type("tags", value, "array"));
    };
    let max = netcache_domain::server_attributes::MAX_TAGS;
    if items.len() > max {
        return Err(invalid("tags", value, &format!("{} is too long", python_repr(value))));
    }
    items.iter().enumerate().map(|(i, t)| tag(&i.to_string(), t)).collect()
}

/// 2.73's `locked_reason`: 1 to 255 characters.
pub fn locked_reason(value: &Value) -> ApiResult<String> {
    bounded("locked_reason", value, 1, 255, ".*", |_| true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn base64_is_what_pythons_decodebytes_reads() {
        for good in ["", "aGk=", "aGVsbG8=", "aGVs bG8=", "aGVsbA==", "aGVsbG8h"] {
            assert!(is_base64(good), "{good:?}");
        }
        for bad in ["This is a test file.", "a", "aGk", "aGVsbA", "aGVsbA="] {
            assert!(!is_base64(bad), "{bad:?}");
        }
    }

    fn message(result: ApiResult<impl std::fmt::Debug>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn values_print_as_python_prints_them() {
        assert_eq!(
            python_str(&json!({"": "data1", "n": 1, "b": true, "z": null})),
            "{'': 'data1', 'n': 1, 'b': True, 'z': None}"
        );
        assert_eq!(python_str(&json!("it's")), "it's");
        assert_eq!(python_repr(&json!("it's")), r"'it\'s'");
    }

    #[test]
    fn names_follow_novas_rules() {
        assert_eq!(name(&json!("web 1")).unwrap(), "web 1");
        assert_eq!(name(&json!("é".repeat(255))).unwrap().chars().count(), 255);
        assert_eq!(
            message(name(&json!(""))),
            "Invalid input for field/attribute name. Value: . '' is too short"
        );
        assert!(message(name(&json!("a".repeat(256)))).ends_with("is too long"));
        assert!(message(name(&json!(" a"))).contains("does not match"));
        assert!(message(name(&json!("a\n"))).contains("does not match"));
        assert_eq!(
            message(name(&json!(5))),
            "Invalid input for field/attribute name. Value: 5. 5 is not of type 'string'"
        );
    }

    #[test]
    fn access_addresses_are_checked_by_family() {
        assert_eq!(access_ip_v4(&json!("1.1.1.1")).unwrap(), Ipv4Addr::new(1, 1, 1, 1));
        assert_eq!(
            access_ip_v6(&json!("0000:0000:0000:0000:0000:babe:220.12.22.2"))
                .unwrap()
                .to_string(),
            "::babe:dc0c:1602"
        );
        assert_eq!(
            message(access_ip_v4(&json!("::1"))),
            "Invalid input for field/attribute accessIPv4. Value: ::1. '::1' is not a 'ipv4'"
        );
        assert!(message(access_ip_v6(&json!("1.1.1.1"))).ends_with("'1.1.1.1' is not a 'ipv6'"));
        assert!(message(access_ip_v4(&json!(""))).ends_with("'' is not a 'ipv4'"));
    }

    #[test]
    fn metadata_keys_and_values_are_limited() {
        let long_key = "k".repeat(256);
        assert_eq!(
            metadata("metadata", &json!({"a-b_c:d. e": "v"})).unwrap(),
            BTreeMap::from([("a-b_c:d. e".to_owned(), "v".to_owned())])
        );
        assert_eq!(
            message(metadata("metadata", &json!({"": "data1"}))),
            "Invalid input for field/attribute metadata. Value: {'': 'data1'}. \
             Additional properties are not allowed ('' was unexpected)"
        );
        assert!(message(metadata("metadata", &json!({ long_key: "v" }))).contains("was unexpected"));
        assert!(message(metadata("meta", &json!({"k/1": "v"}))).starts_with("Invalid input for field/attribute meta."));
        assert_eq!(
            message(metadata("metadata", &json!({"k": "v".repeat(256)}))),
            format!(
                "Invalid input for field/attribute k. Value: {v}. '{v}' is too long",
                v = "v".repeat(256)
            )
        );
        assert_eq!(
            message(metadata("metadata", &json!({"k": 1}))),
            "Invalid input for field/attribute k. Value: 1. 1 is not of type 'string'"
        );
        assert!(message(metadata("metadata", &json!([]))).ends_with("[] is not of type 'object'"));
    }

    #[test]
    fn objects_refuse_unknown_keys_and_want_required_ones() {
        let body = json!({"server": {"name": "a", "adminPass": "x"}});
        let top = object(None, &body, &["server"], &["server"]).unwrap();
        assert_eq!(
            message(object(Some("server"), &top["server"], &["name"], &[])),
            "Invalid input for field/attribute server. Value: {'name': 'a', 'adminPass': 'x'}. \
             Additional properties are not allowed ('adminPass' was unexpected)"
        );
        assert_eq!(
            message(object(None, &json!({}), &["metadata"], &["metadata"])),
            "'metadata' is a required property"
        );
    }
}
