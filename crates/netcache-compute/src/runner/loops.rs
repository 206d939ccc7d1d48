//! The periodic heal, GC and purge loops. Each wait is the interval plus a jitter drawn
//! from an RNG seeded by the deployment id and this process's node (named by its
//! hosts), so the processes of one deployment do not sweep in lockstep and a
//! node's run is reproducible.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::task::JoinHandle;
use tracing::error;

use crate::{Compute, Error, Result};

impl Compute {
    /// Starts the operation lease/takeover loop, and the heal, GC and purge loops
    /// (each only if its interval is non-zero).
    pub fn spawn_loops(self: &Arc<Self>) -> Vec<JoinHandle<()>> {
        let seed = jitter_seed(self.deployment.as_str(), &self.runner.owner.node);
        let mut loops = vec![self.spawn_operation_loops()];
        let heal = &self.config.heal;
        if !heal.interval.is_zero() {
            loops.push(spawn_pass(
                Arc::clone(self),
                (heal.interval, heal.jitter),
                seed,
                "heal",
                |compute| async move { compute.heal_due_shards().await },
                |e| error!(error = %e, "Heal pass failed: {e}"),
            ));
        }
        let gc = &self.config.gc;
        if !gc.interval.is_zero() {
            loops.push(spawn_pass(
                Arc::clone(self),
                (gc.interval, gc.interval / 10),
                seed.rotate_left(1),
                "gc",
                |compute| async move { compute.gc().await },
                |e| error!(error = %e, "GC pass failed: {e}"),
            ));
        }
        let retention = &self.config.retention;
        if !retention.interval.is_zero() {
            loops.push(spawn_pass(
                Arc::clone(self),
                (retention.interval, retention.interval / 10),
                seed.rotate_left(2),
                "purge",
                |compute| async move { compute.purge_expired().await },
                |e| error!(error = %e, "Purge failed: {e}"),
            ));
        }
        loops
    }
}

impl Compute {
    /// Renews the leases of the operations this process owns, every third of a
    /// lease, for as long as it lives: a one-off command's, which runs no
    /// operation loop (nor takes any operation over).
    pub(crate) fn spawn_lease_renewal(self: &Arc<Self>) {
        let compute = Arc::downgrade(self);
        let every = self.config.operations.lease / 3;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(compute) = compute.upgrade() else {
                    return;
                };
                compute.renew_running_leases().await;
            }
        });
    }
}

/// Spawns one periodic loop: each `run` waits `interval` plus a jitter of up
/// to `jitter`, drawn from an RNG seeded with `seed`. A failed run counts
/// under `pass` and is logged by `log_failure`; the next one runs at its time.
fn spawn_pass<T, Pass>(
    compute: Arc<Compute>,
    (interval, jitter): (Duration, Duration),
    seed: u64,
    pass: &'static str,
    run: impl Fn(Arc<Compute>) -> Pass + Send + 'static,
    log_failure: fn(&Error),
) -> JoinHandle<()>
where
    Pass: Future<Output = Result<T>> + Send,
{
    tokio::spawn(async move {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        loop {
            tokio::time::sleep(interval + jittered(&mut rng, jitter)).await;
            if let Err(e) = run(Arc::clone(&compute)).await {
                pass_failed(pass);
                log_failure(&e);
            }
        }
    })
}

/// A whole pass of a loop failed (the next one runs at its time).
fn pass_failed(pass: &'static str) {
    metrics::counter!("netcache_pass_failures_total", "loop" => pass).increment(1);
}

fn jitter_seed(deployment: &str, node: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    (deployment, node).hash(&mut hasher);
    hasher.finish()
}

fn jittered(rng: &mut ChaCha8Rng, max: Duration) -> Duration {
    max.mul_f64(rng.random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first heal waits of two nodes of one deployment differ; one node's
    /// are the same from run to run.
    #[test]
    fn nodes_of_one_deployment_jitter_apart() {
        let first_wait = |node: &str| {
            let mut rng = ChaCha8Rng::seed_from_u64(jitter_seed("nc-1", node));
            jittered(&mut rng, Duration::from_secs(60))
        };
        assert_ne!(first_wait("host1,host2,host3"), first_wait("host4,host5,host6"));
        assert_eq!(first_wait("host1,host2,host3"), first_wait("host1,host2,host3"));
    }
}
