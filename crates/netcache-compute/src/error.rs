//! Errors of compute operations. The API maps each to Nova's HTTP error in one place.

use std::net::IpAddr;

use netcache_domain::{NetworkId, PortId, ProjectId, ServerId};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Instance {0} could not be found.")]
    ServerNotFound(ServerId),
    /// Also the answer for a network the caller may not see (another project's).
    #[error("Network {0} could not be found.")]
    NetworkNotFound(NetworkId),
    /// Also the answer for a port the caller may not see (another project's).
    #[error("Port id {0} could not be found.")]
    PortNotFound(PortId),
    #[error("Instance {server} does not have a port with id {port}")]
    InterfaceNotFound { server: ServerId, port: PortId },
    #[error("Port {port} not usable: {reason}")]
    PortNotUsable { port: PortId, reason: String },
    #[error("Port {0} is still in use.")]
    PortInUse(PortId),
    /// Nova's `UnableToAutoAllocateNetwork`: "auto" with no network, and
    /// Neutron would not make one.
    #[error("Unable to automatically allocate a network for project {0}")]
    UnableToAutoAllocateNetwork(ProjectId),
    #[error("Multiple possible networks found, use a Network ID to be more specific.")]
    NetworkAmbiguous,
    #[error("No network is available to attach: specify a network or a port.")]
    NoNetworkAvailable,
    #[error("Zero fixed IPs could be found.")]
    NoMoreFixedIps(String),
    /// Names the address only: never the subnet or port that holds it.
    #[error("Fixed IP address {0} is already in use.")]
    FixedIpAlreadyInUse(IpAddr),
    /// Nova's 403 for a non-admin's port on an external network that is not shared.
    #[error("It is not allowed to create an interface on external network {0}")]
    ExternalNetworkAttachForbidden(NetworkId),
    /// A refusal of an attach that Nova answers there otherwise than on a boot
    /// (see [`Error::on_attach`]).
    #[error(transparent)]
    OnAttach(Box<Error>),
    #[error("Invalid input: {0}")]
    InvalidInput(String),
    #[error("Instance {0} is locked")]
    Locked(ServerId),
    #[error("Instance {server} doesn't have fixed IP '{address}'.")]
    FixedIpNotFound { server: ServerId, address: IpAddr },
    /// A key pair's name or public key Nova refuses (the reason in its words).
    #[error("Keypair data is invalid: {0}")]
    InvalidKeypair(String),
    #[error("Key pair '{0}' already exists.")]
    KeypairExists(String),
    /// Also the answer for another user's key pair.
    #[error("Keypair {name} not found for user {user_id}")]
    KeypairNotFound { name: String, user_id: String },
    /// A boot's `key_name` names none of the caller's key pairs.
    #[error("Invalid key_name provided.")]
    InvalidKeyName,
    #[error("Key pair generation failed: {0}")]
    KeyGeneration(String),
    #[error("Cannot '{action}' instance {server} while it is in vm_state {vm_state}")]
    InvalidState {
        server: ServerId,
        action: &'static str,
        vm_state: String,
    },
    /// Nova's `check_instance_state` of a server that never launched (a rebuild).
    #[error("Cannot '{action}' instance {server} while it is in launched_at None")]
    NeverLaunched { server: ServerId, action: &'static str },
    /// Nova's `InstanceNotReady`: the server has no host (yet) to ask.
    /// 2.104: a pinned server re-pinned to another zone without an unpin.
    #[error(
        "Cannot change pinned availability zone directly. Unpin first by setting pinned_availability_zone to null."
    )]
    PinnedZoneChange,
    /// 2.104: a pin to a zone the server is not in.
    #[error("Server can only be pinned to its current availability zone '{current}', but '{requested}' was requested.")]
    PinnedZoneNotCurrent { current: String, requested: String },
    #[error("Instance {0} is not ready")]
    NotReady(ServerId),
    /// The image a rebuild names is not in the image catalog.
    #[error("Cannot find image for rebuild")]
    RebuildImageNotFound,
    #[error(
        "Creating a port on network {network} had an unknown outcome and no port carries intent {intent}: intent abandoned"
    )]
    CreateAbandoned {
        network: NetworkId,
        intent: netcache_domain::IntentId,
    },
    #[error("Build of instance {server} failed on {host}: {reason}")]
    SpawnFailed {
        server: ServerId,
        host: String,
        reason: String,
    },
    #[error("Timed out waiting for network-vif-plugged of ports {ports} of instance {server}")]
    VifPlugTimeout { server: ServerId, ports: String },
    #[error("Instance group {0} could not be found.")]
    ServerGroupNotFound(uuid::Uuid),
    /// A boot's `group` hint names no group (Nova answers it 400).
    #[error("Instance group {0} could not be found.")]
    BootGroupNotFound(uuid::Uuid),
    #[error("No valid host was found. {0}")]
    NoValidHost(String),
    /// A quota refuses (servers, key pairs, metadata items): Nova's 403.
    #[error("{0}")]
    OverQuota(netcache_domain::quota::Refusal),
    /// A quota limit an admin may not set (below usage, above the project's room).
    #[error("{0}")]
    BadQuotaLimit(netcache_domain::quota::BadLimit),
    #[error("Metadata item was not found")]
    MetadataItemNotFound,
    #[error("Instance {server} has no tag '{tag}'")]
    TagNotFound { server: ServerId, tag: String },
    #[error("Cannot '{action}' instance {server} while it is in task_state {kind}")]
    OperationInFlight {
        server: ServerId,
        kind: String,
        action: String,
    },
    /// A boot's group that none of its project's groups is (by id or name).
    #[error("Unable to find security_group with name or id '{0}'")]
    SecurityGroupNotFound(String),
    /// A group Neutron does not have, or not one the caller may see.
    #[error("Security group {0} does not exist")]
    SecurityGroupMissing(String),
    #[error("Security group rule {0} does not exist")]
    SecurityGroupRuleMissing(String),
    /// Nova's refusal of a group or rule (its words, or Neutron's).
    #[error("{0}")]
    SecurityGroupInvalid(String),
    /// Neutron's refusal of a create as over its quota or a `default` group:
    /// Nova's 403.
    #[error("{0}")]
    SecurityGroupLimitExceeded(String),
    /// An action's group that none of the server's project's groups is.
    #[error("Security group {name} is not found for project {project}")]
    SecurityGroupNotFoundForProject { name: String, project: String },
    #[error("Multiple security_group matches found for name '{0}', use an ID to be more specific.")]
    SecurityGroupAmbiguous(String),
    #[error("instance_id {0} could not be found as device id on any ports")]
    NoPortsForSecurityGroups(ServerId),
    #[error("Security group {name} not associated with the instance {server}")]
    SecurityGroupNotAssociated { name: String, server: ServerId },
    /// Nova's message, or Neutron's refusal of the port update.
    #[error(
        "{}",
        .0.as_deref().unwrap_or("Network requires port_security_enabled and subnet associated in order to apply security groups.")
    )]
    SecurityGroupCannotBeApplied(Option<String>),
    /// Also the answer for another project's floating IP (a non-admin's).
    #[error("Floating IP not found for ID {0}")]
    FloatingIpNotFound(String),
    #[error("Floating IP not found for address {0}.")]
    FloatingIpNotFoundForAddress(IpAddr),
    /// `addFloatingIp`'s words for an address the caller has no floating IP at.
    #[error("floating IP not found")]
    FloatingIpAddressNotFound,
    #[error("Multiple floating IPs are found for address {0}.")]
    FloatingIpMultipleFound(IpAddr),
    #[error("Floating IP pool not found.")]
    FloatingIpPoolNotFound,
    #[error("Multiple floating IP pools matches found for name '{0}'")]
    FloatingIpPoolAmbiguous(String),
    /// The pool the request named, if it named one.
    #[error("{}", .0.as_ref().map_or_else(|| "No more floating IPs available.".to_owned(), |p| format!("No more floating IPs in pool {p}.")))]
    NoMoreFloatingIps(Option<String>),
    #[error("{}", .0.as_ref().map_or_else(|| "IP allocation over quota.".to_owned(), |p| format!("IP allocation over quota in pool {p}.")))]
    FloatingIpLimitExceeded(Option<String>),
    /// Nova's refusal of a floating IP request (its words, or Neutron's).
    #[error("{0}")]
    FloatingIpRefused(String),
    /// No fixed IP of the server can take the floating IP.
    #[error("{0}")]
    FixedAddressRefused(netcache_domain::floating_ip::Refusal),
    /// `removeFloatingIp` of a floating IP on another server or on none
    /// (the server as the request named it).
    #[error("Floating IP {address} is not associated with instance {server}.")]
    FloatingIpNotAssociated { address: IpAddr, server: String },
    /// Also the answer for a private flavor the caller's project may not use.
    #[error("Flavor {0} could not be found.")]
    FlavorNotFound(String),
    /// A boot's flavor that is not one the caller sees: Nova's 400.
    #[error("Flavor {0} could not be found.")]
    BootFlavorNotFound(String),
    #[error("Flavor with name {0} already exists.")]
    FlavorExists(String),
    #[error("Flavor with ID {0} already exists.")]
    FlavorIdExists(String),
    #[error("marker [{0}] not found")]
    FlavorMarkerNotFound(String),
    #[error("Can not add access to a public flavor.")]
    FlavorIsPublic,
    #[error("Flavor access already exists for flavor {flavor} and project {project} combination.")]
    FlavorAccessExists { flavor: String, project: String },
    #[error("Flavor access not found for {flavor} / {project} combination.")]
    FlavorAccessNotFound { flavor: String, project: String },
    #[error("Flavor {flavor} has no extra specs with key {key}.")]
    FlavorExtraSpecNotFound { flavor: String, key: String },
    /// A service that no id, uuid or host names (Nova's `ServiceNotFound`).
    #[error("Service {0} could not be found.")]
    ServiceNotFound(String),
    /// Nova's `ComputeHostNotFound`: no compute service on that host.
    #[error("Compute host {0} could not be found.")]
    ComputeHostNotFound(String),
    /// A change of aggregates Nova refuses (in its words).
    #[error("{0}")]
    Aggregate(#[from] netcache_domain::aggregate::Refusal),
    /// Nova's `HostMappingNotFound`: no compute service on that host.
    #[error("Host '{0}' is not mapped to any cell")]
    HostNotMapped(String),
    #[error("Updating a {0} service is not supported. Only nova-compute services can be updated.")]
    ServiceNotUpdatable(String),
    /// An admin's service update Nova refuses (its reason, in its words).
    #[error("{0}")]
    ServiceUpdateRefused(&'static str),
    #[error("Unable to delete compute service that is hosting instances. Migrate or delete the instances first.")]
    ServiceHostsInstances,
    #[error("This service has too many operations in flight; retry later.")]
    Overloaded,
    /// A delete was queued while a build ran: the build stops, the delete follows.
    #[error("Instance {0} is being deleted.")]
    DeleteRequested(ServerId),
    /// The process stopped before the operation gave an outcome; another resumes it.
    #[error("The operation on instance {0} was interrupted; it is resumed in the background.")]
    Interrupted(ServerId),
    /// An operation that failed `operations.max_attempts` times and was ended.
    #[error("The {kind} of instance {server} failed: {cause}")]
    OperationFailed {
        server: ServerId,
        kind: &'static str,
        cause: String,
    },
    /// A step panicked (a bug): counted as a failed attempt.
    #[error("the step panicked: {0}")]
    StepPanicked(String),
    /// This process lost its node lock: it takes no new work until it holds it again.
    #[error("This service is not taking new work right now; retry later.")]
    NotTakingWork,
    #[error(transparent)]
    Neutron(#[from] netcache_neutron::Error),
    /// Neutron has not named its extensions yet (it did not answer): nothing
    /// that needs them — a create-port request's marker — can be done.
    #[error("Neutron is not reachable yet; retry later ({0})")]
    NeutronNotReady(netcache_neutron::Error),
    #[error(transparent)]
    Store(netcache_store::Error),
    /// The configured crash point was reached: the operation stops dead, without
    /// cleanup, as a killed process would.
    #[error("simulated crash at {0:?}")]
    Crashed(crate::config::CrashPoint),
    /// A renewal found the deployment-wide lease of a pass taken: the pass stopped.
    #[error("the {0} lease was taken by another process; the pass stopped")]
    LeaseLost(&'static str),
}

/// A batch a quota claim refused is that quota's refusal; any other store
/// error stays one.
impl From<netcache_store::Error> for Error {
    fn from(error: netcache_store::Error) -> Self {
        match error {
            netcache_store::Error::OverQuota(refusal) => Self::OverQuota(refusal),
            other => Self::Store(other),
        }
    }
}

impl Error {
    /// Whether the database could not serve (down, unreachable, out of
    /// connections or disk): the same request may succeed later.
    #[must_use]
    pub fn is_database_unavailable(&self) -> bool {
        match self {
            Self::Store(e) => e.is_unavailable(),
            Self::OnAttach(e) => e.is_database_unavailable(),
            _ => false,
        }
    }

    /// Whether a build attempt that failed this way should be retried on another host.
    pub(crate) fn is_reschedulable(&self) -> bool {
        match self {
            Self::CreateAbandoned { .. } | Self::SpawnFailed { .. } => true,
            // Nova aborts a build whose network allocation failed outright.
            Self::Neutron(e) => !matches!(
                e,
                netcache_neutron::Error::Rejected { .. } | netcache_neutron::Error::Unreachable { .. }
            ),
            _ => false,
        }
    }

    /// Marks an attach's refusal that Nova answers otherwise than a boot's: a
    /// network or port the caller cannot see is a 404 there (400 on a boot), a
    /// fixed IP in use a 409 (400 on a boot). Other errors are left as they are.
    pub(crate) fn on_attach(self) -> Self {
        match self {
            Self::NetworkNotFound(_) | Self::PortNotFound(_) | Self::FixedIpAlreadyInUse(_) => {
                Self::OnAttach(Box::new(self))
            }
            other => other,
        }
    }

    /// Maps a definite Neutron refusal of a create or update to what it means here.
    /// `fixed_ip` is the address the request asked for: Neutron's own message for
    /// an address in use names the subnet (maybe another project's), so it is
    /// not passed on.
    pub(crate) fn from_neutron_refusal(err: netcache_neutron::Error, fixed_ip: Option<IpAddr>) -> Self {
        match (err.kind(), fixed_ip) {
            (Some("IpAddressGenerationFailure"), _) => Self::NoMoreFixedIps(err.to_string()),
            (Some("IpAddressAlreadyAllocated" | "IpAddressInUse"), Some(ip)) => Self::FixedIpAlreadyInUse(ip),
            (Some("InvalidIpForNetwork" | "InvalidIpForSubnet" | "InvalidInput" | "HTTPBadRequest"), _) => {
                Self::InvalidInput(err.to_string())
            }
            _ => Self::Neutron(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_in_use_is_named_by_the_address_alone() {
        let subnet = "5f0c6a4e-7d0b-4d6e-9f7e-2b7c1f0a9d11";
        for kind in ["IpAddressAlreadyAllocated", "IpAddressInUse"] {
            let refusal = netcache_neutron::Error::Rejected {
                operation: "create_port",
                status: 409,
                kind: kind.to_owned(),
                message: format!("IP address 10.8.0.50 already allocated in subnet {subnet}"),
            };
            let error = Error::from_neutron_refusal(refusal, Some("10.8.0.50".parse().unwrap()));
            assert_eq!(error.to_string(), "Fixed IP address 10.8.0.50 is already in use.");
        }
    }

    #[test]
    fn attach_marks_only_the_refusals_nova_answers_otherwise_there() {
        let network = || NetworkId::from("n");
        let port = || PortId::from("p");
        let marked = [
            Error::NetworkNotFound(network()),
            Error::PortNotFound(port()),
            Error::FixedIpAlreadyInUse("10.0.0.5".parse().unwrap()),
        ];
        for error in marked {
            let message = error.to_string();
            let on_attach = error.on_attach();
            assert!(matches!(on_attach, Error::OnAttach(_)), "{on_attach:?}");
            assert_eq!(on_attach.to_string(), message, "same message");
        }
        let kept = [
            Error::ExternalNetworkAttachForbidden(network()),
            Error::PortInUse(port()),
            Error::NetworkAmbiguous,
        ];
        for error in kept {
            assert!(!matches!(error.on_attach(), Error::OnAttach(_)));
        }
    }
}
