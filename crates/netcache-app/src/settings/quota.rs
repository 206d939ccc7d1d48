//! `[quota]`: the default limits of projects and users without limits of their
//! own, by Nova's option names and with its defaults (`-1` is unlimited).
//! The nova-network quotas have no option (Nova dropped them): always -1.

use anyhow::bail;
use netcache_domain::quota::{QuotaSet, Resource};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct QuotaSettings {
    /// Servers per project.
    pub instances: i64,
    /// Cores (vCPUs) per project.
    pub cores: i64,
    /// Megabytes of RAM per project.
    pub ram: i64,
    /// Metadata items per server.
    pub metadata_items: i64,
    /// Injected files per server (netcache takes none; shown as Nova shows it).
    pub injected_files: i64,
    pub injected_file_content_bytes: i64,
    /// The quota `injected_file_path_bytes` (Nova's option name).
    pub injected_file_path_length: i64,
    /// Key pairs per user.
    pub key_pairs: i64,
    /// Server groups per project (netcache has none; shown as Nova shows it).
    pub server_groups: i64,
    pub server_group_members: i64,
}

impl QuotaSettings {
    /// No limit (Nova's -1) on servers, cores or RAM: for runs that boot more
    /// servers in one project than Nova's defaults allow (tests, the bench).
    pub fn unlimit_servers(&mut self) {
        self.instances = -1;
        self.cores = -1;
        self.ram = -1;
    }

    fn options(&self) -> [(&'static str, Resource, i64); 10] {
        [
            ("instances", Resource::Instances, self.instances),
            ("cores", Resource::Cores, self.cores),
            ("ram", Resource::Ram, self.ram),
            ("metadata_items", Resource::MetadataItems, self.metadata_items),
            ("injected_files", Resource::InjectedFiles, self.injected_files),
            (
                "injected_file_content_bytes",
                Resource::InjectedFileContentBytes,
                self.injected_file_content_bytes,
            ),
            (
                "injected_file_path_length",
                Resource::InjectedFilePathBytes,
                self.injected_file_path_length,
            ),
            ("key_pairs", Resource::KeyPairs, self.key_pairs),
            ("server_groups", Resource::ServerGroups, self.server_groups),
            (
                "server_group_members",
                Resource::ServerGroupMembers,
                self.server_group_members,
            ),
        ]
    }

    /// Nova's bound of every option: -1 (unlimited) or more.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (key, _, value) in self.options() {
            if value < -1 {
                bail!("invalid configuration: quota.{key} must be -1 (unlimited) or more");
            }
        }
        Ok(())
    }

    #[must_use]
    pub fn defaults(&self) -> QuotaSet {
        self.options()
            .into_iter()
            .fold(QuotaSet::default(), |set, (_, resource, value)| {
                set.with(resource, value)
            })
    }
}

impl Default for QuotaSettings {
    fn default() -> Self {
        let d = QuotaSet::default();
        Self {
            instances: d.get(Resource::Instances),
            cores: d.get(Resource::Cores),
            ram: d.get(Resource::Ram),
            metadata_items: d.get(Resource::MetadataItems),
            injected_files: d.get(Resource::InjectedFiles),
            injected_file_content_bytes: d.get(Resource::InjectedFileContentBytes),
            injected_file_path_length: d.get(Resource::InjectedFilePathBytes),
            key_pairs: d.get(Resource::KeyPairs),
            server_groups: d.get(Resource::ServerGroups),
            server_group_members: d.get(Resource::ServerGroupMembers),
        }
    }
}
