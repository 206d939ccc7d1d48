//! Request bodies: which attributes a body may carry ([`Attributes`]) and typed
//! attribute values ([`Attr`]) that fail with Neutron's 400 messages.

use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::net::IpAddr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::Obj;
use crate::error::{Error, Result};

/// A value as Python prints it, as Neutron's messages quote it.
pub(super) fn pyrepr(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

/// A value as Python's `str()` prints it, as `'%s'` in Neutron's messages quotes it.
pub(super) fn pystr(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => pyrepr(other),
    }
}

/// Deserializes a body already checked by [`Attributes::check`] or [`check_only`]; the
/// fields are [`Attr`]s, which take any value, so this cannot fail on a JSON object.
pub(super) fn parse<T: DeserializeOwned>(obj: &Obj) -> Result<T> {
    serde_json::from_value(Value::Object(obj.clone())).map_err(|_| Error::bad("Body contains invalid data"))
}

/// How a JSON value becomes an attribute of type `Self`, and Neutron's 400 when it can't.
pub(super) trait AttrType: Sized {
    fn from_json(v: &Value) -> Option<Self>;
    fn error(key: &str, v: &Value) -> Error;
}

/// One attribute of a request body. A value of the wrong type is kept, not refused by
/// serde: Neutron's message names the attribute and quotes the value, and refuses only
/// what the operation reads, in the order it reads it.
#[derive(Debug, Clone)]
pub(super) enum Attr<T> {
    Absent,
    Given(Value, PhantomData<T>),
}

#[expect(clippy::derivable_impls, reason = "a derive would require `T: Default`")]
impl<T> Default for Attr<T> {
    fn default() -> Self {
        Attr::Absent
    }
}

impl<'de, T> Deserialize<'de> for Attr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Value::deserialize(d).map(|v| Attr::Given(v, PhantomData))
    }
}

impl<T: AttrType> Attr<T> {
    /// The value, `None` when absent, or the 400 for a value of the wrong type.
    pub fn get(&self, key: &str) -> Result<Option<T>> {
        match self {
            Attr::Absent => Ok(None),
            Attr::Given(v, _) => T::from_json(v).map(Some).ok_or_else(|| T::error(key, v)),
        }
    }
    /// The value; a value of the wrong type counts as absent.
    pub fn valid(&self) -> Option<T> {
        match self {
            Attr::Absent => None,
            Attr::Given(v, _) => T::from_json(v),
        }
    }
    /// The value, or the 400 for a missing required attribute.
    pub fn required(&self, key: &str) -> Result<T> {
        required(self.get(key)?, key)
    }
    /// `Some(None)` for an explicit `null`, else as [`Attr::get`].
    pub fn nullable(&self, key: &str) -> Result<Option<Option<T>>> {
        match self {
            Attr::Given(Value::Null, _) => Ok(Some(None)),
            _ => self.get(key).map(|v| v.map(Some)),
        }
    }
}

impl<T> Attr<T> {
    /// The JSON as given, for attributes checked or stored as they come.
    pub fn raw(&self) -> Option<&Value> {
        match self {
            Attr::Absent => None,
            Attr::Given(v, _) => Some(v),
        }
    }
}

/// The 400 for a missing required attribute.
pub(super) fn required<T>(v: Option<T>, key: &str) -> Result<T> {
    v.ok_or_else(|| {
        Error::bad(format!(
            "Failed to parse request. Required attribute '{key}' not specified"
        ))
    })
}

impl AttrType for String {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str().map(String::from)
    }
    fn error(key: &str, v: &Value) -> Error {
        Error::bad(format!(
            "Invalid input for {key}. Reason: '{}' is not a valid string.",
            pystr(v)
        ))
    }
}

/// `binding:host_id`: real Neutron takes `null` as "no host" (stored as "").
#[derive(Debug, Clone)]
pub(super) struct HostId(pub String);

impl AttrType for HostId {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(HostId(String::new())),
            v => String::from_json(v).map(HostId),
        }
    }
    fn error(key: &str, v: &Value) -> Error {
        String::error(key, v)
    }
}

/// A resource id in a body (any UUID string).
#[derive(Debug, Clone)]
pub(super) struct Uuid(pub String);

impl AttrType for Uuid {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str()
            .filter(|s| uuid::Uuid::parse_str(s).is_ok())
            .map(|s| Uuid(s.to_string()))
    }
    fn error(key: &str, v: &Value) -> Error {
        Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not a valid UUID.",
            pyrepr(v)
        ))
    }
}

impl AttrType for bool {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") || s == "1" => Some(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") || s == "0" => Some(false),
            Value::Number(n) if n.as_u64() == Some(1) => Some(true),
            Value::Number(n) if n.as_u64() == Some(0) => Some(false),
            _ => None,
        }
    }
    fn error(_: &str, v: &Value) -> Error {
        Error::invalid(format!("{} cannot be converted to boolean", pyrepr(v)))
    }
}

/// A boolean as Neutron converts it (`true`, `"True"`, `1`, `"0"`, ...).
pub(crate) fn parse_bool(v: &Value) -> Result<bool> {
    bool::from_json(v).ok_or_else(|| bool::error("", v))
}

impl AttrType for u64 {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_u64()
    }
    fn error(key: &str, v: &Value) -> Error {
        Error::invalid(format!("'{}' is not an integer for {key}", pyrepr(v)))
    }
}

impl AttrType for IpAddr {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str().and_then(|s| s.parse().ok())
    }
    fn error(key: &str, v: &Value) -> Error {
        Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not a valid IP address.",
            pyrepr(v)
        ))
    }
}

