//! Nova notifier: a background task that batches [`NovaEvent`]s every interval and posts
//! them to `{nova_url}/os-server-external-events`, retrying with backoff. API calls only
//! push into an unbounded channel, so they never block on Nova.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::core::NovaEvent;
use crate::http::{Shared, lock};

pub(crate) async fn run(sh: Arc<Shared>, mut rx: UnboundedReceiver<NovaEvent>) {
    let client = match reqwest::Client::builder().timeout(Duration::from_secs(10)).build() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("nova notifier disabled: {e}");
            return;
        }
    };
    let interval = Duration::from_millis(sh.config.notify_interval_ms);
    let mut shutdown = sh.shutdown.subscribe();
    loop {
        let first = tokio::select! {
            e = rx.recv() => match e { Some(e) => e, None => return },
            _ = shutdown.wait_for(|v| *v) => return,
        };
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|v| *v) => return,
        }
        let mut batch = vec![first];
        while let Ok(e) = rx.try_recv() {
            batch.push(e);
        }
        let Some(url) = lock(&sh.nova_url).clone() else {
            continue;
        };
        let url = format!("{}/os-server-external-events", url.trim_end_matches('/'));
        let body = json!({"events": batch});
        let mut backoff = Duration::from_millis(sh.config.notify_backoff_ms);
        for attempt in 0..=sh.config.notify_retries {
            let res = client
                .post(&url)
                .header("X-Auth-Token", "notused")
                // Who the notifier is in a noauth deployment: Neutron's service user.
                .header("X-Project-Id", "service")
                .header("X-User-Id", "neutron")
                .header("X-Roles", "service")
                .header("X-OpenStack-Nova-API-Version", "2.1")
                .json(&body)
                .send()
                .await;
            match res {
                Ok(r) if !r.status().is_server_error() => {
                    let mut st = lock(&sh.stats);
                    st.nova_batches_sent += 1;
                    st.nova_events_sent += batch.len() as u64;
                    break;
                }
                other => {
                    lock(&sh.stats).nova_post_failures += 1;
                    tracing::warn!(attempt, "nova notification failed: {:?}", other.map(|r| r.status()));
                    if attempt < sh.config.notify_retries {
                        tokio::time::sleep(backoff).await;
                        backoff *= 2;
                    }
                }
            }
        }
    }
}
