//! What netcache knows of Neutron's extensions, and so how the ownership marker
//! rides in a create-port request (invariant 4). Learned at start, or, when
//! Neutron does not answer then, by the first call that needs them and by a
//! background retry with backoff: the service starts and serves what needs no
//! Neutron meanwhile, and nothing creates a port before the marker mode is known.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use netcache_domain::marker::MarkerMode;
use netcache_domain::neutron::extension;
use tokio::sync::OnceCell;
use tracing::{info, warn};

use crate::{Compute, Error, Result};

/// Neutron's extensions, once it has named them.
#[derive(Default)]
pub(crate) struct NeutronFeatures(OnceCell<Features>);

pub(crate) struct Features {
    pub extensions: BTreeSet<String>,
    pub marker_mode: MarkerMode,
}

/// Waits between background attempts to learn the extensions (seconds).
const RETRY_BACKOFF: [u64; 6] = [1, 2, 4, 8, 15, 30];

impl Compute {
    /// Neutron's extensions: asked once, again at each call while Neutron has
    /// not answered (concurrent callers share one request).
    pub(crate) async fn neutron_features(&self) -> netcache_neutron::Result<&Features> {
        self.features
            .0
            .get_or_try_init(|| async {
                let extensions = self.neutron.list_extensions().await?;
                let marker_mode = MarkerMode::for_extensions(&extensions);
                info!(
                    marker_mode = ?marker_mode,
                    "Neutron {} tags in create-port requests",
                    if marker_mode == MarkerMode::Tags { "accepts" } else { "does not accept" }
                );
                Ok(Features {
                    extensions,
                    marker_mode,
                })
            })
            .await
    }

    /// The marker mode, or [`Error::NeutronNotReady`] while Neutron has not
    /// named its extensions: a write that needs it answers 503.
    pub(crate) async fn marker_mode(&self) -> Result<MarkerMode> {
        match self.neutron_features().await {
            Ok(features) => Ok(features.marker_mode),
            Err(e) => Err(Error::NeutronNotReady(e)),
        }
    }

    /// The `If-Match` revision for a port update or delete, if Neutron takes one.
    pub(crate) async fn revision_guard(&self, revision: u64) -> netcache_neutron::Result<Option<u64>> {
        let features = self.neutron_features().await?;
        Ok(features
            .extensions
            .contains(extension::REVISION_IF_MATCH)
            .then_some(revision))
    }

    /// Learns the extensions at start if Neutron answers; else says so and
    /// keeps asking in the background until it does.
    pub(crate) async fn learn_neutron_features(self: &Arc<Self>) {
        let Err(e) = self.neutron_features().await else {
            return;
        };
        warn!(
            error = %e,
            "Neutron did not name its extensions: serving what needs no Neutron; writes that do answer 503 until it does"
        );
        let compute = Arc::downgrade(self);
        tokio::spawn(async move {
            for attempt in 0.. {
                tokio::time::sleep(Duration::from_secs(RETRY_BACKOFF[attempt.min(RETRY_BACKOFF.len() - 1)])).await;
                let Some(compute) = compute.upgrade() else {
                    return;
                };
                if compute.neutron_features().await.is_ok() {
                    return;
                }
            }
        });
    }
}
