//! `POST /v2.1/servers`: Nova's checks of a boot request, in its order and with
//! its messages, then one server — or, with `min_count`/`max_count`, several
//! (`BuildOps::create_servers`).

use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use netcache_compute::CreateServer;
use netcache_domain::server::{NetworkRequest, NetworkRequests};
use netcache_domain::server_attributes::ServerAttributes;
use netcache_domain::{NetworkId, PortId};
use rand::Rng;
use rand::distr::Alphanumeric;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::wire::{self, CreateServerBody, NetworksField};
use crate::{AppState, Caller, images, schema};

pub async fn create(
    NovaRequest { state, caller, version }: NovaRequest,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.authorize("os_compute_api:servers:create")?;
    let raw: Value = wire::parse_body(&body)?;
    versioned_fields(&raw, version)?;
    requested_destination(&raw, &caller)?;
    let body: CreateServerBody = wire::parse_body(&body)?;
    let count = Count::of(&body.server)?;
    let password = admin_password(body.server.admin_pass.as_ref())?;
    // Read only for a boot that asks for a zone.
    let zones = match &body.server.availability_zone {
        Some(Value::String(_)) => crate::zones::available(&state).await?,
        _ => BTreeSet::new(),
    };
    let attributes = attributes(&body, version, &zones, count.max)?;
    let (mut request, security_groups) = parse_create(body, version, &state, &caller).await?;
    request.attributes = attributes;
    count.check(&request.networks)?;
    let servers = state
        .servers()
        .create_servers(&caller.ctx, request, count.min, count.max)
        .await?;
    let server = servers.into_iter().next().expect("max_count is at least 1");
    if count.return_reservation_id {
        return Ok((
            StatusCode::ACCEPTED,
            Json(json!({"reservation_id": server.attributes.reservation_id})),
        ));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"server": wire::server_created(&state.config.public_url, &server, &security_groups, &password)})),
    ))
}

/// Nova's `adminPass`: the one asked for, or a new random one.
pub(crate) fn admin_password(given: Option<&Value>) -> ApiResult<String> {
    given.map_or_else(
        || Ok(random_text(12)),
        |value| schema::string("adminPass", value).map(str::to_owned),
    )
}

fn random_text(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// How many servers a boot asks for (`min_count`, `max_count`, both 1 by
/// default; the quotas decide how many in between) and whether it wants a
/// reservation id instead of the server.
struct Count {
    min: u32,
    max: u32,
    return_reservation_id: bool,
}

impl Count {
    fn of(fields: &wire::CreateServerFields) -> ApiResult<Self> {
        let min = fields
            .min_count
            .as_ref()
            .map(|v| positive("min_count", v))
            .transpose()?;
        let max = fields
            .max_count
            .as_ref()
            .map(|v| positive("max_count", v))
            .transpose()?;
        let (min, max) = match (min, max) {
            (Some(min), Some(max)) if min > max => {
                return Err(ApiError::BadRequest("min_count must be <= max_count".into()));
            }
            (min, max) => (min.unwrap_or(1), max.or(min).unwrap_or(1)),
        };
        let return_reservation_id = match &fields.return_reservation_id {
            None => false,
            Some(value) => schema::boolean("return_reservation_id", value)?,
        };
        Ok(Self {
            min,
            max,
            return_reservation_id,
        })
    }

    /// Nova refuses to boot several servers on one port or one fixed IP.
    fn check(&self, networks: &NetworkRequests) -> ApiResult<()> {
        let NetworkRequests::Explicit(requests) = networks else {
            return Ok(());
        };
        if self.max == 1 {
            return Ok(());
        }
        for request in requests {
            match request {
                NetworkRequest::Port { .. } => {
                    return Err(ApiError::BadRequest(
                        "Unable to launch multiple instances with a single configured port ID. Please launch your instance one by one with different ports.".into(),
                    ));
                }
                NetworkRequest::Network { fixed_ip: Some(_), .. } => {
                    return Err(ApiError::BadRequest(
                        "max_count cannot be greater than 1 if an fixed_ip is specified.".into(),
                    ));
                }
                NetworkRequest::Network { .. } => {}
            }
        }
        Ok(())
    }
}

/// Nova's `positive_integer`: a number, or digits in a string, of at least 1.
fn positive(field: &str, value: &Value) -> ApiResult<u32> {
    let parsed = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        _ => None,
    };
    parsed
        .filter(|n| *n >= 1)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| schema::invalid(field, value, &format!("{value} is less than the minimum of 1")))
}

