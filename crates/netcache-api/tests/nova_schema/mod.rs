//! The project's own copies of Nova's v2.1 response schemas for what netcache
//! serves (Nova's `api-ref` and the response checks Tempest applies), and a check
//! that a body satisfies one. Tempest refuses any key a schema does not list
//! (`additionalProperties: false`), so a view with one extra key fails every
//! Tempest test that reads it; these checks catch that here first.

#![allow(dead_code)]

pub mod aggregates;
pub mod diagnostics;
pub mod flavors;
pub mod floating_ips;
pub mod hosts;
pub mod hypervisors;
pub mod instance_actions;
pub mod keypairs;
pub mod quotas;
pub mod server_groups;
pub mod services;
pub mod tenant_usages;

use serde_json::{Value, json};

/// Panics with every violation when `body` does not satisfy `schema`.
pub fn assert_satisfies(name: &str, schema: &Value, body: &Value) {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("the {name} schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("  at {}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{name}: the body breaks Nova's response schema:\n{}\nbody: {body:#}",
        errors.join("\n")
    );
}

/// A closed object: exactly `properties` may appear, `required` must.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn links() -> Value {
    json!({"type": "array", "items": object(json!({
        "href": {"type": "string", "format": "uri"},
        "rel": {"type": "string"},
        "type": {"type": "string"},
    }), &["href", "rel"])})
}

fn date_time() -> Value {
    json!({"type": "string", "format": "date-time"})
}

/// Nova's action and event times carry no zone (`2013-10-02T10:31:31.000000`).
fn naive_date_time() -> Value {
    json!({"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?$"})
}

fn mac_address() -> Value {
    json!({"type": "string", "pattern": "^(?:[a-f0-9]{2}:){5}[a-f0-9]{2}$"})
}

fn ip_address() -> Value {
    json!({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]})
}

/// `addresses`: per network label, its IPs; the server views add the OS-EXT keys.
fn addresses(extended: bool) -> Value {
    let mut entry = json!({"version": {"type": "integer", "enum": [4, 6]}, "addr": ip_address()});
    if extended {
        entry["OS-EXT-IPS:type"] = json!({"type": "string", "enum": ["fixed", "floating"]});
        entry["OS-EXT-IPS-MAC:mac_addr"] = mac_address();
    }
    json!({
        "type": "object",
        "patternProperties": {"^[a-zA-Z0-9-_.]+$": {"type": "array", "items": object(entry, &["version", "addr"])}},
        "additionalProperties": false,
    })
}

/// The `POST /servers` 202 body: id, links, and no name.
pub fn create_server() -> Value {
    object(
        json!({"server": object(json!({
            "id": {"type": "string", "format": "uuid"},
            "links": links(),
            "OS-DCF:diskConfig": {"type": "string"},
            "security_groups": security_groups(),
            "adminPass": {"type": "string"},
        }), &["id", "links", "adminPass"])}),
        &["server"],
    )
}

/// A server's security groups: `[{"name": …}]`.
fn security_groups() -> Value {
    json!({"type": "array", "items": object(json!({"name": {"type": "string"}}), &["name"])})
}

fn server_summary() -> Value {
    object(
        json!({"id": {"type": "string"}, "name": {"type": "string"}, "links": links()}),
        &["id", "name", "links"],
    )
}

/// `GET /servers`.
pub fn list_servers() -> Value {
    object(
        json!({"servers": {"type": "array", "items": server_summary()}, "servers_links": links()}),
        &["servers"],
    )
}

