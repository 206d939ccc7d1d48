//! The run's clock and the in-memory history every task appends to.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::history::{FaultWindow, Kill, NeutronTimeline, PortObs, Record, RunData, SampleSource, ServerSample};

pub struct Recorder {
    started: Instant,
    data: Mutex<RunData>,
    next_seq: Mutex<u64>,
    /// (server, source) → index of its latest sample, to fold repeats.
    latest: Mutex<HashMap<(String, bool), usize>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    #[must_use]
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            data: Mutex::new(RunData::default()),
            // Workload records use their operation index; others count from here.
            next_seq: Mutex::new(1 << 32),
            latest: Mutex::new(HashMap::new()),
        }
    }

    /// Milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn with<T>(&self, f: impl FnOnce(&mut RunData) -> T) -> T {
        f(&mut self.data.lock().expect("history lock"))
    }

    /// A sequence number for records outside the workload's operation stream.
    pub fn seq(&self) -> u64 {
        let mut next = self.next_seq.lock().expect("seq lock");
        *next += 1;
        *next
    }

    pub fn record(&self, record: Record) {
        self.with(|d| d.records.push(record));
    }

    /// Appends a sample, or folds it into the server's previous one when that showed
    /// exactly the same.
    pub fn sample(&self, sample: ServerSample) {
        let key = (sample.server.clone(), sample.source == SampleSource::Addresses);
        let mut latest = self.latest.lock().expect("samples lock");
        self.with(|d| {
            if let Some(&i) = latest.get(&key)
                && d.samples[i].same_view(&sample)
            {
                d.samples[i].last_start_ms = sample.start_ms;
                return;
            }
            latest.insert(key, d.samples.len());
            d.samples.push(sample);
        });
    }

    pub fn neutron_list(&self, start_ms: u64, end_ms: u64, ports: &[PortObs]) {
        self.with(|d| d.neutron.observe(start_ms, end_ms, ports));
    }

    pub fn fault_window(&self, window: FaultWindow) {
        self.with(|d| d.faults.push(window));
    }

    pub fn kill(&self, kill: Kill) {
        self.with(|d| d.kills.push(kill));
    }

    pub fn kill_ready(&self, process: usize, at_ms: u64, ready_ms: Option<u64>) {
        self.with(|d| {
            if let Some(k) = d.kills.iter_mut().find(|k| k.process == process && k.at_ms == at_ms) {
                k.ready_ms = ready_ms;
            }
        });
    }

    pub fn timeline(&self) -> NeutronTimeline {
        self.with(|d| d.neutron.clone())
    }

    /// The history so far, records in start order.
    pub fn snapshot(&self) -> RunData {
        let mut data = self.with(|d| d.clone());
        data.records.sort_by_key(|r| (r.start_ms, r.seq));
        data
    }
}
