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

use crate::{Compute, Result};

impl Compute {
    /// Starts the operation lease/takeover loop, and the heal, GC and purge loops
    /// (each only if its interval is non-zero).
    pub fn spawn_loops(self: &Arc<Self>) -> Vec<JoinHandle<()>> {
        let seed = jitter_seed(self.deployment.as_str(), &self.runner.owner.node);
        let mut loops = vec![self.spawn_operation_loops()];
        for (turn, sweep) in [Sweep::Heal, Sweep::Gc, Sweep::Purge].into_iter().enumerate() {
            if !sweep.period(self).0.is_zero() {
                loops.push(spawn_sweep(Arc::clone(self), sweep, seed.rotate_left(turn as u32)));
            }
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

/// The periodic passes, each with its own loop.
#[derive(Clone, Copy)]
enum Sweep {
    Heal,
    Gc,
    Purge,
}

impl Sweep {
    /// The interval between passes and the most jitter added to it.
    fn period(self, compute: &Compute) -> (Duration, Duration) {
        let config = &compute.config;
        match self {
            Self::Heal => (config.heal.interval, config.heal.jitter),
            Self::Gc => (config.gc.interval, config.gc.interval / 10),
            Self::Purge => (config.retention.interval, config.retention.interval / 10),
        }
    }

    async fn run(self, compute: &Arc<Compute>) -> Result<()> {
        match self {
            Self::Heal => compute.heal_due_shards().await.map(drop),
            Self::Gc => compute.gc().await.map(drop),
            Self::Purge => compute.purge_expired().await.map(drop),
        }
    }

    /// The `loop` label of `netcache_pass_failures_total`.
    fn label(self) -> &'static str {
        match self {
            Self::Heal => "heal",
            Self::Gc => "gc",
            Self::Purge => "purge",
        }
    }

    /// What the log calls it.
    fn name(self) -> &'static str {
        match self {
            Self::Heal => "Heal pass",
            Self::Gc => "GC pass",
            Self::Purge => "Purge",
        }
    }
}

/// Spawns one sweep's loop: each pass waits the sweep's interval plus a part of
/// its jitter drawn from an RNG seeded with `seed`. A failed pass is counted
/// and logged; the next one runs at its time.
fn spawn_sweep(compute: Arc<Compute>, sweep: Sweep, seed: u64) -> JoinHandle<()> {
    let (interval, jitter) = sweep.period(&compute);
    tokio::spawn(async move {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        loop {
            tokio::time::sleep(interval + jittered(&mut rng, jitter)).await;
            if let Err(e) = sweep.run(&compute).await {
                metrics::counter!("netcache_pass_failures_total", "loop" => sweep.label()).increment(1);
                error!(error = %e, "{} failed: {e}", sweep.name());
            }
        }
    })
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
