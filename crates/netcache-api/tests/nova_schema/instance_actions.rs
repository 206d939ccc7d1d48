//! Copies of Nova 34's os-instance-actions response schemas past 2.1
//! (`schemas/instance_actions.py`): `events` required from 2.51 (`traceback`
//! optional), `updated_at` and the list's `links` from 2.58, events' `hostId`
//! (required) and `host` from 2.62, `details` from 2.84.

use serde_json::{Value, json};

use super::keypairs::collection_links;
use super::{naive_date_time, object};

fn action(minor: u16) -> (Value, Vec<&'static str>) {
    let mut properties = json!({
        "action": {"type": "string"},
        "instance_uuid": {"type": "string", "format": "uuid"},
        "message": {"type": ["null", "string"]},
        "project_id": {"type": ["null", "string"]},
        "request_id": {"type": "string"},
        "start_time": naive_date_time(),
        "user_id": {"type": ["null", "string"]},
    });
    let mut required = vec![
        "action",
        "instance_uuid",
        "message",
        "project_id",
        "request_id",
        "start_time",
        "user_id",
    ];
    if minor >= 58 {
        properties["updated_at"] = json!({"anyOf": [naive_date_time(), {"type": "null"}]});
        required.push("updated_at");
    }
    (properties, required)
}

/// `GET /servers/{id}/os-instance-actions` at `2.minor`.
pub fn list_at(minor: u16) -> Value {
    let (properties, required) = action(minor);
    let mut body = json!({"instanceActions": {"type": "array", "items": object(properties, &required)}});
    if minor >= 58 {
        body["links"] = collection_links();
    }
    object(body, &["instanceActions"])
}

/// `GET /servers/{id}/os-instance-actions/{request_id}` at `2.minor`.
pub fn show_at(minor: u16) -> Value {
    let (mut properties, mut required) = action(minor);
    let mut event = json!({
        "event": {"type": "string"},
        "start_time": naive_date_time(),
        "finish_time": {"anyOf": [naive_date_time(), {"type": "null"}]},
        "result": {"type": ["string", "null"]},
        "traceback": {"type": ["null", "string"]},
    });
    let mut event_required = vec!["event", "finish_time", "result", "start_time"];
    if minor >= 62 {
        event["hostId"] = json!({"type": "string"});
        event["host"] = json!({"type": "string"});
        event_required.push("hostId");
    }
    if minor >= 84 {
        event["details"] = json!({"type": ["string", "null"]});
    }
    properties["events"] = json!({"type": "array", "items": object(event, &event_required)});
    if minor >= 51 {
        required.push("events");
    }
    object(
        json!({"instanceAction": object(properties, &required)}),
        &["instanceAction"],
    )
}
