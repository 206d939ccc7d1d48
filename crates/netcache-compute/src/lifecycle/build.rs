//! Server builds (with reschedules) and deletes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::action::ActionEvent;
use netcache_domain::change::Change;
use netcache_domain::flavor::FlavorSnapshot;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::operation::{Operation, OperationKind, OperationParams, resumes_in_place};
use netcache_domain::quota::InjectedFile;
use netcache_domain::server::{NetworkRequest, NetworkRequests, Server, TaskState, VmState};
use netcache_domain::server_attributes::{ServerAttributes, sanitize_hostname};
use netcache_domain::vif::{VifRecord, VifState};
use netcache_domain::visibility::{NetworkAccess, User, network_access};
use netcache_domain::{HostName, NetworkId, ProjectId, ServerId};
use netcache_neutron::PortFilter;
use tracing::{error, info, warn};

use crate::attachment::allocate::{CreatedPort, NewPortSlot};
use crate::fleet::aggregates::HostChoice;
use crate::hooks::HoldPoint;
use crate::runner::step::{Context, ErrorPolicy, Next, OperationStep};
use crate::tenancy::server_groups::{BootGroup, NOT_ENOUGH_HOSTS, Pick};
use crate::{Compute, Error, RequestContext, Result};

/// A boot request, already parsed from the API body.
#[derive(Clone, Debug)]
pub struct CreateServer {
    pub name: String,
    pub flavor_ref: String,
    /// The flavor `flavor_ref` names, as [`Compute::boot_flavor`] found it.
    pub flavor: FlavorSnapshot,
    pub image_ref: String,
    pub metadata: BTreeMap<String, String>,
    pub access_ip_v4: Option<std::net::Ipv4Addr>,
    pub access_ip_v6: Option<std::net::Ipv6Addr>,
    pub networks: NetworkRequests,
    /// `networks: "auto"` said in so many words (Nova from 2.37): with no
    /// network to use, Neutron's auto-allocated topology gives one.
    pub allocate_network: bool,
    /// One of the caller's key pairs, by name.
    pub key_name: Option<String>,
    /// Security groups by name or id, each once (none: Neutron's default).
    pub security_groups: Vec<String>,
    /// What only the API shows back; each server of the request gets its own
    /// `launch_index`, and a `hostname` from its name if none was asked for.
    pub attributes: ServerAttributes,
    /// The server group it joins (`os:scheduler_hints` `group`).
    pub group: Option<uuid::Uuid>,
    /// Personality files (before 2.57), held to the injected-file quotas.
    pub injected_files: Vec<InjectedFile>,
}

/// A boot request with what its checks resolved: "auto" networks, group ids.
struct Boot<'a> {
    request: &'a CreateServer,
    networks: &'a NetworkRequests,
    security_groups: &'a [String],
    /// Where its servers may go, as read when the boot was accepted.
    choice: &'a HostChoice,
}

/// The build; at the cap its server goes to ERROR, as a failed build does.
pub(crate) struct BuildStep;

#[async_trait::async_trait]
impl OperationStep for BuildStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::ServerInError
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        cx.compute.run_build(op, cx.unsent.clone()).await
    }
}

/// The delete; at the cap its server goes to ERROR with the cause.
pub(crate) struct DeleteStep;

#[async_trait::async_trait]
impl OperationStep for DeleteStep {
    fn policy(&self) -> ErrorPolicy {
        ErrorPolicy::ServerInError
    }

    async fn step(&self, cx: &Context, op: &Operation) -> Result<Next> {
        cx.compute.run_delete(op).await.map(|()| Next::Done)
    }
}

const BUILD_EVENT: &str = "compute__do_build_and_run_instance";

/// Counts of the quota before a boot gives up on racing boots and answers the
/// last refusal.
const QUOTA_ATTEMPTS: u32 = 3;

/// Boots and deletes of servers.
#[async_trait]
pub trait BuildOps: Send + Sync {
    /// Validates the request's networks and ports (Nova's rules), records the
    /// server as building and starts its build in the background.
    async fn create_server(&self, ctx: &RequestContext, request: CreateServer) -> Result<Server>;

