//! Nova's external events API (`POST /v2.1/os-server-external-events`), the
//! public way to tell Nova a port is gone. For each deleted port Nova gets what
//! Neutron would send: `network-vif-deleted` (a hypervisor detaches the
//! interface), then `network-changed` without a tag for its instance, on which
//! Nova rebuilds the instance's info cache from Neutron's ports, without the
//! deleted one. (On the fake driver the detach fails and Nova 34 then leaves
//! the cache alone until its heal task comes by; the refresh drops the port:
//! docs/evidence/nova-ghosts.md.)

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
    /// Tells Nova the ports are gone, in one request (see the module's doc).
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
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a str>,
}

/// The events of `deleted`: each port's `network-vif-deleted`, then one
/// `network-changed` per instance.
fn events_of(deleted: &[VifDeleted]) -> Vec<EventBody<'_>> {
    let mut events: Vec<EventBody<'_>> = deleted
        .iter()
        .map(|e| EventBody {
            name: "network-vif-deleted",
            server_uuid: e.instance.as_str(),
            tag: Some(e.port.as_str()),
        })
        .collect();
    let mut instances: Vec<&str> = deleted.iter().map(|e| e.instance.as_str()).collect();
    instances.sort_unstable();
    instances.dedup();
    events.extend(instances.into_iter().map(|server_uuid| EventBody {
        name: "network-changed",
        server_uuid,
        tag: None,
    }));
    events
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
            events: events_of(events),
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
            .increment(body.events.len() as u64);
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
    fn each_port_is_vif_deleted_and_each_instance_refreshed_once() {
        let deleted = |i: &str, p: &str| VifDeleted {
            instance: i.into(),
            port: p.into(),
        };
        let deleted = [deleted("i1", "p1"), deleted("i1", "p2"), deleted("i2", "p3")];
        let body = EventsBody {
            events: events_of(&deleted),
        };
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({"events": [
                {"name": "network-vif-deleted", "server_uuid": "i1", "tag": "p1"},
                {"name": "network-vif-deleted", "server_uuid": "i1", "tag": "p2"},
                {"name": "network-vif-deleted", "server_uuid": "i2", "tag": "p3"},
                {"name": "network-changed", "server_uuid": "i1"},
                {"name": "network-changed", "server_uuid": "i2"},
            ]})
        );
    }

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
