//! A boot's first attempt is planned when the boot is accepted: its host is
//! picked and an intent recorded for every port it creates, in the accept's
//! commit, so the build sends its POSTs without a commit of its own first.
//!
//! Those intents are known to be unsent only in the process that recorded them,
//! and only until its build first runs: a later run (a retried step, a restart,
//! another process taking the build over) cannot tell whether a POST went out,
//! so it resolves them by their marker like any pending intent (invariant 3).

use std::collections::HashMap;
use std::sync::Mutex;

use netcache_domain::intent::PortIntent;
use netcache_domain::server::{NetworkRequest, Server, TaskState};
use netcache_domain::{HostName, ServerId};

use crate::Compute;
use crate::attachment::allocate::NewPortSlot;

/// Intents recorded with an accepted boot and not sent, by server.
#[derive(Default)]
pub(crate) struct UnsentIntents(Mutex<HashMap<ServerId, Vec<PortIntent>>>);

impl UnsentIntents {
    pub fn keep(&self, server: ServerId, intents: Vec<PortIntent>) {
        if !intents.is_empty() {
            self.0.lock().expect("unsent intents").insert(server, intents);
        }
    }

    /// The server's unsent intents, once: whoever takes them sends them.
    pub fn take(&self, server: ServerId) -> Vec<PortIntent> {
        self.0
            .lock()
            .expect("unsent intents")
            .remove(&server)
            .unwrap_or_default()
    }
}

impl Compute {
    /// Places a new server on its first host (`host`: round-robin, or where
    /// its group's policy puts it) and returns an intent for each port its
    /// build creates there; none if no host is left, and the build then fails
    /// as Nova's `NoValidHost`.
    pub(crate) fn plan_first_attempt(&self, server: &mut Server, host: Option<HostName>) -> Vec<PortIntent> {
        if self.config.max_attempts == 0 {
            return Vec::new();
        }
        let Some(host) = host else {
            return Vec::new();
        };
        server.host = Some(host.clone());
        server.tried_hosts = vec![host.clone()];
        server.task_state = Some(TaskState::Networking);
        server
            .requested_networks
            .slots()
            .into_iter()
            .enumerate()
            .filter_map(|(position, request)| match request {
                NetworkRequest::Network {
                    network_id: Some(network_id),
                    fixed_ip,
                    tag,
                } => Some(NewPortSlot {
                    attempt: 1,
                    position: position as i64,
                    network_id,
                    fixed_ip,
                    tag,
                    security_groups: server.security_groups.clone(),
                }),
                _ => None,
            })
            .map(|slot| self.new_intent(server.id, &host, &slot))
            .collect()
    }
}