/// Nova's checks of a boot request, with its messages, in its order: the
/// schema (name, image id, flavor, metadata, access addresses, networks), an
/// image at all (only a boot from volume may go without, and netcache has no
/// volumes), the flavor, then the image. Also returns the security groups as
/// the answer echoes them.
async fn parse_create(
    body: CreateServerBody,
    version: Microversion,
    state: &AppState,
    caller: &Caller,
) -> ApiResult<(CreateServer, Value)> {
    let group = group_hint(body.scheduler_hints())?;
    host_hints(body.scheduler_hints())?;
    let fields = body.server;
    let name = schema::name(fields.name.as_ref().ok_or_else(|| {
        ApiError::BadRequest("Invalid input for field/attribute server. Value: 'name' is a required property".into())
    })?)?;
    let image_ref = fields.image_ref.unwrap_or_default();
    if !image_ref.is_empty() && uuid::Uuid::try_parse(&image_ref).is_err() {
        return Err(schema::invalid(
            "imageRef",
            &Value::String(image_ref.clone()),
            &format!("'{image_ref}' is not valid under any of the given schemas"),
        ));
    }
    let flavor_ref = match fields.flavor_ref {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            return Err(ApiError::BadRequest(
                "Invalid input for field/attribute server. Value: 'flavorRef' is a required property".into(),
            ));
        }
    };
    let metadata = fields
        .metadata
        .as_ref()
        .map(|m| schema::metadata("metadata", m))
        .transpose()?
        .unwrap_or_default();
    let access_ip_v4 = fields.access_ip_v4.as_ref().map(schema::access_ip_v4).transpose()?;
    let access_ip_v6 = fields.access_ip_v6.as_ref().map(schema::access_ip_v6).transpose()?;
    let security_groups = fields
        .security_groups
        .as_ref()
        .map(security_group_names)
        .transpose()?
        .unwrap_or_default();
    // Nova echoes the request's groups (those with a name, as its response schema has them).
    let echo = match &fields.security_groups {
        None => json!([{"name": "default"}]),
        Some(Value::Array(entries)) => entries.iter().filter(|e| e.get("name").is_some()).cloned().collect(),
        Some(_) => json!([]),
    };
    let allocate_network = matches!(&fields.networks, Some(NetworksField::Keyword(k)) if k == "auto");
    let networks = match fields.networks {
        // From 2.37 a boot says which networks, or "auto" or "none".
        None if version.at_least(37) => {
            return Err(ApiError::BadRequest(
                "Invalid input for field/attribute server. Value: 'networks' is a required property".into(),
            ));
        }
        // Nova at 2.1 reads an empty list (the `openstack` CLI's boot without
        // `--network`) as no `networks` key: `_ports_needed_per_instance`.
        None => NetworkRequests::Auto,
        Some(NetworksField::List(entries)) if entries.is_empty() => NetworkRequests::Auto,
        Some(NetworksField::Keyword(k)) if k == "auto" => NetworkRequests::Auto,
        Some(NetworksField::Keyword(k)) if k == "none" => NetworkRequests::None,
        Some(NetworksField::Keyword(k)) => {
            return Err(ApiError::BadRequest(format!(
                "Invalid input for field/attribute networks. Value: {k}"
            )));
        }
        Some(NetworksField::List(entries)) => {
            let mut requests = Vec::with_capacity(entries.len());
            for entry in entries {
                let tag = entry.tag;
                requests.push(match (entry.port, entry.uuid) {
                    (Some(port), _) => {
                        if entry.fixed_ip.is_some() {
                            return Err(ApiError::BadRequest("Cannot give both a port and a fixed IP.".into()));
                        }
                        NetworkRequest::Port {
                            port_id: PortId::from(schema::neutron_uuid(&port, "port")?),
                            tag,
                        }
                    }
                    (None, Some(uuid)) => NetworkRequest::Network {
                        network_id: Some(NetworkId::from(schema::neutron_uuid(&uuid, "network")?)),
                        fixed_ip: entry.fixed_ip.as_deref().map(wire::parse_ip).transpose()?,
                        tag,
                    },
                    (None, None) => {
                        return Err(ApiError::BadRequest(
                            "Bad networks format: each network needs a 'uuid' or a 'port'".into(),
                        ));
                    }
                });
            }
            NetworkRequests::Explicit(requests)
        }
    };
    let injected_files = match &fields.personality {
        Some(files) => schema::personality(files)?,
        None => Vec::new(),
    };
    if image_ref.is_empty() {
        return Err(ApiError::BadRequest("Missing imageRef attribute".into()));
    }
    // Nova takes the id from a flavor's URL too.
    let flavor_id = flavor_ref.rsplit('/').next().unwrap_or_default();
    // One the caller sees (a private one its project was given), else Nova's 400.
    let flavor = state.flavors().boot_flavor(&caller.ctx, flavor_id).await?.snapshot();
    if images::find(&image_ref).is_none() {
        return Err(ApiError::BadRequest("Can not find requested image".into()));
    }
    let request = CreateServer {
        name,
        flavor_ref: flavor_id.to_owned(),
        flavor,
        image_ref,
        metadata,
        access_ip_v4,
        access_ip_v6,
        networks,
        allocate_network,
        key_name: fields.key_name,
        security_groups,
        attributes: ServerAttributes::default(),
        group,
        injected_files,
    };
    Ok((request, echo))
}

