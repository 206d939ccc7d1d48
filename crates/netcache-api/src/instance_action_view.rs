//! The views of a server's instance actions and their events, per
//! microversion and by what the caller's policy admits (the handlers in
//! `instance_actions.rs` decide the fields; these build the JSON).

use chrono::{DateTime, Utc};
use netcache_domain::action::{Action, ActionEvent};
use serde_json::{Value, json};

use crate::microversion::Microversion;
use crate::wire::{self, iso_micro};

/// When the action last changed: its latest event's start or finish (Nova
/// stamps an action's `updated_at` as its events start and finish); none
/// before its first event.
#[must_use]
pub fn updated_at(action: &Action) -> Option<DateTime<Utc>> {
    action
        .events
        .iter()
        .flat_map(|e| [Some(e.start_time), e.finish_time])
        .flatten()
        .max()
}

/// The action's fields of `version` (`updated_at` from 2.58).
#[must_use]
pub fn action_view(action: &Action, version: Microversion) -> Value {
    let mut view = json!({
        "action": action.action,
        "instance_uuid": action.server_id.to_string(),
        "message": action.message,
        "project_id": action.project_id,
        "request_id": action.request_id,
        "start_time": iso_micro(action.start_time),
        "user_id": action.user_id,
    });
    if version.at_least(58) {
        view["updated_at"] = json!(updated_at(action).map(iso_micro));
    }
    view
}

/// What of an event the caller sees.
#[derive(Clone, Copy, Default)]
pub struct EventFields {
    pub traceback: bool,
    pub host: bool,
    pub host_id: bool,
    pub details: bool,
}

#[must_use]
pub fn event_view(event: &ActionEvent, project_id: &str, fields: EventFields) -> Value {
    let mut view = json!({
        "event": event.event,
        "start_time": iso_micro(event.start_time),
        "finish_time": event.finish_time.map(iso_micro),
        "result": event.result,
    });
    if fields.traceback {
        view["traceback"] = json!(event.details);
    }
    if fields.host {
        view["host"] = json!(event.host);
    }
    if fields.host_id {
        view["hostId"] = json!(wire::host_id(project_id, event.host.as_deref()));
    }
    if fields.details {
        view["details"] = json!(event.details);
    }
    view
}
