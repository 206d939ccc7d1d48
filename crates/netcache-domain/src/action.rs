//! The per-server action log (Nova's `os-instance-actions`).

use chrono::{DateTime, Utc};

use crate::ServerId;

/// One user- or system-initiated action on a server.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub server_id: ServerId,
    pub request_id: String,
    /// Nova's action name: `create`, `delete`, `attach_interface`, `detach_interface`,
    /// or netcache's own (`recover_intent`, `heal`, ...).
    pub action: String,
    pub project_id: String,
    pub user_id: String,
    pub start_time: DateTime<Utc>,
    pub message: Option<String>,
    pub events: Vec<ActionEvent>,
}

/// A step of an action.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionEvent {
    pub event: String,
    pub start_time: DateTime<Utc>,
    pub finish_time: Option<DateTime<Utc>>,
    /// `Success` or `Error`, as Nova writes them.
    pub result: Option<String>,
    pub details: Option<String>,
    pub host: Option<String>,
}

impl ActionEvent {
    #[must_use]
    pub fn finished(event: &str, at: DateTime<Utc>, ok: bool, details: Option<String>, host: Option<String>) -> Self {
        Self {
            event: event.to_owned(),
            start_time: at,
            finish_time: Some(at),
            result: Some(if ok { "Success" } else { "Error" }.to_owned()),
            details,
            host,
        }
    }
}