    /// The servers of one request (`min_count`/`max_count`): validated once, as
    /// many as the quotas allow (at least `min`, else Nova's 403), each its own
    /// build; several are named `NAME-1` … `NAME-N`, as Nova names them.
    async fn create_servers(
        &self,
        ctx: &RequestContext,
        request: CreateServer,
        min: u32,
        max: u32,
    ) -> Result<Vec<Server>>;

    /// Deletes a server (Nova's 204 at once): the delete is an operation of its
    /// own, or, while another one runs, queued to follow it.
    async fn delete_server(&self, ctx: &RequestContext, server_id: ServerId) -> Result<()>;
}

#[async_trait]
impl BuildOps for Arc<Compute> {
    async fn create_server(&self, ctx: &RequestContext, request: CreateServer) -> Result<Server> {
        let mut servers = self.create_servers(ctx, request, 1, 1).await?;
        Ok(servers.remove(0))
    }

    async fn create_servers(
        &self,
        ctx: &RequestContext,
        request: CreateServer,
        min: u32,
        max: u32,
    ) -> Result<Vec<Server>> {
        // Its ports' marker rides in their create requests: none is accepted
        // before Neutron says how (503 until then).
        self.marker_mode().await?;
        let project = ProjectId::from(ctx.project_id.as_str());
        let user = User {
            project: &project,
            admin: ctx.is_admin(),
        };
        self.check_item_quotas(ctx, request.metadata.len(), &request.injected_files)
            .await?;
        let security_groups = self.resolve_boot_groups(&project, &request.security_groups).await?;
        if let Some(key_name) = &request.key_name {
            self.check_key_name(ctx, key_name).await?;
        }
        let networks = self
            .validate_networks(user, &request.networks, request.allocate_network)
            .await?;
        let choice = self.host_choice(&request.attributes).await?;
        let boot = Boot {
            request: &request,
            networks: &networks,
            security_groups: &security_groups,
            choice: &choice,
        };
        let mut attempt = 1;
        loop {
            let (count, claim) = self.claim_servers(ctx, &request.flavor, min, max).await?;
            let group = match request.group {
                Some(id) => Some(self.boot_group(ctx, id, count).await?),
                None => None,
            };
            if group.is_some() {
                self.hold_point(HoldPoint::GroupMembersRead).await;
            }
            match self.submit_builds(ctx, &boot, count, claim, group).await {
                // A boot racing this one took the room between the count and
                // the record: count again (fewer may fit, or none).
                Err(Error::OverQuota(_)) if attempt < QUOTA_ATTEMPTS => attempt += 1,
                // Another member of its group was placed since the read: place again.
                Err(Error::Store(e)) if e.is_group_moved() => {}
                other => return other,
            }
        }
    }

    async fn delete_server(&self, ctx: &RequestContext, server_id: ServerId) -> Result<()> {
        for _ in 0..5 {
            let server = self.server(server_id).await?;
            Compute::check_unlocked(ctx, &server)?;
            let now = self.clock.now();
            let start = Change::StartAction(ctx.action(server_id, "delete", now));
            match self.store.operation(server_id).await? {
                None => {
                    let op = self.new_operation(server_id, OperationParams::Delete, ctx);
                    let deleting = Change::UpdateServer(Server {
                        task_state: Some(TaskState::Deleting),
                        updated_at: now,
                        ..server
                    });
                    match self.submit(op, vec![start, deleting]).await {
                        Err(Error::OperationInFlight { .. }) => {}
                        Err(Error::Store(e)) if e.is_conflict() => {}
                        other => return other,
                    }
                }
                Some(op) if op.kind() == OperationKind::Delete || op.then_delete.is_some() => return Ok(()),
                Some(op) => match self.queue_delete(&op, ctx, vec![start]).await {
                    Ok(()) => {
                        info!(server.id = %server_id, "Delete of server {server_id} queued behind its {}", op.kind());
                        return Ok(());
                    }
                    Err(e) if e.is_conflict() => {}
                    Err(e) => return Err(e.into()),
                },
            }
        }
        Err(Error::OperationInFlight {
            server: server_id,
            kind: "deleting".to_owned(),
            action: "delete".to_owned(),
        })
    }
}

