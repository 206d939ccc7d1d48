//! Port intents: recorded (and committed) before every create-port call.

use std::net::IpAddr;

use chrono::{DateTime, Utc};

use crate::server::string_enum;
use crate::{HostName, IntentId, NetworkId, PortId, ServerId};

#[derive(Clone, Debug, PartialEq)]
pub struct PortIntent {
    pub id: IntentId,
    pub server_id: ServerId,
    /// Build attempt (reschedule count + 1), or 0 for an interface attach.
    pub attempt: u32,
    /// Which VIF slot the port is for.
    pub position: i64,
    pub host: HostName,
    pub network_id: NetworkId,
    pub fixed_ip: Option<IpAddr>,
    pub tag: Option<String>,
    pub state: IntentState,
    /// The port, once created or adopted.
    pub port_id: Option<PortId>,
    /// True when the port was found by its marker after an ambiguous create.
    pub adopted: bool,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

string_enum!(
    /// `pending` → `created` | `failed` | `abandoned`.
    IntentState {
        /// Recorded; the create call may or may not have reached Neutron.
        Pending => "pending",
        /// The port exists and is ours (created, or adopted by marker lookup).
        Created => "created",
        /// Neutron definitely refused; no port exists.
        Failed => "failed",
        /// The outcome was ambiguous and no port carried the marker at lookup time.
        /// A port that shows up later with this marker is provably ours and garbage.
        Abandoned => "abandoned",
    }
);