/// A list attribute; `null` counts as not given.
#[derive(Debug, Clone)]
pub(super) struct List(pub Option<Vec<Value>>);

impl AttrType for List {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(List(None)),
            Value::Array(a) => Some(List(Some(a.clone()))),
            _ => None,
        }
    }
    fn error(_: &str, v: &Value) -> Error {
        Error::invalid(format!("{} is not a list", pyrepr(v)))
    }
}

/// A JSON list stored as given (`dns_nameservers`, `allowed_address_pairs`, ...).
#[derive(Debug, Clone)]
pub(super) struct JsonList(pub Value);

impl AttrType for JsonList {
    fn from_json(v: &Value) -> Option<Self> {
        v.is_array().then(|| JsonList(v.clone()))
    }
    fn error(_: &str, v: &Value) -> Error {
        Error::invalid(format!("{} is not a list", pyrepr(v)))
    }
}

/// A tag list: strings of at most 255 characters, no duplicates.
#[derive(Debug, Clone)]
pub(super) struct Tags;

impl Attr<Tags> {
    /// The tags of a create body (none when absent).
    pub fn tags(&self) -> Result<BTreeSet<String>> {
        Ok(self.raw().map(parse_tags).transpose()?.unwrap_or_default())
    }
}

/// Validates a tag list.
pub(crate) fn parse_tags(v: &Value) -> Result<BTreeSet<String>> {
    let Value::Array(items) = v else {
        return Err(Error::invalid(format!("{} is not a list", pyrepr(v))));
    };
    let mut out = BTreeSet::new();
    for item in items {
        let Value::String(s) = item else {
            return Err(Error::invalid(format!("{} is not a valid string", pyrepr(item))));
        };
        check_tag(s)?;
        if !out.insert(s.clone()) {
            return Err(Error::invalid(format!("Duplicate items in the list: '{s}'")));
        }
    }
    Ok(out)
}

pub(crate) fn check_tag(s: &str) -> Result<()> {
    if s.chars().count() > 255 {
        return Err(Error::invalid(format!("'{s}' exceeds maximum length of 255")));
    }
    Ok(())
}

/// The standard attributes of a create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct StdBody {
    pub description: Attr<String>,
    pub project_id: Attr<String>,
    pub tenant_id: Attr<String>,
    pub tags: Attr<Tags>,
}

impl StdBody {
    /// `project_id`, else `tenant_id`, as given (both must be strings).
    pub fn project(&self) -> Result<Option<String>> {
        let project = self.project_id.get("project_id")?;
        let tenant = self.tenant_id.get("tenant_id")?;
        Ok(project.or(tenant))
    }
}

/// How a create (`POST`) or update (`PUT`) body may use an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Settable,
    ReadOnly,
    Unknown,
}

/// A resource's attributes, as its Neutron attribute map has them (each name in one list).
pub(super) struct Attributes {
    pub create_and_update: &'static [&'static str],
    /// Settable on create, read-only afterwards.
    pub create_only: &'static [&'static str],
    /// Settable on create; unknown to an update ("Unrecognized attribute(s)").
    pub create_only_unknown_to_update: &'static [&'static str],
    /// Unknown to a create.
    pub update_only: &'static [&'static str],
    pub read_only: &'static [&'static str],
}

/// The standard attributes every resource has.
const STANDARD_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["description"],
    create_only: &["project_id", "tenant_id", "tags"],
    create_only_unknown_to_update: &[],
    update_only: &[],
    read_only: &["id", "revision_number", "created_at", "updated_at"],
};

impl Attributes {
    fn access(&self, key: &str, create: bool) -> Access {
        let listed = |names: &[&str]| names.contains(&key);
        let settable = if create {
            listed(self.create_only) || listed(self.create_only_unknown_to_update)
        } else {
            listed(self.update_only)
        };
        if settable || listed(self.create_and_update) {
            Access::Settable
        } else if listed(self.read_only) || (!create && listed(self.create_only)) {
            Access::ReadOnly
        } else {
            Access::Unknown
        }
    }

    /// Checks a create or update body against these and the standard attributes, then
    /// reads it as `T`.
    pub fn parse<T: DeserializeOwned>(&self, obj: &Obj, create: bool) -> Result<T> {
        check_keys(obj, create, |key| match STANDARD_ATTRIBUTES.access(key, create) {
            Access::Unknown => self.access(key, create),
            known => known,
        })?;
        parse(obj)
    }
}

/// 400 for the first read-only attribute of `obj`, else for all the unknown ones.
fn check_keys(obj: &Obj, create: bool, access: impl Fn(&str) -> Access) -> Result<()> {
    let mut unknown = Vec::new();
    for k in obj.keys() {
        match access(k) {
            Access::Settable => {}
            Access::ReadOnly if create => {
                return Err(Error::bad(format!("Attribute '{k}' not allowed in POST")));
            }
            Access::ReadOnly => {
                // Neutron reads a body's `project_id` as `tenant_id` before this check.
                let k = if k == "project_id" { "tenant_id" } else { k.as_str() };
                return Err(Error::bad(format!("Cannot update read-only attribute {k}")));
            }
            Access::Unknown => unknown.push(k.as_str()),
        }
    }
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::bad(format!(
            "Unrecognized attribute(s) '{}'",
            unknown.join(", ")
        )))
    }
}

/// Reads a body without standard attributes as `T`, after a 400 for any attribute but
/// `allowed`.
pub(super) fn parse_only<T: DeserializeOwned>(obj: &Obj, allowed: &[&str]) -> Result<T> {
    check_keys(obj, true, |key| {
        if allowed.contains(&key) {
            Access::Settable
        } else {
            Access::Unknown
        }
    })?;
    parse(obj)
}
