//! `[nova]`: an existing Nova cloud for `netcache nova audit|gc|watch`. Nova's
//! cell databases are read only (a user with SELECT is enough); Neutron and
//! Keystone are `[neutron]`'s; Nova's API (only for external events) is the
//! Keystone catalog's `compute` endpoint unless `api_url` is set.

use std::fmt;
use std::time::Duration;

use anyhow::bail;
use netcache_nova::NovaConfig;
use serde::{Deserialize, Deserializer, Serialize};

use super::redact;

#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NovaSettings {
    /// The cell databases, `mysql://user:password@host:3306/nova` (comma-separated
    /// in the environment); unset: the cells of `api_database_url`.
    #[serde(deserialize_with = "list_or_commas")]
    pub database_urls: Vec<String>,
    /// Nova's API database, whose `cell_mappings` name the cells.
    pub api_database_url: Option<String>,
    /// Nova's API (`http://nova:8774/v2.1`); unset: the catalog's `compute` endpoint.
    pub api_url: Option<String>,
    /// Seconds between two sightings of garbage before GC acts on it.
    pub grace: f64,
    /// Seconds between the passes of `netcache nova watch`.
    pub interval: f64,
    /// Instances per page (and `device_id`s per Neutron list).
    pub page_size: usize,
    /// Seconds after its delete an instance's ports are still looked at.
    pub deleted_lookback: f64,
}

impl Default for NovaSettings {
    fn default() -> Self {
        let d = NovaConfig::default();
        Self {
            database_urls: Vec::new(),
            api_database_url: None,
            api_url: None,
            grace: d.grace.as_secs_f64(),
            interval: 60.0,
            page_size: d.page_size,
            deleted_lookback: d.deleted_lookback.as_secs_f64(),
        }
    }
}

/// A list, or one string of comma-separated items (an environment variable's form).
fn list_or_commas<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<String>),
        Text(String),
    }
    Ok(match Form::deserialize(deserializer)? {
        Form::List(items) => items,
        Form::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

impl NovaSettings {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        for (key, seconds) in [
            ("nova.grace", self.grace),
            ("nova.interval", self.interval),
            ("nova.deleted_lookback", self.deleted_lookback),
        ] {
            if !(seconds >= 0.0 && seconds.is_finite()) {
                bail!("invalid configuration: {key} must be a non-negative number of seconds");
            }
        }
        if self.page_size == 0 || self.page_size > 500 {
            bail!("invalid configuration: nova.page_size must be between 1 and 500");
        }
        Ok(())
    }

    #[must_use]
    pub fn config(&self) -> NovaConfig {
        NovaConfig {
            page_size: self.page_size,
            deleted_lookback: Duration::from_secs_f64(self.deleted_lookback),
            grace: Duration::from_secs_f64(self.grace),
        }
    }
}

impl fmt::Debug for NovaSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            database_urls,
            api_database_url,
            api_url,
            grace,
            interval,
            page_size,
            deleted_lookback,
        } = self;
        let urls: Vec<String> = database_urls.iter().map(|u| redact::url(u)).collect();
        f.debug_struct("NovaSettings")
            .field("database_urls", &urls)
            .field("api_database_url", &api_database_url.as_deref().map(redact::url))
            .field("api_url", api_url)
            .field("grace", grace)
            .field("interval", interval)
            .field("page_size", page_size)
            .field("deleted_lookback", deleted_lookback)
            .finish()
    }
}
