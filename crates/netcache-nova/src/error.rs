use netcache_domain::InstanceUuid;

/// What can go wrong reading Nova or changing a cloud through its APIs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Nova's database {cell}: {source}")]
    Database {
        cell: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("Nova's record of {instance} is not understood: {reason}")]
    Record { instance: InstanceUuid, reason: String },
    #[error("configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Neutron(#[from] netcache_neutron::Error),
    #[error("Nova's API: {0}")]
    NovaApi(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
