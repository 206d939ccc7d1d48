//! Copies of Nova 34's os-keypairs response schemas past 2.1
//! (`nova/api/openstack/compute/schemas/keypairs.py`): `type` from 2.2,
//! `keypairs_links` from 2.35, no `private_key` from 2.92.

use serde_json::{Value, json};

use super::{naive_date_time, object};

fn key_type() -> Value {
    json!({"type": "string", "enum": ["ssh", "x509"]})
}

/// Nova's `keypair_name_special_chars` (2.92: `@` and `.` too).
fn keypair_name(v292: bool) -> Value {
    let pattern = if v292 {
        r"^[_\-\@\. a-zA-Z0-9]+$"
    } else {
        r"^[_\- a-zA-Z0-9]+$"
    };
    json!({"type": "string", "pattern": pattern, "minLength": 1, "maxLength": 255})
}

/// Nova's `user_id` parameter type.
fn user_id() -> Value {
    json!({"type": "string", "pattern": "^[a-zA-Z0-9-]*$", "minLength": 1, "maxLength": 255})
}

/// Nova's `collection_links`: exactly one `next` link.
pub fn collection_links() -> Value {
    json!({
        "type": "array",
        "items": object(json!({"rel": {"const": "next"}, "href": {"type": "string", "format": "uri"}}), &["rel", "href"]),
        "minItems": 1,
        "maxItems": 1,
    })
}

/// `GET /os-keypairs`: `index_response_v22` (2.2–2.34), `index_response_v235` (2.35–).
pub fn list_keypairs(v235: bool) -> Value {
    let keypair = object(
        json!({"fingerprint": {"type": "string"}, "name": keypair_name(false), "public_key": {"type": "string"}, "type": key_type()}),
        &["fingerprint", "name", "public_key", "type"],
    );
    let mut properties = json!({
        "keypairs": {"type": "array", "items": object(json!({"keypair": keypair}), &["keypair"])},
    });
    if v235 {
        properties["keypairs_links"] = collection_links();
    }
    object(properties, &["keypairs"])
}

/// `POST /os-keypairs`: `create_response_v22` (2.2–2.91), `create_response_v292` (2.92–).
pub fn create_keypair(v292: bool) -> Value {
    let mut properties = json!({
        "fingerprint": {"type": "string"},
        "name": keypair_name(v292),
        "private_key": {"type": "string"},
        "public_key": {"type": "string"},
        "user_id": user_id(),
        "type": key_type(),
    });
    if v292 {
        properties.as_object_mut().unwrap().remove("private_key");
    }
    object(
        json!({"keypair": object(properties, &["fingerprint", "name", "public_key", "user_id", "type"])}),
        &["keypair"],
    )
}

/// `GET /os-keypairs/{name}`: `show_response_v22` (2.2–).
pub fn get_keypair() -> Value {
    object(
        json!({"keypair": object(json!({
            // Nova's says `date-time`; its keypairs' times carry no zone.
            "created_at": naive_date_time(),
            "deleted": {"type": "boolean", "const": false},
            "deleted_at": {"type": "null"},
            "fingerprint": {"type": "string"},
            "id": {"type": "integer"},
            "name": keypair_name(false),
            "public_key": {"type": "string"},
            "updated_at": {"type": "null"},
            "user_id": user_id(),
            "type": key_type(),
        }), &[
            "created_at", "deleted", "deleted_at", "fingerprint", "id", "name", "public_key", "updated_at", "user_id",
            "type",
        ])}),
        &["keypair"],
    )
}