/// Nova's basic server view at 2.1 (Tempest's `common_show_server`): what an
/// update answers (below 2.75), and what the detail view builds on.
fn common_show_server() -> Value {
    let image = json!({"oneOf": [
        object(json!({"id": {"type": "string"}, "links": links()}), &["id", "links"]),
        {"type": "string", "maxLength": 0},
    ]});
    let fault = object(
        json!({
            "code": {"type": "integer"}, "created": date_time(),
            "message": {"type": "string"}, "details": {"type": "string"},
        }),
        &["code", "created", "message"],
    );
    object(
        json!({
            "id": {"type": "string", "format": "uuid"},
            "name": {"type": "string"},
            "status": {"type": "string", "enum": [
                "ACTIVE", "BUILD", "DELETED", "ERROR", "HARD_REBOOT", "MIGRATING", "PASSWORD", "PAUSED",
                "REBOOT", "REBUILD", "RESCUE", "RESIZE", "REVERT_RESIZE", "SHELVED", "SHELVED_OFFLOADED",
                "SHUTOFF", "SOFT_DELETED", "SUSPENDED", "UNKNOWN", "VERIFY_RESIZE",
            ]},
            "image": image,
            "flavor": object(json!({"id": {"type": "string"}, "links": links()}), &[]),
            "fault": fault,
            "user_id": {"type": "string"},
            "tenant_id": {"type": "string"},
            "created": date_time(),
            "updated": date_time(),
            "progress": {"type": "integer"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
            "links": links(),
            "addresses": addresses(false),
            "hostId": {"type": "string"},
            "OS-DCF:diskConfig": {"type": "string", "enum": ["MANUAL", "AUTO"]},
            "accessIPv4": {"type": "string", "anyOf": [{"format": "ipv4"}, {"maxLength": 0}]},
            "accessIPv6": {"type": "string", "anyOf": [{"format": "ipv6"}, {"maxLength": 0}]},
        }),
        &[
            "id",
            "name",
            "status",
            "image",
            "flavor",
            "user_id",
            "tenant_id",
            "created",
            "updated",
            "metadata",
            "links",
            "addresses",
            "hostId",
        ],
    )
}

/// The detail view of a server at 2.1: the basic view, the extensions' keys,
/// and addresses with their type and MAC.
fn server_detail() -> Value {
    let nullable_string = json!({"type": ["string", "null"]});
    let mut view = common_show_server();
    let properties = view["properties"].as_object_mut().unwrap();
    properties.insert("addresses".into(), addresses(true));
    properties.extend(
        json!({
            "key_name": nullable_string,
            "security_groups": security_groups(),
            "OS-SRV-USG:launched_at": nullable_string,
            "OS-SRV-USG:terminated_at": nullable_string,
            "OS-EXT-AZ:availability_zone": {"type": "string"},
            "OS-EXT-STS:task_state": nullable_string,
            "OS-EXT-STS:vm_state": {"type": "string"},
            "OS-EXT-STS:power_state": {"type": "integer", "enum": [0, 1, 3, 4, 6, 7]},
            "OS-EXT-SRV-ATTR:host": nullable_string,
            "OS-EXT-SRV-ATTR:instance_name": {"type": "string"},
            "OS-EXT-SRV-ATTR:hypervisor_hostname": nullable_string,
            "os-extended-volumes:volumes_attached": {"type": "array", "items": object(json!({"id": {"type": "string"}}), &[])},
            "config_drive": {"type": "string"},
        })
        .as_object()
        .unwrap()
        .clone(),
    );
    view
}

/// `PUT /servers/{id}` at 2.1: the basic view.
pub fn update_server() -> Value {
    object(json!({"server": common_show_server()}), &["server"])
}

/// The `rebuild` action's 202 body at 2.1 (Tempest's
/// `rebuild_server_with_admin_pass`): the basic view with `adminPass`.
pub fn rebuild_server() -> Value {
    let mut server = common_show_server();
    server["properties"]["adminPass"] = json!({"type": "string"});
    server["required"].as_array_mut().unwrap().push(json!("adminPass"));
    object(json!({ "server": server }), &["server"])
}

/// The `os-getConsoleOutput` action's 200 body.
pub fn get_console_output() -> Value {
    object(json!({"output": {"type": "string"}}), &["output"])
}

/// `GET`, `POST` and `PUT /servers/{id}/metadata`.
pub fn server_metadata() -> Value {
    object(
        json!({"metadata": {"type": "object", "patternProperties": {"^.+$": {"type": "string"}}}}),
        &["metadata"],
    )
}

/// `GET` and `PUT /servers/{id}/metadata/{key}`.
pub fn server_metadata_item() -> Value {
    object(
        json!({"meta": {"type": "object", "patternProperties": {"^.+$": {"type": "string"}}}}),
        &["meta"],
    )
}

/// Nova shows `progress` in these statuses only, and `fault` in these only.
pub const PROGRESS_STATUSES: [&str; 6] = ["ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING"];
pub const FAULT_STATUSES: [&str; 2] = ["ERROR", "DELETED"];

/// `GET /servers/{id}`.
pub fn get_server() -> Value {
    object(json!({"server": server_detail()}), &["server"])
}

/// `GET /servers/detail`.
pub fn list_servers_detail() -> Value {
    object(
        json!({"servers": {"type": "array", "items": server_detail()}, "servers_links": links()}),
        &["servers"],
    )
}

/// `GET /servers/{id}/ips`.
pub fn list_addresses() -> Value {
    object(json!({"addresses": addresses(false)}), &["addresses"])
}

/// `GET /servers/{id}/ips/{label}`.
pub fn list_addresses_by_network() -> Value {
    addresses(false)
}

fn interface() -> Value {
    object(
        json!({
            "port_state": {"type": "string"},
            "fixed_ips": {"type": "array", "items": object(json!({
                "subnet_id": {"type": "string", "format": "uuid"},
                "ip_address": ip_address(),
            }), &["subnet_id", "ip_address"])},
            "port_id": {"type": "string", "format": "uuid"},
            "net_id": {"type": "string", "format": "uuid"},
            "mac_addr": mac_address(),
        }),
        &["port_state", "fixed_ips", "port_id", "net_id", "mac_addr"],
    )
}

/// `POST` and `GET /servers/{id}/os-interface/{port}`.
pub fn get_interface() -> Value {
    object(json!({"interfaceAttachment": interface()}), &["interfaceAttachment"])
}

/// Nova 34's `_interface_attachment_v270`: the 2.1 view with `tag` (string or null), required.
fn interface_at(minor: u16) -> Value {
    let mut schema = interface();
    if minor >= 70 {
        schema["properties"]["tag"] = json!({"type": ["null", "string"]});
        schema["required"].as_array_mut().unwrap().push(json!("tag"));
    }
    schema
}

/// `POST` and `GET /servers/{id}/os-interface/{port}` at `2.minor`.
pub fn get_interface_at(minor: u16) -> Value {
    object(
        json!({"interfaceAttachment": interface_at(minor)}),
        &["interfaceAttachment"],
    )
}

/// `GET /servers/{id}/os-interface` at `2.minor`.
pub fn list_interfaces_at(minor: u16) -> Value {
    object(
        json!({"interfaceAttachments": {"type": "array", "items": interface_at(minor)}}),
        &["interfaceAttachments"],
    )
}

/// `GET /servers/{id}/os-interface`.
pub fn list_interfaces() -> Value {
    object(
        json!({"interfaceAttachments": {"type": "array", "items": interface()}}),
        &["interfaceAttachments"],
    )
}

fn instance_action(with_events: bool) -> Value {
    let mut properties = json!({
        "action": {"type": "string"},
        "request_id": {"type": "string"},
        "user_id": {"type": "string"},
        "project_id": {"type": "string"},
        "start_time": naive_date_time(),
        "message": {"type": ["string", "null"]},
        "instance_uuid": {"type": "string", "format": "uuid"},
    });
    if with_events {
        // An event still running has no finish time and no result yet.
        properties["events"] = json!({"type": "array", "items": object(json!({
            "event": {"type": "string"},
            "start_time": naive_date_time(),
            "finish_time": {"anyOf": [naive_date_time(), {"type": "null"}]},
            "result": {"type": ["string", "null"]},
            "traceback": {"type": ["string", "null"]},
        }), &["event", "start_time", "finish_time", "result", "traceback"])});
    }
    object(
        properties,
        &[
            "action",
            "request_id",
            "user_id",
            "project_id",
            "start_time",
            "message",
            "instance_uuid",
        ],
    )
}

/// `GET /servers/{id}/os-instance-actions`.
pub fn list_instance_actions() -> Value {
    object(
        json!({"instanceActions": {"type": "array", "items": instance_action(false)}}),
        &["instanceActions"],
    )
}

/// `GET /servers/{id}/os-instance-actions/{request_id}`.
pub fn show_instance_action() -> Value {
    object(json!({"instanceAction": instance_action(true)}), &["instanceAction"])
}

/// `POST /os-server-external-events` (200 or 207).
pub fn server_external_events() -> Value {
    let event = object(
        json!({
            "server_uuid": {"type": "string", "format": "uuid"},
            "name": {"type": "string", "enum": [
                "network-changed", "network-vif-plugged", "network-vif-unplugged", "network-vif-deleted",
            ]},
            "status": {"type": "string", "enum": ["failed", "completed", "in-progress"]},
            "tag": {"type": "string", "maxLength": 255},
            "code": {"type": "integer"},
        }),
        &["server_uuid", "name", "code"],
    );
    object(
        json!({"events": {"type": "array", "minItems": 1, "items": event}}),
        &["events"],
    )
}

fn flavor_detail() -> Value {
    object(
        json!({
            "name": {"type": "string"}, "links": links(), "ram": {"type": "integer"},
            "vcpus": {"type": "integer"}, "swap": {"type": ["integer", "string"]}, "disk": {"type": "integer"},
            "id": {"type": "string"}, "OS-FLV-DISABLED:disabled": {"type": "boolean"},
            "os-flavor-access:is_public": {"type": "boolean"}, "rxtx_factor": {"type": "number"},
            "OS-FLV-EXT-DATA:ephemeral": {"type": "integer"},
        }),
        &["name", "links", "ram", "vcpus", "swap", "disk", "id"],
    )
}

/// `GET /flavors`.
pub fn list_flavors() -> Value {
    let summary = object(
        json!({"name": {"type": "string"}, "links": links(), "id": {"type": "string"}}),
        &["name", "links", "id"],
    );
    object(
        json!({"flavors": {"type": "array", "items": summary}, "flavors_links": links()}),
        &["flavors"],
    )
}

/// `GET /flavors/detail`.
pub fn list_flavors_detail() -> Value {
    object(
        json!({"flavors": {"type": "array", "items": flavor_detail()}, "flavors_links": links()}),
        &["flavors"],
    )
}

/// `GET /flavors/{id}`.
pub fn get_flavor() -> Value {
    object(json!({"flavor": flavor_detail()}), &["flavor"])
}

fn version() -> Value {
    object(
        json!({
            "id": {"type": "string"}, "links": links(), "status": {"type": "string"}, "updated": date_time(),
            "version": {"type": "string"}, "min_version": {"type": "string"},
            "media-types": {"type": "array", "items": object(json!({
                "base": {"type": "string"}, "type": {"type": "string"},
            }), &["base", "type"])},
        }),
        &["id", "links", "status", "updated"],
    )
}

/// `GET /`.
pub fn list_versions() -> Value {
    object(
        json!({"versions": {"type": "array", "items": version()}}),
        &["versions"],
    )
}

/// `GET /v2.1/`.
pub fn get_version() -> Value {
    object(json!({"version": version()}), &["version"])
}

/// `GET /os-keypairs` at 2.1: name, public key and fingerprint of each.
pub fn list_keypairs() -> Value {
    let keypair = object(
        json!({
            "public_key": {"type": "string"},
            "name": {"type": "string"},
            "fingerprint": {"type": "string"},
        }),
        &["public_key", "name", "fingerprint"],
    );
    object(
        json!({"keypairs": {"type": "array", "items": object(json!({"keypair": keypair}), &["keypair"])}}),
        &["keypairs"],
    )
}

/// `POST /os-keypairs` at 2.1 (200): `private_key` only for a generated key pair.
pub fn create_keypair() -> Value {
    object(
        json!({"keypair": object(json!({
            "fingerprint": {"type": "string"},
            "name": {"type": "string"},
            "public_key": {"type": "string"},
            "user_id": {"type": "string"},
            "private_key": {"type": "string"},
        }), &["fingerprint", "name", "public_key", "user_id"])}),
        &["keypair"],
    )
}

/// `GET /os-keypairs/{name}` at 2.1: the record's columns too.
pub fn get_keypair() -> Value {
    let nullable_time = json!({"anyOf": [naive_date_time(), {"type": "null"}]});
    object(
        json!({"keypair": object(json!({
            "public_key": {"type": "string"},
            "name": {"type": "string"},
            "fingerprint": {"type": "string"},
            "user_id": {"type": "string"},
            "deleted": {"type": "boolean"},
            "created_at": naive_date_time(),
            "updated_at": nullable_time,
            "deleted_at": nullable_time,
            "id": {"type": "integer"},
        }), &[
            "public_key", "name", "fingerprint", "user_id", "deleted", "created_at", "updated_at", "deleted_at", "id",
        ])}),
        &["keypair"],
    )
}

/// Every error body: one key naming the kind (`itemNotFound`, …) over code and message.
/// Nova's error body of `status`, with exactly `message`.
#[track_caller]
pub fn assert_nova_error(got: (axum::http::StatusCode, Value), status: axum::http::StatusCode, message: &str) {
    let (code, body) = got;
    assert_eq!(code, status, "{body}");
    assert_satisfies("an error", &nova_error(), &body);
    let key = match status.as_u16() {
        400 => "badRequest",
        403 => "forbidden",
        404 => "itemNotFound",
        409 => "conflictingRequest",
        other => panic!("unexpected {other}"),
    };
    assert_eq!(body[key]["code"], status.as_u16(), "{body}");
    assert_eq!(body[key]["message"], message, "{body}");
}

pub fn nova_error() -> Value {
    let fault = object(
        json!({"code": {"type": "integer"}, "message": {"type": "string"}}),
        &["code", "message"],
    );
    json!({"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": fault})
}

/// keystonemiddleware's 401 body (Nova never sees an unauthenticated request).
pub fn keystone_unauthorized() -> Value {
    object(
        json!({"error": object(json!({
            "code": {"type": "integer", "enum": [401]},
            "title": {"type": "string"},
            "message": {"type": "string"},
        }), &["code", "title", "message"])}),
        &["error"],
    )
}
