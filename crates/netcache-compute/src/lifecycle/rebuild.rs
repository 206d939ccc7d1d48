//! Rebuild as a durable operation: the new image, the user's new fields and the
//! `rebuilding` task are committed with the operation row and the instance
//! action; the driver re-images and boots the guest (and powers a stopped one
//! off again); the outcome is committed after. A process that dies in between
//! leaves the operation to be resumed: the driver is asked again, which is
//! harmless. The server's ports are not touched.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::ServerId;
use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::operation::{Operation, OperationParams};
use netcache_domain::power::PowerAction;
use netcache_domain::quota::InjectedFile;
use netcache_domain::rebuild::{self, Refusal};
use netcache_domain::server::{Server, TaskState, VmState};
use tracing::{info, warn};

use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::{Compute, Error, RequestContext, Result};

/// What a rebuild asks for: the image, and the user's fields it replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebuildServer {
    pub image_ref: String,
    /// Whether the image catalog has `image_ref`: Nova looks the image up only
    /// after the lock and state checks, so a missing one is refused there.
    pub image_known: bool,
    pub name: Option<String>,
    /// In place of all the server's items.
    pub metadata: Option<BTreeMap<String, String>>,
    pub access_ip_v4: Option<Ipv4Addr>,
    pub access_ip_v6: Option<Ipv6Addr>,
    /// Later microversions' fields: `Some(None)` clears one.
    pub description: Option<Option<String>>,
    /// 2.54: one of the caller's key pairs, or none.
    pub key_name: Option<Option<String>>,
    /// 2.57.
    pub user_data: Option<Option<String>>,
    /// 2.63.
    pub trusted_image_certificates: Option<Option<Vec<String>>>,
    /// 2.90.
    pub hostname: Option<String>,
    /// `OS-DCF:diskConfig`.
    pub auto_disk_config: Option<bool>,
    /// Personality files (before 2.57), held to the injected-file quotas.
    pub injected_files: Vec<InjectedFile>,
}

const ACTION: &str = "rebuild";

/// A rebuild; at the cap its server goes to ERROR with the cause.
pub(crate) struct RebuildStep;

#[async_trait::async_trait]
impl OperationStep for RebuildStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::ServerInError
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        cx.compute.run_rebuild(op).await.map(|()| Next::Done)
    }
}

/// Rebuilds of a server on its host.
#[async_trait]
pub trait RebuildOps: Send + Sync {
    /// Starts a rebuild, in Nova's order of checks: the lock (409), the state
    /// (409: active, stopped or error, no task, launched once), the image
    /// (400), the metadata quota (403). Answers the server as committed
    /// (status REBUILD).
    async fn rebuild(&self, ctx: &RequestContext, server_id: ServerId, request: RebuildServer) -> Result<Server>;
}

#[async_trait]
impl RebuildOps for Arc<Compute> {
    async fn rebuild(&self, ctx: &RequestContext, server_id: ServerId, request: RebuildServer) -> Result<Server> {
        let server = self.server(server_id).await?;
        Compute::check_unlocked(ctx, &server)?;
        rebuild::check(server.vm_state, server.task_state, server.launched_at.is_some()).map_err(|refusal| {
            match refusal {
                Refusal::VmState(state) => Error::InvalidState {
                    server: server_id,
                    action: ACTION,
                    vm_state: state.to_string(),
                },
                Refusal::TaskState(task) => Error::OperationInFlight {
                    server: server_id,
                    kind: task.to_string(),
                    action: ACTION.to_owned(),
                },
                Refusal::NeverLaunched => Error::NeverLaunched {
                    server: server_id,
                    action: ACTION,
                },
            }
        })?;
        if !request.image_known {
            return Err(Error::RebuildImageNotFound);
        }
        if request.metadata.is_some() || !request.injected_files.is_empty() {
            let items = request.metadata.as_ref().map_or(0, BTreeMap::len);
            self.check_item_quotas(ctx, items, &request.injected_files).await?;
        }
        if let Some(Some(key_name)) = &request.key_name {
            self.check_key_name(ctx, key_name).await?;
        }
        let now = self.clock.now();
        let mut attributes = server.attributes.clone();
        if let Some(description) = request.description {
            attributes.description = description;
        }
        if let Some(user_data) = request.user_data {
            attributes.user_data = user_data;
        }
        if let Some(certificates) = request.trusted_image_certificates {
            attributes.trusted_image_certificates = certificates;
        }
        if let Some(hostname) = request.hostname {
            attributes.hostname = Some(hostname);
        }
        if let Some(auto) = request.auto_disk_config {
            attributes.auto_disk_config = auto;
        }
        let running = Server {
            key_name: request.key_name.unwrap_or(server.key_name),
            attributes,
            task_state: Some(TaskState::Rebuilding),
            image_ref: request.image_ref,
            name: request.name.unwrap_or(server.name),
            metadata: request.metadata.unwrap_or(server.metadata),
            access_ip_v4: request.access_ip_v4.or(server.access_ip_v4),
            access_ip_v6: request.access_ip_v6.or(server.access_ip_v6),
            updated_at: now,
            ..server
        };
        let op = self.new_operation(server_id, OperationParams::Rebuild, ctx);
        let start = Change::StartAction(ctx.action(server_id, ACTION, now));
        self.submit(op, vec![Change::UpdateServer(running.clone()), start])
            .await?;
        Ok(Server {
            generation: running.generation + 1,
            ..running
        })
    }
}

impl Compute {
    async fn run_rebuild(&self, op: &Operation) -> Result<()> {
        let server = self.server(op.server_id).await?;
        // Resumed after the outcome was recorded: nothing is left to do.
        if server.task_state != Some(TaskState::Rebuilding) {
            return Ok(());
        }
        let host = server.host.clone().ok_or(Error::NotReady(server.id))?;
        let mut outcome = self.virt.rebuild(&host, &server).await;
        if outcome.is_ok() && server.vm_state == VmState::Stopped {
            outcome = self.virt.power(&host, &server, PowerAction::Stop).await;
        }
        self.crash_point(crate::CrashPoint::AfterRebuildSpawned)?;
        let now = self.clock.now();
        let done = match &outcome {
            Ok(()) => Server {
                vm_state: rebuild::outcome(server.vm_state),
                task_state: None,
                launched_at: Some(now),
                ..server
            },
            Err(fault) => {
                warn!(server.id = %server.id, host = %host, "Rebuild of server {} failed: {fault}", server.id);
                server.in_error(fault.clone(), now)
            }
        };
        let event = ActionEvent::finished(
            "compute_rebuild_instance",
            now,
            outcome.is_ok(),
            outcome.err(),
            Some(host.to_string()),
        );
        let event = Change::AddActionEvent {
            server_id: op.server_id,
            request_id: op.request_id.clone(),
            event,
        };
        let done = self.save_server_with(done, vec![event]).await?;
        info!(server.id = %done.id, "Server {} is {} after rebuild", done.id, done.vm_state);
        Ok(())
    }
}
