//! Errors of compute operations. The API maps each to Nova's HTTP error in one place.

use netcache_domain::{NetworkId, PortId, ServerId};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Instance {0} could not be found.")]
    ServerNotFound(ServerId),
    #[error("Network {0} could not be found.")]
    NetworkNotFound(NetworkId),
    #[error("Port id {0} could not be found.")]
    PortNotFound(PortId),
    #[error("Instance {server} does not have a port with id {port}")]
    InterfaceNotFound { server: ServerId, port: PortId },
    #[error("Port {port} not usable: {reason}")]
    PortNotUsable { port: PortId, reason: String },
    #[error("Port {0} is still in use.")]
    PortInUse(PortId),
    #[error("Multiple possible networks found, use a Network ID to be more specific.")]
    NetworkAmbiguous,
    #[error("No network is available to attach: specify a network or a port.")]
    NoNetworkAvailable,
    #[error("Zero fixed IPs could be found.")]
    NoMoreFixedIps(String),
    #[error("Fixed IP address {0} is already in use.")]
    FixedIpAlreadyInUse(String),
    #[error("Invalid input: {0}")]
    InvalidInput(String),
    #[error("Cannot '{action}' instance {server} while it is in vm_state {vm_state}")]
    InvalidState {
        server: ServerId,
        action: &'static str,
        vm_state: String,
    },
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
    #[error("No valid host was found. {0}")]
    NoValidHost(String),
    #[error("Cannot '{action}' instance {server} while it is in task_state {kind}")]
    OperationInFlight {
        server: ServerId,
        kind: String,
        action: String,
    },
    #[error("This service has too many operations in flight; retry later.")]
    Overloaded,
    /// A delete was queued while a build ran: the build stops, the delete follows.
    #[error("Instance {0} is being deleted.")]
    DeleteRequested(ServerId),
    /// The process stopped before the operation gave an outcome; another resumes it.
    #[error("The operation on instance {0} was interrupted; it is resumed in the background.")]
    Interrupted(ServerId),
    #[error(transparent)]
    Neutron(#[from] netcache_neutron::Error),
    #[error(transparent)]
    Store(#[from] netcache_store::Error),
    /// The configured crash point was reached: the operation stops dead, without
    /// cleanup, as a killed process would.
    #[error("simulated crash at {0:?}")]
    Crashed(crate::config::CrashPoint),
}

impl Error {
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

    /// Maps a definite Neutron refusal of a create or update to what it means here.
    pub(crate) fn from_neutron_refusal(err: netcache_neutron::Error) -> Self {
        match err.kind() {
            Some("IpAddressGenerationFailure") => Self::NoMoreFixedIps(err.to_string()),
            Some("IpAddressAlreadyAllocated" | "IpAddressInUse") => Self::FixedIpAlreadyInUse(err.to_string()),
            Some("InvalidIpForNetwork" | "InvalidIpForSubnet" | "InvalidInput" | "HTTPBadRequest") => {
                Self::InvalidInput(err.to_string())
            }
            _ => Self::Neutron(err),
        }
    }
}
