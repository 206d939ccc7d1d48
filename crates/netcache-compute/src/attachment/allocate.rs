//! The allocation protocol (invariants 2–4 of docs/ARCHITECTURE.md):
//! 1. record a port intent (committed) before the create call;
//! 2. create the port with the ownership marker in the same request;
//! 3. success → intent `created`, VIF record and cache in one transaction;
//! 4. ambiguous outcome → look the marker up: adopt exactly that port, or abandon
//!    the intent; never re-POST it;
//! 5. definite failure → intent `failed`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use netcache_domain::allocation::{Resolution, resolve_ambiguous_create};
use netcache_domain::cache::Observed;
use netcache_domain::change::Change;
use netcache_domain::intent::{IntentState, PortIntent};
use netcache_domain::marker::{MarkerMode, OwnershipMarker};
use netcache_domain::neutron::Port;
use netcache_domain::server::Server;
use netcache_domain::vif::{PortDetails, VifOrigin, VifRecord, VifState};
use netcache_domain::visibility::{PortAccess, User, port_access};
use netcache_domain::{HostName, IntentId, NetworkId, PortId, ServerId};
use netcache_neutron::{FixedIpRequest, PortCreate, PortFilter, PortUpdate};
use tracing::{info, warn};

use crate::config::CrashPoint;
use crate::{Compute, Error, Interface, Result};

/// A VIF slot to fill with a new port.
#[derive(Clone, Debug)]
pub(crate) struct NewPortSlot {
    pub attempt: u32,
    pub position: i64,
    pub network_id: NetworkId,
    pub fixed_ip: Option<IpAddr>,
    pub tag: Option<String>,
    /// The boot's groups on a boot; none on an attach, so Neutron gives the
    /// project's default group, as Nova does.
    pub security_groups: Vec<String>,
}

/// A port created (or adopted) for an intent, not recorded yet.
#[derive(Clone, Debug)]
pub(crate) struct CreatedPort {
    pub intent: PortIntent,
    pub port: Port,
    pub adopted: bool,
}

impl Compute {
    /// Fills a slot with a new port and records it.
    pub(crate) async fn allocate_new_port(
        &self,
        server: &Server,
        host: &HostName,
        slot: &NewPortSlot,
    ) -> Result<Interface> {
        let created = self.create_new_port(server, host, slot, None).await?;
        let (mut vifs, _) = self.record_created(server.id, None, &[created], vec![]).await?;
        Ok(Interface {
            vif: vifs.pop().expect("one port recorded"),
        })
    }