impl Compute {
    /// Records `count` new servers as building, with their build operations
    /// and instance actions, in one batch fenced by the quota `claim`, and
    /// starts them.
    async fn submit_builds(
        self: &Arc<Self>,
        ctx: &RequestContext,
        boot: &Boot<'_>,
        count: u32,
        claim: Change,
        mut group: Option<BootGroup>,
    ) -> Result<Vec<Server>> {
        let (servers, ops): (Vec<Server>, Vec<_>) = (1..=count)
            .map(|index| self.new_build(ctx, boot, index, count, group.as_mut()))
            .unzip();
        let ops = ops
            .into_iter()
            .map(|(op, changes, unsent)| {
                self.unsent_intents.keep(op.server_id, unsent);
                (op, changes)
            })
            .collect();
        if let Err(e) = self.submit_all(vec![claim], ops).await {
            for server in &servers {
                self.unsent_intents.take(server.id);
            }
            return Err(e);
        }
        for server in &servers {
            info!(server.id = %server.id, server.name = %server.name, "Accepted build of server {}", server.id);
        }
        Ok(servers)
    }

    /// A new server, building, with its build operation, the changes that
    /// record them (the server row placed on its first host, its instance
    /// action, its first attempt's intents, its joining of its group) and
    /// those intents.
    fn new_build(
        &self,
        ctx: &RequestContext,
        boot: &Boot<'_>,
        index: u32,
        count: u32,
        group: Option<&mut BootGroup>,
    ) -> (Server, (Operation, Vec<Change>, Vec<PortIntent>)) {
        let (request, now) = (boot.request, self.clock.now());
        let id = ServerId(uuid::Uuid::new_v4());
        // Nova's `_populate_instance_names`: one of several is named, and
        // hostnamed, with its 1-based index.
        let numbered = |text: String| if count > 1 { format!("{text}-{index}") } else { text };
        let mut attributes = request.attributes.clone();
        attributes.launch_index = index - 1;
        if attributes.hostname.is_none() {
            attributes.hostname =
                Some(sanitize_hostname(&request.name).map_or_else(|| format!("Server-{id}"), numbered));
        }
        let mut server = Server {
            id,
            name: numbered(request.name.clone()),
            project_id: ProjectId::from(ctx.project_id.as_str()),
            user_id: ctx.user_id.clone(),
            host: None,
            // Nova's: the zone asked for until a host is chosen, then the host's.
            availability_zone: (request.attributes.pinned_availability_zone.clone())
                .unwrap_or_else(|| self.config.availability_zone.clone()),
            vm_state: VmState::Building,
            task_state: Some(TaskState::Scheduling),
            fault: None,
            flavor_ref: request.flavor_ref.clone(),
            flavor: Some(request.flavor.clone()),
            image_ref: request.image_ref.clone(),
            metadata: request.metadata.clone(),
            access_ip_v4: request.access_ip_v4,
            access_ip_v6: request.access_ip_v6,
            requested_networks: boot.networks.clone(),
            key_name: request.key_name.clone(),
            security_groups: boot.security_groups.to_vec(),
            locked_by: None,
            attributes,
            tried_hosts: vec![],
            created_at: now,
            updated_at: now,
            launched_at: None,
            deleted_at: None,
            generation: 0,
        };
        let (host, joins) = match group {
            Some(group) => self.join_boot_group(group, &server, &boot.choice.excluded),
            None => (self.pick_host(&[], &boot.choice.excluded), Vec::new()),
        };
        if let Some(host) = &host {
            server.availability_zone = boot.choice.zone_of(host);
        }
        let unsent = self.plan_first_attempt(&mut server, host);
        let op = self.new_operation(server.id, OperationParams::Build, ctx);
        let mut changes = vec![
            Change::InsertServer(server.clone()),
            Change::StartAction(ctx.action(server.id, "create", now)),
        ];
        changes.extend(unsent.iter().cloned().map(Change::InsertIntent));
        changes.extend(joins);
        (server, (op, changes, unsent))
    }

