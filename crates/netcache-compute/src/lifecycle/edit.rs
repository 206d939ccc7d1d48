//! A user's edits of a server (Nova's server update, metadata and lock calls): no
//! operation, a compare-and-swap on the server row, read again and retried when
//! another writer got there first. An operation's own writes keep such an edit
//! (see `Compute::save_server`), so a rename during a build is never lost. A lock
//! or unlock is an instance action, recorded in the edit's own commit.

use std::sync::Arc;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

use async_trait::async_trait;
use netcache_domain::ServerId;
use netcache_domain::action::{Action, ActionEvent};
use netcache_domain::change::Change;
use netcache_domain::server::{LockedBy, Server, VmState};
use netcache_domain::server_attributes::MAX_TAGS;

use crate::{Compute, Error, RequestContext, Result};

/// Compare-and-swap attempts of an edit before the conflict is answered.
const ATTEMPTS: usize = 5;

/// What a user changes on a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEdit {
    /// `PUT /servers/{id}`: each field given replaces the stored one.
    Update {
        name: Option<String>,
        access_ip_v4: Option<Ipv4Addr>,
        access_ip_v6: Option<Ipv6Addr>,
        /// 2.19: `Some(None)` clears it.
        description: Option<Option<String>>,
        /// 2.90.
        hostname: Option<String>,
        /// 2.104: `Some(None)` unpins; `Some(zone)` pins to the server's own zone.
        pinned_availability_zone: Option<Option<String>>,
        /// `OS-DCF:diskConfig`.
        auto_disk_config: Option<bool>,
    },
    /// Metadata items merged into the server's (`replace`: in place of all of them).
    SetMetadata {
        items: BTreeMap<String, String>,
        replace: bool,
    },
    DeleteMetadata {
        key: String,
    },
    /// Nova's lock (`lockServer`, with 2.73's reason) and unlock: who may
    /// unlock is the API's policy.
    Lock(LockedBy, Option<String>),
    Unlock,
    /// 2.26's server tags.
    Tags(TagEdit),
    /// 2.17's `trigger_crash_dump`: only its instance action (the fake virt
    /// driver has no crash dump to take), refused as Nova refuses it.
    TriggerCrashDump,
}

/// A change of a server's tags (`/servers/{id}/tags`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagEdit {
    Replace(BTreeSet<String>),
    Add(String),
    Remove(String),
    Clear,
}

