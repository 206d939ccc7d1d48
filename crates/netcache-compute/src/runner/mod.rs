//! The operation runner. Here its state: which servers' operations run in this
//! process (each in a [`Slot`] freed on every exit, a panic's too), the worker
//! permits, the requests waiting for an outcome, and the node lock that lets
//! this process take its own node's work over at once. Request-side code starts
//! operations through [`submit`]; [`run`] runs them inside the [`fence`], each
//! kind through its [`step::OperationStep`]; leases and claims are in
//! [`leases`], the bounded retries and the fault at the cap in [`attempts`].
//!
//! Every waiter is answered on every exit: with the outcome its operation kept,
//! with [`Answer::Follow`] when this process stopped running it (another took
//! it over, or the finish was lost), after which the request follows the row to
//! its end; only a simulated crash drops it, as a dead process would.
//!
//! Beside it, the work that runs on its own schedule: the periodic loops
//! ([`loops`]), the deployment-wide singleton lease a GC pass runs under
//! ([`singleton`]), retention's purge ([`retention`]), and what the rest of
//! compute asks about operation rows ([`operations`]).
//!
//! Never here: what an operation does. The runner names no kind's code; it
//! is handed its table of kinds (`operation_kinds.rs`, one floor above).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use netcache_domain::ServerId;
use netcache_domain::operation::{OperationKind, Owner};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use self::step::{OperationStep, Steps};
use crate::config::OperationsConfig;
use crate::{Interface, Result};

pub(crate) mod attempts;
pub(crate) mod fence;
pub(crate) mod leases;
pub(crate) mod loops;
pub(crate) mod operations;
pub(crate) mod retention;
pub(crate) mod run;
pub(crate) mod singleton;
pub(crate) mod step;
pub(crate) mod submit;

/// What an operation's waiting API request learns once it is finished.
pub(crate) enum Outcome {
    /// An attach's new interface.
    Attached(Box<Interface>),
    /// A change applied to the server's ports.
    Applied,
}

/// What a waiting request is told.
pub(crate) enum Answer {
    /// The operation's own outcome.
    Outcome(Result<Outcome>),
    /// This process no longer runs the operation: its outcome is in the records
    /// once the row is gone.
    Follow,
}

/// The runner's state, one per process.
pub(crate) struct OperationRunner {
    /// This process: its node (named by its hosts) and incarnation.
    pub(crate) owner: Owner,
    pub(crate) config: OperationsConfig,
    /// Proof that no other live process runs this node (held by `serve`).
    node_lock: tokio::sync::Mutex<Option<netcache_store::NodeLock>>,
    /// Set while the node lock is lost: this process takes no new work.
    node_lock_lost: AtomicBool,
    /// Servers whose operation runs (or waits for a worker) in this process.
    running: Mutex<HashSet<ServerId>>,
    permits: Arc<Semaphore>,
    waiters: Mutex<HashMap<uuid::Uuid, oneshot::Sender<Answer>>>,
    /// Outcomes of operations done but not yet finished (then handed to the waiter).
    outcomes: Mutex<HashMap<uuid::Uuid, Result<Outcome>>>,
    steps: Steps,
}

impl OperationRunner {
    pub(crate) fn new(owner: Owner, config: OperationsConfig, steps: Steps) -> Arc<Self> {
        let workers = config.workers.max(1);
        Arc::new(Self {
            owner,
            config,
            node_lock: tokio::sync::Mutex::new(None),
            node_lock_lost: AtomicBool::new(false),
            running: Mutex::new(HashSet::new()),
            permits: Arc::new(Semaphore::new(workers)),
            waiters: Mutex::new(HashMap::new()),
            outcomes: Mutex::new(HashMap::new()),
            steps,
        })
    }