    /// Nova's `validate_networks`: named networks must exist and be usable by the
    /// caller, requested ports must be usable, requested fixed IPs free, and
    /// "auto" must find at most one network. Returns the requests with "auto"
    /// resolved, so a build never has to guess.
    async fn validate_networks(
        &self,
        user: User<'_>,
        requests: &NetworkRequests,
        allocate: bool,
    ) -> Result<NetworkRequests> {
        let explicit = match requests {
            NetworkRequests::None => return Ok(NetworkRequests::None),
            NetworkRequests::Auto => {
                let network = match self.only_available_network(user).await {
                    Ok(network) => network,
                    // Nova from 2.37, asked for "auto": Neutron makes the project one.
                    Err(Error::NoNetworkAvailable) if allocate => self.auto_allocated_network(user.project).await?,
                    // Nova at 2.1: with no network to use, the server boots without one.
                    Err(Error::NoNetworkAvailable) => return Ok(NetworkRequests::None),
                    Err(e) => return Err(e),
                };
                return Ok(NetworkRequests::Explicit(vec![NetworkRequest::Network {
                    network_id: Some(network),
                    fixed_ip: None,
                    tag: None,
                }]));
            }
            NetworkRequests::Explicit(list) => list,
        };
        let named: Vec<NetworkId> = explicit
            .iter()
            .filter_map(|r| match r {
                NetworkRequest::Network { network_id, .. } => network_id.clone(),
                NetworkRequest::Port { .. } => None,
            })
            .collect();
        self.usable_networks(user, &named).await?;
        let mut ports = HashSet::new();
        let mut resolved = Vec::with_capacity(explicit.len());
        for request in explicit {
            match request {
                NetworkRequest::Port { port_id, .. } => {
                    if !ports.insert(port_id.clone()) {
                        return Err(Error::InvalidInput(format!(
                            "Port {port_id} is requested more than once."
                        )));
                    }
                    self.usable_user_port(user, None, port_id).await?;
                    if self.store.vif_by_port(port_id).await?.is_some() {
                        return Err(Error::PortInUse(port_id.clone()));
                    }
                    resolved.push(request.clone());
                }
                NetworkRequest::Network {
                    network_id: None,
                    fixed_ip,
                    tag,
                } => {
                    resolved.push(NetworkRequest::Network {
                        network_id: Some(self.only_available_network(user).await?),
                        fixed_ip: *fixed_ip,
                        tag: tag.clone(),
                    });
                }
                NetworkRequest::Network { .. } => resolved.push(request.clone()),
            }
        }
        for request in &resolved {
            if let NetworkRequest::Network {
                network_id: Some(network_id),
                fixed_ip: Some(ip),
                ..
            } = request
            {
                self.fixed_ip_free(network_id, *ip).await?;
            }
        }
        Ok(NetworkRequests::Explicit(resolved))
    }

    /// Checks that `user` may put ports on these networks (docs/ARCHITECTURE.md,
    /// "Network visibility"): one that does not exist or that Neutron would not
    /// show the user is Nova's `NetworkNotFound`; then an external one a
    /// non-admin may not use is Nova's `ExternalNetworkAttachForbidden`. Details
    /// come from the catalog, so a known network costs no Neutron call.
    pub(crate) async fn usable_networks(&self, user: User<'_>, ids: &[NetworkId]) -> Result<()> {
        let topology = self.catalog.topology(self.neutron.as_ref(), ids).await?;
        let access = |id: &NetworkId| topology.networks.get(id).map(|n| network_access(n, user));
        if let Some(unseen) = ids
            .iter()
            .find(|id| matches!(access(id), None | Some(NetworkAccess::Unseen)))
        {
            return Err(Error::NetworkNotFound(unseen.clone()));
        }
        if let Some(external) = ids
            .iter()
            .find(|id| access(id) == Some(NetworkAccess::ExternalForbidden))
        {
            return Err(Error::ExternalNetworkAttachForbidden(external.clone()));
        }
        Ok(())
    }

    /// Nova's check that a requested fixed IP is free on its network. Whoever
    /// holds it, the refusal names the address only (it may be another project's
    /// port, on another project's subnet of a shared network).
    pub(crate) async fn fixed_ip_free(&self, network_id: &NetworkId, ip: IpAddr) -> Result<()> {
        let holders = self
            .neutron
            .list_ports(&PortFilter {
                network_ids: vec![network_id.clone()],
                fixed_ip: Some(ip),
                ..PortFilter::default()
            })
            .await?;
        if holders.is_empty() {
            Ok(())
        } else {
            Err(Error::FixedIpAlreadyInUse(ip))
        }
    }