impl ServerEdit {
    /// The server after the edit, or Nova's refusal: metadata changes only on an
    /// unlocked (but for admins) server in a state Nova allows, without a task
    /// (409); deleting an item that is not there is a 404 first. (The quota of
    /// the items set is checked after, by `EditOps::edit_server`.)
    fn apply(&self, ctx: &RequestContext, server: &Server) -> Result<Server> {
        let mut edited = server.clone();
        match self {
            Self::Update {
                name,
                access_ip_v4,
                access_ip_v6,
                description,
                hostname,
                pinned_availability_zone,
                auto_disk_config,
            } => {
                if let Some(auto) = auto_disk_config {
                    edited.attributes.auto_disk_config = *auto;
                }
                if let Some(pin) = pinned_availability_zone {
                    edited.attributes.pinned_availability_zone = repinned(server, pin.as_deref())?;
                }
                if let Some(name) = name {
                    edited.name.clone_from(name);
                }
                if let Some(description) = description {
                    edited.attributes.description.clone_from(description);
                }
                if let Some(hostname) = hostname {
                    edited.attributes.hostname = Some(hostname.clone());
                }
                edited.access_ip_v4 = access_ip_v4.or(server.access_ip_v4);
                edited.access_ip_v6 = access_ip_v6.or(server.access_ip_v6);
            }
            Self::SetMetadata { items, replace } => {
                metadata_changeable(ctx, server, "update metadata")?;
                if *replace {
                    edited.metadata.clone_from(items);
                } else {
                    edited.metadata.extend(items.clone());
                }
            }
            Self::Lock(by, reason) if !owners_relock(*by, server) => {
                edited.locked_by = Some(*by);
                edited.attributes.locked_reason.clone_from(reason);
            }
            Self::Lock(..) => {}
            Self::Unlock => {
                edited.locked_by = None;
                edited.attributes.locked_reason = None;
            }
            Self::Tags(tags) => {
                tags_changeable(server, tags)?;
                let stored = &mut edited.attributes.tags;
                match tags {
                    TagEdit::Replace(new) => stored.clone_from(new),
                    TagEdit::Add(tag) if stored.len() >= MAX_TAGS && !stored.contains(tag) => {
                        return Err(Error::InvalidInput(format!(
                            "The number of tags exceeded the per-server limit {MAX_TAGS}"
                        )));
                    }
                    TagEdit::Add(tag) => {
                        stored.insert(tag.clone());
                    }
                    TagEdit::Remove(tag) => {
                        if !stored.remove(tag) {
                            return Err(Error::TagNotFound {
                                server: server.id,
                                tag: tag.clone(),
                            });
                        }
                    }
                    TagEdit::Clear => stored.clear(),
                }
            }
            Self::TriggerCrashDump => crash_dump_allowed(ctx, server)?,
            Self::DeleteMetadata { key } => {
                if edited.metadata.remove(key).is_none() {
                    return Err(Error::MetadataItemNotFound);
                }
                metadata_changeable(ctx, server, "delete metadata")?;
            }
        }
        Ok(edited)
    }

    /// The instance action Nova records for the edit (from the API, with its
    /// `api_` event): every lock and unlock, even one that changes nothing, but
    /// an owner's lock of a locked server.
    fn recorded_action(&self, server: &Server) -> Option<&'static str> {
        match self {
            Self::Lock(by, _) if owners_relock(*by, server) => None,
            Self::Lock(..) => Some("lock"),
            Self::Unlock => Some("unlock"),
            Self::TriggerCrashDump => Some("trigger_crash_dump"),
            Self::Update { .. } | Self::SetMetadata { .. } | Self::DeleteMetadata { .. } | Self::Tags(_) => None,
        }
    }
}

/// 2.104's pin, as Nova checks it: an unpin always; a pin only to the zone
/// the server is in, and not over another pin (409s).
fn repinned(server: &Server, requested: Option<&str>) -> Result<Option<String>> {
    let (current, zone) = (
        server.attributes.pinned_availability_zone.as_deref(),
        &server.availability_zone,
    );
    match (requested, current) {
        (None, _) => Ok(None),
        (Some(requested), Some(pinned)) if requested != pinned => Err(Error::PinnedZoneChange),
        (Some(requested), None) if requested != zone => Err(Error::PinnedZoneNotCurrent {
            current: zone.to_owned(),
            requested: requested.to_owned(),
        }),
        (Some(requested), _) => Ok(Some(requested.to_owned())),
    }
}

/// Whether a lock is its owner's of a server already locked, which Nova leaves
/// as it is (an admin's lock stays an admin's).
fn owners_relock(by: LockedBy, server: &Server) -> bool {
    by == LockedBy::Owner && server.locked_by.is_some()
}

/// Nova's tags change only on an active, paused, suspended or stopped server (409).
fn tags_changeable(server: &Server, edit: &TagEdit) -> Result<()> {
    let allowed = [VmState::Active, VmState::Paused, VmState::Suspended, VmState::Stopped];
    if allowed.contains(&server.vm_state) {
        return Ok(());
    }
    Err(Error::InvalidState {
        server: server.id,
        action: match edit {
            TagEdit::Replace(_) => "update tags",
            TagEdit::Add(_) => "update tag",
            TagEdit::Remove(_) => "delete tag",
            TagEdit::Clear => "delete tags",
        },
        vm_state: server.vm_state.to_string(),
    })
}

