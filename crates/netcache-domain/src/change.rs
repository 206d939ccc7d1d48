//! State changes, decided in pure code and applied by the store in one transaction
//! each batch. A batch either applies whole or not at all.

use crate::action::{Action, ActionEvent};
use crate::ghost::GhostSighting;
use crate::intent::{IntentState, PortIntent};
use crate::network_info::NetworkInfo;
use crate::server::Server;
use crate::vif::VifRecord;
use crate::{PortId, ServerId};

#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A new server, with its empty cache (generation 0).
    InsertServer(Server),
    /// Replace a server row if nobody changed it since `server.generation`; the
    /// stored generation becomes `server.generation + 1`.
    UpdateServer(Server),
    InsertVif(VifRecord),
    /// Replace the VIF record with the same (server, port).
    UpdateVif(VifRecord),
    DeleteVif {
        server_id: ServerId,
        port_id: PortId,
    },
    InsertIntent(PortIntent),
    /// Replace an intent if it is still in `expected` state.
    UpdateIntent {
        intent: PortIntent,
        expected: IntentState,
    },
    /// Replace a server's cache if its generation is still `expected_generation`.
    WriteCache {
        server_id: ServerId,
        info: NetworkInfo,
        expected_generation: i64,
    },
    StartAction(Action),
    AddActionEvent {
        server_id: ServerId,
        request_id: String,
        event: ActionEvent,
    },
    UpsertGhostSighting(GhostSighting),
    DeleteGhostSighting {
        port_id: PortId,
    },
}
