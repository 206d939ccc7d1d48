//! Nova's external events API (`POST /v2.1/os-server-external-events`), the
//! public way to tell Nova a port is gone: it then drops the port from the
//! instance's info cache, as it does when Neutron reports a deleted port.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use netcache_domain::{InstanceUuid, PortId};
use netcache_neutron::TokenSource;
use serde::Serialize;
use url::Url;

use crate::{Error, Result};

/// One `network-vif-deleted` event: `port` is gone from `instance`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VifDeleted {
    pub instance: InstanceUuid,
    pub port: PortId,
}

#[async_trait]
pub trait NovaEvents: Send + Sync + 'static {
    /// Tells Nova the ports are gone, in one request.
    async fn vifs_deleted(&self, events: &[VifDeleted]) -> Result<()>;
}

#[derive(Serialize)]
struct EventsBody<'a> {
    events: Vec<EventBody<'a>>,
}

#[derive(Serialize)]
struct EventBody<'a> {
    name: &'static str,
    server_uuid: &'a str,
    tag: &'a str,
}

/// Where the external events go and who sends them.
pub enum NovaEndpoint {
    /// A Keystone token source whose endpoint is Nova's (catalog type `compute`).
    Keystone(Arc<dyn TokenSource>),
    /// A fixed URL and no token (a test's fake Nova).
    Static(Url),
}

pub struct HttpNovaEvents {
    http: reqwest::Client,
    endpoint: NovaEndpoint,
}

impl HttpNovaEvents {
    #[must_use]
    pub fn new(http: reqwest::Client, endpoint: NovaEndpoint) -> Self {
        Self { http, endpoint }
    }
}

/// `…/v2.1` of a compute endpoint, whether the catalog lists it with a
/// project id, with `/v2.1`, or bare.
fn events_url(endpoint: &Url) -> Url {
    let mut url = endpoint.clone();
    let path = url.path().trim_end_matches('/').to_owned();
    let base = match path.find("/v2.1") {
        Some(i) => path[..i + "/v2.1".len()].to_owned(),
        None => format!("{path}/v2.1"),
    };
    url.set_path(&format!("{base}/os-server-external-events"));
    url.set_query(None);
    url
}

#[async_trait]
impl NovaEvents for HttpNovaEvents {
    async fn vifs_deleted(&self, events: &[VifDeleted]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let (base, token) = match &self.endpoint {
            NovaEndpoint::Static(url) => (url.clone(), None),
            NovaEndpoint::Keystone(source) => {
                let token = source.issue().await?;
                (token.endpoint, Some(token.value))
            }
        };
        let body = EventsBody {
            events: events
                .iter()
                .map(|e| EventBody {
                    name: "network-vif-deleted",
                    server_uuid: e.instance.as_str(),
                    tag: e.port.as_str(),
                })
                .collect(),
        };
        let mut request = self.http.post(events_url(&base)).json(&body);
        if let Some(token) = token {
            request = request.header("X-Auth-Token", token);
        }
        let response = request
            .send()
            .await
            .map_err(|e| Error::NovaApi(format!("sending external events failed: {e}")))?;
        let status = response.status();
        metrics::counter!("netcache_nova_events_total", "status" => status.as_u16().to_string())
            .increment(events.len() as u64);
        // 207: some events were not accepted (an instance gone meanwhile);
        // Nova's heal drops a deleted port from the cache anyway.
        if status.is_success() {
            Ok(())
        } else {
            let text = response.text().await.unwrap_or_default();
            Err(Error::NovaApi(format!(
                "os-server-external-events answered {}: {}",
                status.as_u16(),
                text.chars().take(300).collect::<String>()
            )))
        }
    }
}

/// A test double that keeps the events it is sent.
#[derive(Default)]
pub struct RecordedEvents {
    pub sent: Mutex<Vec<VifDeleted>>,
}

#[async_trait]
impl NovaEvents for RecordedEvents {
    async fn vifs_deleted(&self, events: &[VifDeleted]) -> Result<()> {
        self.sent.lock().expect("events").extend_from_slice(events);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_url_from_catalog_forms() {
        for (endpoint, want) in [
            (
                "http://nova:8774/v2.1",
                "http://nova:8774/v2.1/os-server-external-events",
            ),
            (
                "http://nova:8774/v2.1/7a8b",
                "http://nova:8774/v2.1/os-server-external-events",
            ),
            (
                "http://h/compute/v2.1/",
                "http://h/compute/v2.1/os-server-external-events",
            ),
            ("http://h/compute", "http://h/compute/v2.1/os-server-external-events"),
        ] {
            assert_eq!(events_url(&endpoint.parse().unwrap()).as_str(), want, "{endpoint}");
        }
    }
}