/// Nova's checks of `trigger_crash_dump` (409s): unlocked or an admin, on a
/// host, active, paused or in error (`ALLOW_TRIGGER_CRASH_DUMP`, of the states
/// netcache has), no task.
fn crash_dump_allowed(ctx: &RequestContext, server: &Server) -> Result<()> {
    Compute::check_unlocked(ctx, server)?;
    if server.host.is_none() {
        return Err(Error::NotReady(server.id));
    }
    state_allows(
        server,
        &[VmState::Active, VmState::Paused, VmState::Error],
        "trigger_crash_dump",
    )
}

/// Nova's `check_instance_lock` and `check_instance_state` of the metadata calls
/// (unlocked or an admin; active, paused, suspended or stopped, no task): 409s.
fn metadata_changeable(ctx: &RequestContext, server: &Server, action: &'static str) -> Result<()> {
    Compute::check_unlocked(ctx, server)?;
    state_allows(
        server,
        &[VmState::Active, VmState::Paused, VmState::Suspended, VmState::Stopped],
        action,
    )
}

/// Nova's `check_instance_state` with no task allowed: the server in one of
/// `allowed`, no task in flight (409s naming `action`).
fn state_allows(server: &Server, allowed: &[VmState], action: &'static str) -> Result<()> {
    if !allowed.contains(&server.vm_state) {
        return Err(Error::InvalidState {
            server: server.id,
            action,
            vm_state: server.vm_state.to_string(),
        });
    }
    if let Some(task) = server.task_state {
        return Err(Error::OperationInFlight {
            server: server.id,
            kind: task.to_string(),
            action: action.to_owned(),
        });
    }
    Ok(())
}

/// A user's edits of a server: name, metadata, tags and lock.
#[async_trait]
pub trait EditOps: Send + Sync {
    /// Applies a user's edit: a compare-and-swap on the server row from the
    /// generation just read, retried from a fresh read when another writer (an
    /// operation, another edit) got there first; the edit's instance action, if
    /// Nova records one, in the same commit. Answers the server as stored.
    async fn edit_server(&self, ctx: &RequestContext, server_id: ServerId, edit: &ServerEdit) -> Result<Server>;
}

#[async_trait]
impl EditOps for Arc<Compute> {
    async fn edit_server(&self, ctx: &RequestContext, server_id: ServerId, edit: &ServerEdit) -> Result<Server> {
        let mut attempt = 0;
        loop {
            let server = self.server(server_id).await?;
            let edited = edit.apply(ctx, &server)?;
            if matches!(edit, ServerEdit::SetMetadata { .. }) {
                self.check_item_quotas(ctx, edited.metadata.len(), &[]).await?;
            }
            let recorded = edit.recorded_action(&server);
            if edited == server && recorded.is_none() {
                return Ok(server);
            }
            let now = self.clock.now();
            let mut changes = Vec::new();
            let answer = if edited == server {
                server
            } else {
                let edited = Server {
                    updated_at: now,
                    ..edited
                };
                changes.push(Change::UpdateServer(edited.clone()));
                Server {
                    generation: edited.generation + 1,
                    ..edited
                }
            };
            if let Some(name) = recorded {
                let event = ActionEvent::finished(&format!("api_{name}"), now, true, None, None);
                changes.push(Change::StartAction(Action {
                    events: vec![event],
                    ..ctx.action(server_id, name, now)
                }));
            }
            match self.commit(changes).await {
                Ok(()) => return Ok(answer),
                Err(Error::Store(e)) if e.is_conflict() && attempt + 1 < ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Compute {
    /// Nova's `check_instance_lock`: a locked server refuses every lifecycle
    /// action but an admin's (409).
    pub(crate) fn check_unlocked(ctx: &RequestContext, server: &Server) -> Result<()> {
        if server.locked_by.is_some() && !ctx.is_admin() {
            return Err(Error::Locked(server.id));
        }
        Ok(())
    }
}
