//! Nova notifier: a background task that batches [`NovaEvent`]s every interval and posts
//! them to `{nova_url}/os-server-external-events`, retrying with backoff. API calls only
//! push into an unbounded channel, so they never block on Nova.

use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::http::{Shared, lock};
use crate::store::NovaEvent;

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
            () = tokio::time::sleep(interval) => {}
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
        // `notify_retries` more attempts after the first, `notify_backoff_ms` before the
        // first retry, doubling (no cap, no jitter).
        let backoff = ExponentialBuilder::new()
            .with_min_delay(Duration::from_millis(sh.config.notify_backoff_ms))
            .with_factor(2.0)
            .without_max_delay()
            .with_max_times(sh.config.notify_retries as usize);
        let post = || post(&client, &url, &body);
        let sent = post
            .retry(backoff)
            .notify(|e: &String, after| {
                lock(&sh.stats).nova_post_failures += 1;
                tracing::warn!(?after, "nova notification failed, retrying: {e}");
            })
            .await;
        match sent {
            Ok(()) => {
                let mut st = lock(&sh.stats);
                st.nova_batches_sent += 1;
                st.nova_events_sent += batch.len() as u64;
            }
            Err(e) => {
                // The last failure: `notify` only sees the ones followed by a retry.
                lock(&sh.stats).nova_post_failures += 1;
                tracing::warn!("nova notification failed, giving up: {e}");
            }
        }
    }
}

/// One post of a batch; a transport error or a 5xx is worth a retry, anything else is done.
async fn post(client: &reqwest::Client, url: &str, body: &Value) -> Result<(), String> {
    let res = client
        .post(url)
        .header("X-Auth-Token", "notused")
        // Who the notifier is in a noauth deployment: Neutron's service user.
        .header("X-Project-Id", "service")
        .header("X-User-Id", "neutron")
        .header("X-Roles", "service")
        .header("X-OpenStack-Nova-API-Version", "2.1")
        .json(body)
        .send()
        .await;
    match res {
        Ok(r) if r.status().is_server_error() => Err(format!("status {}", r.status())),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