/// The body keys that came with a later microversion, refused before it as
/// Nova's schema of the earlier version refuses any key it does not list; and
/// `personality`, gone from 2.57.
fn versioned_fields(raw: &Value, version: Microversion) -> ApiResult<()> {
    let Some(server) = raw.get("server").filter(|s| s.is_object()) else {
        return Ok(());
    };
    let since = [
        ("description", 19),
        ("tags", 52),
        ("trusted_image_certificates", 63),
        ("host", 74),
        ("hypervisor_hostname", 74),
        ("hostname", 90),
    ];
    for (key, minor) in since {
        if server.get(key).is_some() && !version.at_least(minor) {
            return Err(unexpected(server, key));
        }
    }
    if server.get("personality").is_some() && version.at_least(57) {
        return Err(unexpected(server, "personality"));
    }
    Ok(())
}

/// 2.74's `host` and `hypervisor_hostname`: an admin's, by Nova's policy, and
/// then refused, since netcache does not place a server on a host asked for
/// (a 400 rather than a server somewhere else).
fn requested_destination(raw: &Value, caller: &Caller) -> ApiResult<()> {
    let server = &raw["server"];
    let Some(key) = ["host", "hypervisor_hostname"]
        .into_iter()
        .find(|key| server.get(key).is_some_and(|v| !v.is_null()))
    else {
        return Ok(());
    };
    caller.authorize("compute:servers:create:requested_destination")?;
    Err(ApiError::BadRequest(format!(
        "Booting on a requested {key} is not supported by this compute service; leave it out for the scheduler to choose."
    )))
}

fn unexpected(server: &Value, key: &str) -> ApiError {
    schema::invalid(
        "server",
        server,
        &format!("Additional properties are not allowed ('{key}' was unexpected)"),
    )
}

