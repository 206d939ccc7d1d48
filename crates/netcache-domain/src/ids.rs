//! Identifiers. Newtypes so a port id can never be passed where a server id is meant.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub Uuid);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }
    };
}

uuid_id!(
    /// A server (instance) uuid, minted by netcache.
    ServerId
);
uuid_id!(
    /// A port intent, recorded before every create-port call.
    IntentId
);
string_id!(
    /// A Neutron port id.
    PortId
);
string_id!(
    /// A Neutron network id.
    NetworkId
);
string_id!(
    /// A Nova instance's uuid, as Nova's records spell it (netcache does not mint it).
    InstanceUuid
);
string_id!(
    /// A Neutron subnet id.
    SubnetId
);
string_id!(
    /// A Keystone project id.
    ProjectId
);
string_id!(
    /// A compute host name, e.g. `host1`.
    HostName
);
string_id!(
    /// This netcache deployment's identity, stamped on every port it creates.
    DeploymentId
);
