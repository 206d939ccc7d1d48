//! `kill -9` of netcache processes at seeded points of the workload (operation
//! indices, so the points do not depend on timing), each followed by a seeded pause
//! and a restart on the same database and configuration.

use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::{Mutex, watch};
use tracing::{error, info};

use super::api::Api;
use super::history::Kill;
use super::recorder::Recorder;
use super::topology::Topology;

/// `kills` operation indices in the middle 80 % of `ops`, sorted, with a process each.
#[must_use]
pub fn schedule(seed: u64, kills: usize, ops: u64, processes: usize) -> Vec<(u64, usize)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 2);
    let (low, high) = (ops / 10, (ops * 9 / 10).max(ops / 10 + 1));
    let mut points: Vec<(u64, usize)> = (0..kills)
        .map(|_| (rng.random_range(low..high), rng.random_range(0..processes.max(1))))
        .collect();
    points.sort_unstable();
    points
}

/// Waits for each point (`progress` = operations started so far), kills, pauses,
/// restarts. Stops early when `stop` turns true.
pub async fn run(
    seed: u64,
    points: Vec<(u64, usize)>,
    topology: Arc<Mutex<Topology>>,
    api: Api,
    rec: Arc<Recorder>,
    mut progress: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 3);
    for (at_op, process) in points {
        if progress.wait_for(|done| *done >= at_op).await.is_err() || *stop.borrow() {
            return;
        }
        let pause = Duration::from_millis(rng.random_range(100..=1500));
        let mut topo = topology.lock().await;
        let at_ms = rec.now_ms();
        info!(
            process,
            at_op, "kill -9 of netcache process {process} (operation {at_op})"
        );
        api.set_down(process, true);
        if let Err(e) = topo.kill(process).await {
            error!(error = %e, "could not kill process {process}");
            continue;
        }
        rec.kill(Kill {
            process,
            at_ms,
            ready_ms: None,
        });
        tokio::time::sleep(pause).await;
        match topo.start_process(process).await {
            Ok(()) => {
                rec.kill_ready(process, at_ms, Some(rec.now_ms()));
                api.set_down(process, false);
            }
            Err(e) => error!(error = %e, "netcache process {process} did not come back"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_seeded_and_bounded() {
        let a = schedule(7, 5, 1000, 2);
        assert_eq!(a, schedule(7, 5, 1000, 2));
        assert_eq!(a.len(), 5);
        assert!(a.iter().all(|(op, p)| (100..900).contains(op) && *p < 2), "{a:?}");
        assert_eq!(schedule(7, 1, 3, 1).len(), 1);
    }
}