/// What the boot sets that only the API shows back, checked as Nova checks it.
fn attributes(
    body: &CreateServerBody,
    version: Microversion,
    zones: &BTreeSet<String>,
    max_count: u32,
) -> ApiResult<ServerAttributes> {
    let fields = &body.server;
    let hostname = fields
        .hostname
        .as_ref()
        .map(|h| schema::hostname(h, version.at_least(94)))
        .transpose()?;
    if hostname.is_some() && max_count > 1 {
        return Err(ApiError::BadRequest(
            "Cannot specify a hostname when creating multiple instances".into(),
        ));
    }
    let pinned_availability_zone = match &fields.availability_zone {
        None | Some(Value::Null) => None,
        Some(Value::String(asked)) if zones.contains(asked) => Some(asked.clone()),
        Some(Value::String(_)) => {
            return Err(ApiError::BadRequest(
                "The requested availability zone is not available".into(),
            ));
        }
        Some(other) => return Err(schema::not_of_type("availability_zone", other, "string")),
    };
    let trusted_image_certificates = match &fields.trusted_image_certificates {
        None | Some(Value::Null) => None,
        Some(Value::Array(ids)) => Some(
            ids.iter()
                .enumerate()
                .map(|(i, id)| schema::string(&i.to_string(), id).map(str::to_owned))
                .collect::<ApiResult<Vec<_>>>()?,
        ),
        Some(other) => return Err(schema::not_of_type("trusted_image_certificates", other, "array")),
    };
    Ok(ServerAttributes {
        description: fields
            .description
            .as_ref()
            .map(schema::description)
            .transpose()?
            .flatten(),
        tags: fields.tags.as_ref().map(schema::tags).transpose()?.unwrap_or_default(),
        hostname,
        user_data: fields
            .user_data
            .as_ref()
            .filter(|u| !u.is_null())
            .map(|u| schema::string("user_data", u).map(str::to_owned))
            .transpose()?,
        trusted_image_certificates,
        pinned_availability_zone,
        scheduler_hints: match body.scheduler_hints() {
            Some(Value::Object(hints)) => hints.clone().into_iter().collect(),
            _ => BTreeMap::new(),
        },
        reservation_id: Some(format!("r-{}", random_text(8).to_lowercase())),
        locked_reason: None,
        launch_index: 0,
        auto_disk_config: fields
            .disk_config
            .as_ref()
            .map(schema::disk_config)
            .transpose()?
            .unwrap_or(false),
    })
}

/// Nova's schema of the `different_host` and `same_host` hints: a server id or
/// a list of them (`same_host` takes any one string); the scheduler reads them
/// from the boot's attributes (`ServerAttributes::same_host`).
fn host_hints(hints: Option<&Value>) -> ApiResult<()> {
    let is_uuid = |v: &Value| v.as_str().is_some_and(|t| uuid::Uuid::try_parse(t).is_ok());
    if let Some(hint) = hints.and_then(|h| h.get("different_host")) {
        let valid = match hint {
            Value::Array(items) => items.iter().all(is_uuid),
            one => is_uuid(one),
        };
        if !valid {
            let reason = format!(
                "{} is not valid under any of the given schemas",
                schema::python_repr(hint)
            );
            return Err(schema::invalid("different_host", hint, &reason));
        }
    }
    match hints.and_then(|h| h.get("same_host")) {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => match items.iter().find(|item| !is_uuid(item)) {
            None => Ok(()),
            Some(item) => Err(schema::invalid(
                "same_host",
                item,
                &format!("{} is not a 'uuid'", schema::python_repr(item)),
            )),
        },
        Some(other) => Err(schema::not_of_type("same_host", other, "string', 'array")),
    }
}

/// The server group a boot joins: Nova's `group` hint, a uuid (or a list of
/// them, of which Nova uses the first).
fn group_hint(hints: Option<&Value>) -> ApiResult<Option<uuid::Uuid>> {
    let Some(hint) = hints.and_then(|h| h.get("group")) else {
        return Ok(None);
    };
    let first = match hint {
        Value::Array(items) => items.first(),
        one => Some(one),
    };
    let Some(first) = first else {
        return Ok(None);
    };
    first
        .as_str()
        .and_then(|text| uuid::Uuid::try_parse(text).ok())
        .map(Some)
        .ok_or_else(|| {
            schema::invalid(
                "group",
                hint,
                &format!(
                    "{} is not valid under any of the given schemas",
                    schema::python_repr(hint)
                ),
            )
        })
}

/// Nova's schema of `security_groups`: a list of objects with at most a `name`
/// (a name or an id). Entries without a name are passed over and a name given
/// twice counts once, as in Nova.
fn security_group_names(value: &Value) -> ApiResult<Vec<String>> {
    let Value::Array(entries) = value else {
        return Err(schema::invalid(
            "security_groups",
            value,
            &format!("{} is not of type 'array'", schema::python_repr(value)),
        ));
    };
    let mut names: Vec<String> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let entry = schema::object(Some(&index.to_string()), entry, &["name"], &[])?;
        if let Some(name) = entry.get("name").map(schema::name).transpose()?
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    Ok(names)
}