    /// The step of an operation kind.
    pub(crate) fn step(&self, kind: OperationKind) -> &'static dyn OperationStep {
        (self.steps)(kind)
    }

    /// A lease's length, as the database adds it to its clock.
    pub(crate) fn lease(&self) -> chrono::TimeDelta {
        chrono::TimeDelta::from_std(self.config.lease).unwrap_or(chrono::TimeDelta::seconds(30))
    }

    /// Takes the server's slot in this process, unless its operation runs here already.
    pub(crate) fn take_slot(self: &Arc<Self>, server_id: ServerId) -> Option<Slot> {
        let mut running = self.running.lock().expect("running");
        if !running.insert(server_id) {
            return None;
        }
        metrics::gauge!("netcache_operations_held").set(running.len() as f64);
        Some(Slot {
            runner: Arc::clone(self),
            server_id,
        })
    }

    /// Servers whose operations this process runs or holds.
    pub(crate) fn running_servers(&self) -> Vec<ServerId> {
        self.running.lock().expect("running").iter().copied().collect()
    }

    pub(crate) fn is_running(&self, server_id: ServerId) -> bool {
        self.running.lock().expect("running").contains(&server_id)
    }

    /// How many more operations this process may hold.
    pub(crate) fn free_places(&self) -> usize {
        self.config
            .max_queued
            .saturating_sub(self.running.lock().expect("running").len())
    }

    /// A worker for one operation's run, held until the guard drops; the
    /// busy-workers gauge follows both ends.
    pub(crate) async fn worker(self: &Arc<Self>) -> Option<Worker> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.ok()?;
        self.record_busy_workers(0);
        Some(Worker {
            runner: Arc::clone(self),
            _permit: permit,
        })
    }

    /// Sets the busy-workers gauge, less `leaving` workers about to give theirs back.
    fn record_busy_workers(&self, leaving: usize) {
        let busy = self.config.workers.max(1) - self.permits.available_permits();
        metrics::gauge!("netcache_operation_workers_busy").set(busy.saturating_sub(leaving) as f64);
    }

    pub(crate) fn wait_for(&self, id: uuid::Uuid) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().expect("waiters").insert(id, tx);
        rx
    }

    pub(crate) fn forget_waiter(&self, id: uuid::Uuid) {
        self.waiters.lock().expect("waiters").remove(&id);
    }

    /// Keeps an operation's outcome for its waiting request, handed over once
    /// the operation is finished.
    pub(crate) fn keep_outcome(&self, id: uuid::Uuid, outcome: Result<Outcome>) {
        self.outcomes.lock().expect("outcomes").insert(id, outcome);
    }

    /// Answers the request waiting for `id`, if any: with the kept outcome, or
    /// else [`Answer::Follow`]. Called on every exit of a run but a crash.
    pub(crate) fn answer(&self, id: uuid::Uuid) {
        let outcome = self.outcomes.lock().expect("outcomes").remove(&id);
        let Some(waiter) = self.waiters.lock().expect("waiters").remove(&id) else {
            return;
        };
        let _ = waiter.send(outcome.map_or(Answer::Follow, Answer::Outcome));
    }

    /// A dead process answers nobody: the waiter and any outcome are dropped.
    pub(crate) fn drop_waiter(&self, id: uuid::Uuid) {
        self.outcomes.lock().expect("outcomes").remove(&id);
        self.forget_waiter(id);
    }

    pub(crate) async fn hold_node_lock(&self, lock: netcache_store::NodeLock) {
        *self.node_lock.lock().await = Some(lock);
        self.node_lock_lost.store(false, Ordering::SeqCst);
        metrics::gauge!("netcache_node_lock_held").set(1.0);
    }

    /// Drops the node lock (a simulated death frees the node for a restart).
    #[cfg(feature = "testing")]
    pub(crate) fn release_node_lock(self: &Arc<Self>) {
        if let Ok(mut lock) = self.node_lock.try_lock() {
            lock.take();
            return;
        }
        let runner = Arc::clone(self);
        tokio::spawn(async move { runner.node_lock.lock().await.take() });
    }

    /// Whether this process may take work: false while its node lock is lost.
    pub(crate) fn takes_work(&self) -> bool {
        !self.node_lock_lost.load(Ordering::SeqCst)
    }
}

/// A worker of the pool; given back when dropped, whatever the exit.
pub(crate) struct Worker {
    runner: Arc<OperationRunner>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The permit is a field, given back after this body: count it out.
        self.runner.record_busy_workers(1);
    }
}

/// A server's place in the runner; freed when dropped, whatever the exit.
pub(crate) struct Slot {
    runner: Arc<OperationRunner>,
    server_id: ServerId,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut running = self
            .runner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        running.remove(&self.server_id);
        metrics::gauge!("netcache_operations_held").set(running.len() as f64);
    }
}

impl OperationRunner {
    /// Whether the node lock is still held; `None` if this process holds none
    /// (a one-off command, or before `serve` took it).
    pub(crate) async fn node_lock_held(&self) -> Option<bool> {
        let lock = self.node_lock.lock().await;
        match lock.as_ref() {
            Some(lock) => Some(lock.is_held().await),
            None if self.node_lock_lost.load(Ordering::SeqCst) => Some(false),
            None => None,
        }
    }

    pub(crate) fn mark_node_lock_lost(&self) {
        self.node_lock_lost.store(true, Ordering::SeqCst);
        metrics::gauge!("netcache_node_lock_held").set(0.0);
    }
}