    /// Creates a port for a slot, trying up to `create_attempts_per_host`
    /// intents: first `fresh`, if given (recorded, never sent), then new ones.
    /// The port is not recorded as a VIF yet: the caller commits it.
    pub(crate) async fn create_new_port(
        &self,
        server: &Server,
        host: &HostName,
        slot: &NewPortSlot,
        mut fresh: Option<PortIntent>,
    ) -> Result<CreatedPort> {
        let mut last = None;
        for _ in 0..self.config.create_attempts_per_host.max(1) {
            let intent = match fresh.take() {
                Some(intent) => intent,
                None => {
                    let intent = self.new_intent(server.id, host, slot);
                    self.commit(vec![Change::InsertIntent(intent.clone())]).await?;
                    intent
                }
            };
            match self.create_with_intent(server, host, slot, intent).await {
                Err(e @ Error::CreateAbandoned { .. }) => last = Some(e),
                other => return other,
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// Step 1's record: a pending intent for a slot, on `host`.
    pub(crate) fn new_intent(&self, server_id: ServerId, host: &HostName, slot: &NewPortSlot) -> PortIntent {
        let now = self.clock.now();
        PortIntent {
            id: IntentId(uuid::Uuid::new_v4()),
            server_id,
            attempt: slot.attempt,
            position: slot.position,
            host: host.clone(),
            network_id: slot.network_id.clone(),
            fixed_ip: slot.fixed_ip,
            tag: slot.tag.clone(),
            state: IntentState::Pending,
            port_id: None,
            adopted: false,
            reason: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Steps 2, 4 and 5 for a recorded intent.
    async fn create_with_intent(
        &self,
        server: &Server,
        host: &HostName,
        slot: &NewPortSlot,
        intent: PortIntent,
    ) -> Result<CreatedPort> {
        self.crash_point(CrashPoint::AfterIntentRecorded)?;
        let marker = self.marker(intent.id);
        let request = self.port_create(server, host, slot, &marker, self.marker_mode().await?);
        let result = self.neutron.create_port(&request).await;
        self.crash_point(CrashPoint::AfterCreateSent)?;

        match result {
            Ok(port) => Ok(CreatedPort {
                intent,
                port,
                adopted: false,
            }),
            Err(e) if e.is_ambiguous() || matches!(e, netcache_neutron::Error::Protocol { .. }) => {
                warn!(
                    server.id = %server.id, intent.id = %intent.id, error = %e,
                    "Create-port outcome unknown for server {}; looking intent {} up", server.id, intent.id
                );
                match self.resolve_by_marker(&marker).await? {
                    Resolution::Adopt(port) => Ok(CreatedPort {
                        intent,
                        port,
                        adopted: true,
                    }),
                    Resolution::Abandon => {
                        self.finish_intent(&intent, IntentState::Abandoned, None, Some(e.to_string()))
                            .await?;
                        Err(Error::CreateAbandoned {
                            network: slot.network_id.clone(),
                            intent: intent.id,
                        })
                    }
                }
            }
            Err(e) => {
                self.finish_intent(&intent, IntentState::Failed, None, Some(e.to_string()))
                    .await?;
                Err(Error::from_neutron_refusal(e, slot.fixed_ip))
            }
        }
    }

    pub(crate) fn marker(&self, intent: IntentId) -> OwnershipMarker {
        OwnershipMarker {
            deployment: self.deployment.clone(),
            intent,
        }
    }

    fn port_create(
        &self,
        server: &Server,
        host: &HostName,
        slot: &NewPortSlot,
        marker: &OwnershipMarker,
        mode: MarkerMode,
    ) -> PortCreate {
        let (name, tags) = match mode {
            MarkerMode::Tags => (None, marker.tags()),
            MarkerMode::Name => (Some(marker.port_name()), vec![]),
        };
        PortCreate {
            network_id: slot.network_id.clone(),
            project_id: Some(server.project_id.clone()),
            fixed_ips: slot
                .fixed_ip
                .map(|ip| FixedIpRequest {
                    subnet_id: None,
                    ip_address: Some(ip),
                })
                .into_iter()
                .collect(),
            device_id: server.id.to_string(),
            device_owner: server.device_owner(),
            binding_host_id: Some(host.to_string()),
            name,
            tags,
            security_groups: (!slot.security_groups.is_empty()).then(|| slot.security_groups.clone()),
        }
    }

    /// Looks an intent's marker up in Neutron and decides.
    pub(crate) async fn resolve_by_marker(&self, marker: &OwnershipMarker) -> Result<Resolution> {
        let filter = match self.marker_mode().await? {
            MarkerMode::Tags => PortFilter {
                tags: vec![marker.intent_tag()],
                ..PortFilter::default()
            },
            MarkerMode::Name => PortFilter {
                name: Some(marker.port_name()),
                ..PortFilter::default()
            },
        };
        let found = self.neutron.list_ports(&filter).await?;
        Ok(resolve_ambiguous_create(marker, &found))
    }

    /// Step 3: the ports exist and are ours; records them as the server's VIFs
    /// (intents `created`, VIF records, cache) in one commit, with `server`'s
    /// new row if given (kept through a user's concurrent edit) and `changes`.
    /// Returns the new VIF records, and the server row as stored.
    pub(crate) async fn record_created(
        &self,
        server_id: ServerId,
        server: Option<Server>,
        created: &[CreatedPort],
        changes: Vec<Change>,
    ) -> Result<(Vec<VifRecord>, Option<Server>)> {
        let (new_vifs, observed, records) = self.created_records(server_id, created).await;
        let mut server = server.map(|s| Server {
            updated_at: self.clock.now(),
            ..s
        });
        let mut attempt = 0;
        loop {
            let stored = self.store.cache(server_id).await?;
            let mut vifs = self.store.vifs(server_id).await?;
            vifs.extend(new_vifs.iter().cloned());
            let mut batch = records.clone();
            batch.extend(server.iter().cloned().map(Change::UpdateServer));
            batch.extend(changes.iter().cloned());
            match self
                .commit_with_cache_at("allocate", server_id, &stored, &vifs, &observed, batch)
                .await
            {
                Ok(_) => break,
                Err(Error::Store(e)) if e.is_conflict() && attempt < 5 => {
                    attempt += 1;
                    // A user's edit of the row meanwhile is kept; another cache
                    // writer's change is read again.
                    if let Some(ours) = server.take() {
                        server = Some(match self.store.server(server_id).await? {
                            Some(current) if current.generation != ours.generation => {
                                ours.keeping_user_edits_of(&current)
                            }
                            _ => ours,
                        });
                    }
                }
                Err(e) => return Err(e),
            }
        }
        for c in created {
            info!(
                server.id = %server_id, port.id = %c.port.id, intent.id = %c.intent.id, adopted = c.adopted,
                "{} port {} for server {server_id}", if c.adopted { "Adopted" } else { "Created" }, c.port.id
            );
        }
        let stored = server.map(|s| Server {
            generation: s.generation + 1,
            ..s
        });
        Ok((new_vifs, stored))
    }

    /// The records of created ports: VIFs, what Neutron showed of them, and the
    /// changes (intent `created`, VIF inserted). In name-marker mode the ports
    /// are tagged first (tags could not ride in the POST; the name already
    /// carries the marker, so a failure is only logged).
    async fn created_records(
        &self,
        server_id: ServerId,
        created: &[CreatedPort],
    ) -> (Vec<VifRecord>, HashMap<PortId, Observed>, Vec<Change>) {
        let mut vifs = Vec::with_capacity(created.len());
        let mut observed = HashMap::with_capacity(created.len());
        let mut changes = Vec::with_capacity(2 * created.len());
        for CreatedPort { intent, port, adopted } in created {
            // Known: the port was created, or found, by its marker.
            if self.marker_mode().await.is_ok_and(|mode| mode == MarkerMode::Name)
                && let Err(e) = self
                    .neutron
                    .replace_port_tags(&port.id, &self.marker(intent.id).tags())
                    .await
            {
                warn!(port.id = %port.id, error = %e, "Could not tag port {}", port.id);
            }
            let vif = VifRecord {
                port_id: port.id.clone(),
                server_id,
                position: intent.position,
                origin: VifOrigin::Created,
                state: VifState::Attached,
                intent_id: Some(intent.id),
                network_id: port.network_id.clone(),
                requested_fixed_ip: intent.fixed_ip,
                tag: intent.tag.clone(),
                details: Some(PortDetails::of(port)),
            };
            changes.push(Change::UpdateIntent {
                intent: PortIntent {
                    state: IntentState::Created,
                    port_id: Some(port.id.clone()),
                    adopted: *adopted,
                    updated_at: self.clock.now(),
                    ..intent.clone()
                },
                expected: IntentState::Pending,
            });
            changes.push(Change::InsertVif(vif.clone()));
            observed.insert(
                port.id.clone(),
                Observed::Present {
                    port: Arc::new(port.clone()),
                    floating_ips: vec![],
                },
            );
            vifs.push(vif);
        }
        (vifs, observed, changes)
    }

    pub(crate) async fn finish_intent(
        &self,
        intent: &PortIntent,
        state: IntentState,
        port_id: Option<PortId>,
        reason: Option<String>,
    ) -> Result<()> {
        let finished = PortIntent {
            state,
            port_id,
            reason,
            updated_at: self.clock.now(),
            ..intent.clone()
        };
        self.commit(vec![Change::UpdateIntent {
            intent: finished,
            expected: IntentState::Pending,
        }])
        .await?;
        info!(server.id = %intent.server_id, intent.id = %intent.id, state = %state, "Intent {} is {state}", intent.id);
        Ok(())
    }

    /// Attaches a port the user created: record first, then bind with
    /// `If-Match` so a port grabbed in between is refused, not stolen.
    pub(crate) async fn attach_user_port(
        &self,
        server: &Server,
        host: &HostName,
        position: i64,
        port_id: &PortId,
        tag: Option<String>,
    ) -> Result<Interface> {
        // The caller's view was checked when the request was accepted; the
        // operation acts for netcache (admin), with the server's project.
        let user = User {
            project: &server.project_id,
            admin: true,
        };
        let port = self.usable_user_port(user, Some(server.id), port_id).await?;
        let vif = VifRecord {
            port_id: port.id.clone(),
            server_id: server.id,
            position,
            origin: VifOrigin::Preexisting,
            state: VifState::Attached,
            intent_id: None,
            network_id: port.network_id.clone(),
            requested_fixed_ip: None,
            tag,
            // Set once the bind succeeded: a record without details is mid-attach.
            details: None,
        };
        let existing = self.store.vif_by_port(port_id).await?;
        match existing {
            Some(v) if v.server_id == server.id => {}
            Some(_) => return Err(Error::PortInUse(port_id.clone())),
            None => self.commit(vec![Change::InsertVif(vif.clone())]).await?,
        }
        let bind = PortUpdate::bind(&server.id.to_string(), &server.device_owner(), host.as_str());
        let if_match = self.revision_guard(port.revision_number).await?;
        let bound = match self.neutron.update_port(port_id, &bind, if_match).await {
            Ok(bound) => bound,
            Err(e) if !e.is_ambiguous() => {
                self.commit(vec![Change::DeleteVif {
                    server_id: server.id,
                    port_id: port_id.clone(),
                }])
                .await?;
                return Err(match e.status() {
                    Some(412 | 409) => Error::PortInUse(port_id.clone()),
                    _ => Error::from_neutron_refusal(e, None),
                });
            }
            // Resolved by lookup: bound to this server, it applied; otherwise the
            // operation retries the bind (a late commit of this one then fails its
            // revision guard, moved on by the retry or by the port's release).
            Err(e) => match self.neutron.show_port(port_id).await {
                Ok(port) if port.carries_device_id(&server.id.to_string()) => port,
                _ => return Err(e.into()),
            },
        };
        self.crash_point(CrashPoint::AfterUserPortBound)?;
        let vif = VifRecord {
            details: Some(PortDetails::of(&bound)),
            ..vif
        };
        let vifs = with_vif_replaced(self.store.vifs(server.id).await?, &vif);
        let observed = HashMap::from([(bound.id.clone(), self.observed_present(port_id, bound).await?)]);
        self.commit_with_cache(
            "allocate",
            server.id,
            &vifs,
            &observed,
            vec![Change::UpdateVif(vif.clone())],
        )
        .await?;
        info!(server.id = %server.id, port.id = %port_id, "Attached user port {port_id} to server {}", server.id);
        Ok(Interface { vif })
    }

    /// Nova's rules for a requested port: it exists and the user sees it (a port
    /// of another project is answered as one that does not exist, unless the user
    /// is an admin: then it is not usable), a non-admin may use its network, and
    /// no device holds it (or `holder`, the server asking, already does).
    pub(crate) async fn usable_user_port(
        &self,
        user: User<'_>,
        holder: Option<ServerId>,
        port_id: &PortId,
    ) -> Result<Port> {
        let port = self.neutron.show_port(port_id).await.map_err(|e| {
            if e.is_not_found() {
                Error::PortNotFound(port_id.clone())
            } else {
                e.into()
            }
        })?;
        match port_access(&port, user) {
            PortAccess::Usable => {}
            PortAccess::Unseen => return Err(Error::PortNotFound(port_id.clone())),
            PortAccess::OtherProject => {
                return Err(Error::PortNotUsable {
                    port: port_id.clone(),
                    reason: "it belongs to another project".to_owned(),
                });
            }
        }
        if !user.admin {
            self.usable_networks(user, std::slice::from_ref(&port.network_id))
                .await?;
        }
        let held_by_asker = holder.is_some_and(|id| port.device_id == id.to_string());
        if !port.device_id.is_empty() && !held_by_asker {
            return Err(Error::PortInUse(port_id.clone()));
        }
        Ok(port)
    }

    pub(crate) async fn floating_ips_of(&self, port_id: &PortId) -> Result<Vec<netcache_domain::neutron::FloatingIp>> {
        Ok(self
            .neutron
            .list_floating_ips(&netcache_neutron::FloatingIpFilter {
                port_ids: vec![port_id.clone()],
                ..netcache_neutron::FloatingIpFilter::default()
            })
            .await?)
    }

    /// `port`, just read from Neutron, as the cache observes it: present, with
    /// the floating IPs on `port_id` (its id).
    pub(crate) async fn observed_present(&self, port_id: &PortId, port: Port) -> Result<Observed> {
        let floating_ips = self.floating_ips_of(port_id).await?;
        Ok(Observed::Present {
            port: Arc::new(port),
            floating_ips,
        })
    }

    /// Releases a VIF's port: deletes a port netcache created, unbinds a user's.
    /// The record is marked `releasing` first and removed only once Neutron
    /// agreed, so a failed release is never forgotten. Returns whether it is done.
    /// With the test hook `compute.sabotage = "skip-release"`, Neutron is not asked
    /// and the record is removed anyway: the port leaks.
    pub(crate) async fn release_vif(&self, vif: &VifRecord) -> Result<bool> {
        if vif.state != VifState::Releasing {
            // Out of the cache in the same commit: a port being released is never shown.
            let releasing = VifRecord {
                state: VifState::Releasing,
                ..vif.clone()
            };
            let vifs_after = with_vif_replaced(self.store.vifs(vif.server_id).await?, &releasing);
            self.commit_with_cache(
                "release",
                vif.server_id,
                &vifs_after,
                &HashMap::new(),
                vec![Change::UpdateVif(releasing)],
            )
            .await?;
        }
        self.crash_point(CrashPoint::AfterReleaseRecorded)?;
        let result = if self.sabotages_release(vif) {
            Ok(())
        } else {
            match vif.origin {
                VifOrigin::Created => self.neutron.delete_port(&vif.port_id, None).await,
                VifOrigin::Preexisting => self.unbind_if_ours(vif).await,
            }
        };
        match result {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                warn!(
                    server.id = %vif.server_id, port.id = %vif.port_id, error = %e,
                    "Could not release port {}; kept for retry", vif.port_id
                );
                return Ok(false);
            }
        }
        self.crash_point(CrashPoint::AfterReleaseSent)?;
        self.commit(vec![Change::DeleteVif {
            server_id: vif.server_id,
            port_id: vif.port_id.clone(),
        }])
        .await?;
        info!(server.id = %vif.server_id, port.id = %vif.port_id, origin = %vif.origin, "Released port {}", vif.port_id);
        Ok(true)
    }

    /// Unbinds a user's port, unless someone else has taken it since. A port
    /// not bound yet whose attach never finished may still get that attach's
    /// bind: the request can be in flight (held, or sent by a process that
    /// died), guarded by the revision the port has now. Claiming the port and
    /// then unbinding it moves the revision past that guard, so a late bind is
    /// refused (412) instead of binding the port to a server that is gone.
    async fn unbind_if_ours(&self, vif: &VifRecord) -> netcache_neutron::Result<()> {
        let port = self.neutron.show_port(&vif.port_id).await?;
        let ours = vif.server_id.to_string();
        let revision = if port.device_id == ours {
            port.revision_number
        } else if port.device_id.is_empty() && vif.is_mid_attach() {
            let guard = self.revision_guard(port.revision_number).await?;
            self.neutron
                .update_port(&vif.port_id, &PortUpdate::claim(&ours), guard)
                .await?
                .revision_number
        } else {
            return Ok(());
        };
        self.neutron
            .update_port(
                &vif.port_id,
                &PortUpdate::unbind(),
                self.revision_guard(revision).await?,
            )
            .await
            .map(|_| ())
    }
}

/// A server's VIF records with `vif` in place of the record of its port.
pub(crate) fn with_vif_replaced(vifs: Vec<VifRecord>, vif: &VifRecord) -> Vec<VifRecord> {
    vifs.into_iter()
        .map(|v| if v.port_id == vif.port_id { vif.clone() } else { v })
        .collect()
}