    /// Neutron's auto-allocated topology of the project (made on its first
    /// call, the same after): Nova's `UnableToAutoAllocateNetwork` (400) when
    /// Neutron refuses (no `auto_allocate` plugin, no default external network).
    async fn auto_allocated_network(&self, project: &ProjectId) -> Result<NetworkId> {
        match self.neutron.auto_allocated_topology(project).await {
            Ok(network) => Ok(network),
            Err(e) if e.status().is_some() => {
                warn!(project = %project, error = %e, "Neutron did not auto-allocate a network for project {project}: {e}");
                Err(Error::UnableToAutoAllocateNetwork(project.clone()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The only network `user`'s project may boot on without naming one (its
    /// own and shared ones, never another project's).
    pub(crate) async fn only_available_network(&self, user: User<'_>) -> Result<NetworkId> {
        let available: Vec<_> = self
            .catalog
            .available_networks(self.neutron.as_ref(), user.project)
            .await?
            .into_iter()
            .filter(|n| network_access(n, user) == NetworkAccess::Usable)
            .collect();
        match available.as_slice() {
            [] => Err(Error::NoNetworkAvailable),
            [only] => Ok(only.id.clone()),
            _ => Err(Error::NetworkAmbiguous),
        }
    }

    /// Builds a server: pick a host, allocate, spawn; on a failure that another
    /// host might not have, release this attempt's ports and reschedule. The
    /// first attempt may come with its intents recorded and `unsent`. Success
    /// is one commit: the ports, the server ACTIVE, the action's event and the
    /// operation finished.
    async fn run_build(self: &Arc<Self>, op: &Operation, unsent: Vec<PortIntent>) -> Result<Next> {
        let (server_id, request_id) = (op.server_id, op.request_id.as_str());
        let mut unsent = unsent;
        loop {
            let Some(mut server) = self.store.server(server_id).await? else {
                return Ok(Next::Done);
            };
            if server.vm_state != VmState::Building {
                return Ok(Next::Done);
            }
            let host = match (&server.host, server.task_state) {
                // The first attempt, placed when accepted, or one interrupted by
                // a restart, on a host of ours.
                (Some(host), Some(TaskState::Networking | TaskState::Spawning))
                    if resumes_in_place(Some(host), &self.config.hosts) =>
                {
                    host.clone()
                }
                // An attempt on the host of a process that died: given up, rescheduled.
                (Some(host), Some(TaskState::Networking | TaskState::Spawning)) => {
                    let host = host.clone();
                    warn!(server.id = %server_id, host = %host, "Build of server {server_id} on {host} was orphaned; rescheduling");
                    let server = self.release_all(server_id).await?;
                    self.save_server(Server {
                        host: None,
                        task_state: Some(TaskState::Scheduling),
                        ..server
                    })
                    .await?;
                    continue;
                }
                _ => match self.pick_for_build(&server).await? {
                    Pick::Host(zone, host, swap) if (server.tried_hosts.len() as u32) < self.config.max_attempts => {
                        server.host = Some(host.clone());
                        server.availability_zone = zone;
                        server.tried_hosts.push(host.clone());
                        server.task_state = Some(TaskState::Networking);
                        match self.save_server_with(server, swap).await {
                            Ok(saved) => server = saved,
                            // Its group placed another member meanwhile: decide again.
                            Err(Error::Store(e)) if e.is_conflict() => continue,
                            Err(e) => return Err(e),
                        }
                        host
                    }
                    Pick::Refused => {
                        let cause = Error::NoValidHost(NOT_ENOUGH_HOSTS.to_owned());
                        self.fail_build(server, request_id, cause).await?;
                        return Ok(Next::Done);
                    }
                    // Every host disabled or forced down: Nova's scheduler finds none.
                    Pick::Exhausted if server.tried_hosts.is_empty() => {
                        let cause = Error::NoValidHost(NOT_ENOUGH_HOSTS.to_owned());
                        self.fail_build(server, request_id, cause).await?;
                        return Ok(Next::Done);
                    }
                    _ => {
                        let reason = format!(
                            "Exceeded maximum number of retries. Exhausted all hosts available for retrying build failures for instance {server_id}."
                        );
                        self.fail_build(server, request_id, Error::NoValidHost(reason)).await?;
                        return Ok(Next::Done);
                    }
                },
            };
            let attempt = server.tried_hosts.len() as u32;
            let permits = self.build_permits.get(&host).cloned();
            let _permit = match permits {
                Some(p) => p.acquire_owned().await.ok(),
                None => None,
            };
            let unsent = std::mem::take(&mut unsent);
            match self.build_on_host(&server, &host, attempt, unsent).await {
                Ok((server, created)) => {
                    let finished = self.record_active(op, server, &host, &created).await?;
                    info!(server.id = %server_id, host = %host, attempt, "Server {server_id} is ACTIVE on {host}");
                    return Ok(finished);
                }
                // Retried from the records, as a passing failure.
                Err(e @ (Error::Crashed(_) | Error::Store(_) | Error::NeutronNotReady(_))) => return Err(e),
                // The delete queued on this build releases everything next.
                Err(Error::DeleteRequested(_)) => return Ok(Next::Done),
                Err(e) => {
                    let now = self.clock.now();
                    self.add_event(
                        server_id,
                        request_id,
                        ActionEvent::finished(BUILD_EVENT, now, false, Some(e.to_string()), Some(host.to_string())),
                    )
                    .await?;
                    let server = self.release_all(server_id).await?;
                    let reschedulable = e.is_reschedulable();
                    if reschedulable && attempt < self.config.max_attempts {
                        warn!(server.id = %server_id, host = %host, attempt, error = %e, "Rescheduling server {server_id} away from {host}: {e}");
                        let server = Server {
                            host: None,
                            task_state: Some(TaskState::Scheduling),
                            ..server
                        };
                        self.save_server(server).await?;
                        continue;
                    }
                    let cause = if reschedulable {
                        Error::NoValidHost(format!(
                            "Exceeded max scheduling attempts {attempt} for instance {server_id}. Last exception: {e}"
                        ))
                    } else {
                        e
                    };
                    self.fail_build(server, request_id, cause).await?;
                    return Ok(Next::Done);
                }
            }
        }
    }

    /// The build's last commit: its new ports, the server ACTIVE, the action's
    /// event and, unless a delete was queued on it meanwhile, the operation
    /// finished.
    async fn record_active(
        &self,
        op: &Operation,
        server: Server,
        host: &HostName,
        created: &[CreatedPort],
    ) -> Result<Next> {
        let now = self.clock.now();
        let server = Server {
            vm_state: VmState::Active,
            task_state: None,
            launched_at: Some(now),
            ..server
        };
        let event = Change::AddActionEvent {
            server_id: op.server_id,
            request_id: op.request_id.clone(),
            event: ActionEvent::finished(BUILD_EVENT, now, true, None, Some(host.to_string())),
        };
        if !self.delete_requested(op.server_id).await? {
            let finish = self.finish_change(op);
            let changes = vec![event.clone(), finish];
            match self
                .record_created(op.server_id, Some(server.clone()), created, changes)
                .await
            {
                Ok(_) => return Ok(Next::Finished),
                // The delete was queued after the look: the runner hands over to it.
                Err(Error::Store(e)) if e.is_conflict() && self.delete_requested(op.server_id).await? => {}
                Err(e) => return Err(e),
            }
        }
        self.record_created(op.server_id, Some(server), created, vec![event])
            .await?;
        Ok(Next::Done)
    }

    /// Fills every empty slot, then spawns; returns the server as spawned and
    /// the ports it created, for the caller to record (on a failure they are
    /// recorded here, so the release that follows finds them).
    async fn build_on_host(
        &self,
        server: &Server,
        host: &HostName,
        attempt: u32,
        unsent: Vec<PortIntent>,
    ) -> Result<(Server, Vec<CreatedPort>)> {
        let mut created = Vec::new();
        let mut unsent = unsent;
        match self
            .fill_and_spawn(server, host, attempt, &mut unsent, &mut created)
            .await
        {
            Ok(server) => Ok((server, created)),
            Err(e @ Error::Crashed(_)) => Err(e),
            Err(e) => {
                // Never sent, so no port carries them: abandoned without a look.
                let now = self.clock.now();
                let abandoned: Vec<Change> = unsent
                    .into_iter()
                    .map(|intent| Change::UpdateIntent {
                        intent: PortIntent {
                            state: IntentState::Abandoned,
                            reason: Some(format!("not sent: {e}")),
                            updated_at: now,
                            ..intent
                        },
                        expected: IntentState::Pending,
                    })
                    .collect();
                if !created.is_empty() || !abandoned.is_empty() {
                    self.record_created(server.id, None, &created, abandoned).await?;
                }
                Err(e)
            }
        }
    }

    async fn fill_and_spawn(
        &self,
        server: &Server,
        host: &HostName,
        attempt: u32,
        unsent: &mut Vec<PortIntent>,
        created: &mut Vec<CreatedPort>,
    ) -> Result<Server> {
        // From before the first port exists, until the spawn (or the attempt's end).
        let _plug_events = (!self.config.vif_plugging_timeout.is_zero()).then(|| self.plug_events.expect(server.id));
        let vifs = self.store.vifs(server.id).await?;
        for (position, request) in server.requested_networks.slots().into_iter().enumerate() {
            if self.delete_requested(server.id).await? {
                return Err(Error::DeleteRequested(server.id));
            }
            let position = position as i64;
            // A user's port recorded but not bound and described (a run that
            // stopped mid-attach) is attached again: the bind and its details.
            if vifs
                .iter()
                .any(|v| v.position == position && v.is_attached() && !v.is_mid_attach())
            {
                continue;
            }
            match request {
                NetworkRequest::Network {
                    network_id,
                    fixed_ip,
                    tag,
                } => {
                    let network_id = network_id.ok_or(Error::NoNetworkAvailable)?;
                    let slot = NewPortSlot {
                        attempt,
                        position,
                        network_id,
                        fixed_ip,
                        tag,
                        security_groups: server.security_groups.clone(),
                    };
                    let intent = unsent
                        .iter()
                        .position(|i| i.position == position && i.attempt == attempt && i.host == *host)
                        .map(|at| unsent.remove(at));
                    created.push(self.create_new_port(server, host, &slot, intent).await?);
                }
                NetworkRequest::Port { port_id, tag } => {
                    self.attach_user_port(server, host, position, &port_id, tag).await?;
                }
            }
        }
        // Allocation never writes the server row; a user's edit meanwhile is kept.
        // Ports must be in the cache before their plug events can mark them.
        let spawning = if self.config.vif_plugging_timeout.is_zero() {
            server.clone()
        } else {
            let spawning = Server {
                task_state: Some(TaskState::Spawning),
                ..server.clone()
            };
            let (_, stored) = self.record_created(server.id, Some(spawning), created, vec![]).await?;
            created.clear();
            stored.expect("the server row was written")
        };
        self.wait_for_plugging(&spawning).await?;
        self.crash_point(crate::CrashPoint::BeforeSpawn)?;
        if self.delete_requested(server.id).await? {
            return Err(Error::DeleteRequested(server.id));
        }
        self.virt
            .spawn(host, &spawning)
            .await
            .map_err(|reason| Error::SpawnFailed {
                server: server.id,
                host: host.to_string(),
                reason,
            })?;
        Ok(spawning)
    }

    async fn fail_build(&self, server: Server, request_id: &str, cause: Error) -> Result<()> {
        let now = self.clock.now();
        let message = cause.to_string();
        // Never placed: like Nova's NoValidHost, the server has no host.
        let host = if matches!(cause, Error::NoValidHost(_)) {
            None
        } else {
            server.host.clone()
        };
        let server = Server { host, ..server }.in_error(message.clone(), now);
        let id = server.id;
        self.save_server(server).await?;
        self.add_event(
            id,
            request_id,
            ActionEvent::finished(
                "conductor_schedule_and_build_instances",
                now,
                false,
                Some(message.clone()),
                None,
            ),
        )
        .await?;
        error!(server.id = %id, error = %message, "Server {id} is in ERROR: {message}");
        Ok(())
    }

    /// Releases every port of the server and empties its cache. Ports whose release
    /// failed stay recorded as `releasing`.
    async fn release_all(&self, server_id: ServerId) -> Result<Server> {
        for vif in self.store.vifs(server_id).await? {
            match vif.state {
                VifState::Attached | VifState::Releasing => {
                    self.release_vif(&vif).await?;
                }
                // Neutron no longer gives this port to the server: not ours to touch.
                VifState::Lost => {
                    self.commit(vec![Change::DeleteVif {
                        server_id,
                        port_id: vif.port_id.clone(),
                    }])
                    .await?;
                }
            }
        }
        let remaining = self.store.vifs(server_id).await?;
        self.commit_with_cache("release", server_id, &remaining, &HashMap::new(), vec![])
            .await?;
        self.server(server_id).await
    }

    /// The delete itself: releases its ports (created ones deleted, user ones
    /// unbound), resolves its pending intents, empties its cache, destroys the
    /// guest. Every step is idempotent, so a resumed delete just runs again.
    async fn run_delete(&self, op: &Operation) -> Result<()> {
        let server_id = op.server_id;
        let Some(server) = self.store.server(server_id).await?.filter(|s| !s.is_deleted()) else {
            return Ok(());
        };
        let server = if server.task_state == Some(TaskState::Deleting) {
            server
        } else {
            self.save_server(Server {
                task_state: Some(TaskState::Deleting),
                ..server
            })
            .await?
        };
        // Empties the cache too: what is left is `releasing`, never attached.
        let server = Server {
            generation: self.release_all(server_id).await?.generation,
            ..server
        };
        self.close_pending_intents(server_id).await?;
        if let Some(host) = &server.host {
            self.virt.destroy(host, &server).await;
        }
        let leftover = self.store.vifs(server_id).await?.len();
        let now = self.clock.now();
        self.save_server(Server {
            vm_state: VmState::Deleted,
            task_state: None,
            deleted_at: Some(now),
            ..server
        })
        .await?;
        self.add_event(
            server_id,
            &op.request_id,
            ActionEvent::finished("compute_terminate_instance", now, true, None, None),
        )
        .await?;
        info!(server.id = %server_id, ports_left_for_gc = leftover, "Deleted server {server_id}");
        Ok(())
    }

    /// Resolves a gone server's pending intents: a port that carries one is ours and
    /// unwanted, so it is deleted; the intent is abandoned either way.
    async fn close_pending_intents(&self, server_id: ServerId) -> Result<()> {
        for intent in self.store.intents(server_id).await? {
            if intent.state != IntentState::Pending {
                continue;
            }
            let marker = self.marker(intent.id);
            let port = match self.resolve_by_marker(&marker).await {
                Ok(netcache_domain::allocation::Resolution::Adopt(port)) => Some(port),
                Ok(netcache_domain::allocation::Resolution::Abandon) => None,
                Err(e) => {
                    warn!(intent.id = %intent.id, error = %e, "Intent {} left pending: lookup failed", intent.id);
                    continue;
                }
            };
            if let Some(port) = &port
                && let Err(e) = self.neutron.delete_port(&port.id, None).await
            {
                warn!(port.id = %port.id, error = %e, "Could not delete port {} of a closed intent", port.id);
            }
            self.finish_intent(
                &intent,
                IntentState::Abandoned,
                port.map(|p| p.id),
                Some("server deleted".to_owned()),
            )
            .await?;
        }
        Ok(())
    }

    /// Writes a server row with optimistic concurrency; returns it as stored.
    /// A user's edit that moved the row on meanwhile (name, access addresses,
    /// metadata: see [`Server::keeping_user_edits_of`]) is kept and the write
    /// retried; any other conflict (a lost fence) is returned.
    pub(crate) async fn save_server(&self, server: Server) -> Result<Server> {
        self.save_server_with(server, Vec::new()).await
    }

    /// [`Compute::save_server`] with `changes` (an instance action's event) in
    /// the same transaction.
    pub(crate) async fn save_server_with(&self, server: Server, changes: Vec<Change>) -> Result<Server> {
        let mut server = Server {
            updated_at: self.clock.now(),
            ..server
        };
        let mut attempt = 0;
        loop {
            let mut batch = vec![Change::UpdateServer(server.clone())];
            batch.extend(changes.iter().cloned());
            match self.commit(batch).await {
                Ok(()) => {
                    return Ok(Server {
                        generation: server.generation + 1,
                        ..server
                    });
                }
                Err(Error::Store(e)) if e.is_conflict() && attempt < 5 => {
                    attempt += 1;
                    match self.store.server(server.id).await? {
                        Some(current) if current.generation != server.generation => {
                            server = server.keeping_user_edits_of(&current);
                        }
                        _ => return Err(Error::Store(e)),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) async fn add_event(&self, server_id: ServerId, request_id: &str, event: ActionEvent) -> Result<()> {
        self.commit(vec![Change::AddActionEvent {
            server_id,
            request_id: request_id.to_owned(),
            event,
        }])
        .await?;
        Ok(())
    }

    pub async fn vifs(&self, server_id: ServerId) -> Result<Vec<VifRecord>> {
        Ok(self.store.vifs(server_id).await?)
    }
}
