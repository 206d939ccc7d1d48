//! Wall-clock time derived from tokio's clock, so tests under a paused clock see
//! timestamps move exactly as far as the virtual time does; [`Clock::advance`]
//! moves netcache's notion of now forward without waiting (GC grace periods in
//! tests and drills).

use std::sync::Mutex;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use tokio::time::Instant;

#[derive(Debug)]
pub struct Clock {
    wall_at_start: DateTime<Utc>,
    tokio_at_start: Instant,
    offset: Mutex<TimeDelta>,
}

impl Clock {
    #[must_use]
    pub fn new() -> Self {
        Self {
            wall_at_start: Utc::now(),
            tokio_at_start: Instant::now(),
            offset: Mutex::new(TimeDelta::zero()),
        }
    }

    /// Now, to the microsecond (what both stores keep exactly).
    pub fn now(&self) -> DateTime<Utc> {
        let elapsed = TimeDelta::from_std(self.tokio_at_start.elapsed()).unwrap_or(TimeDelta::MAX);
        let now = self.wall_at_start + elapsed + *self.offset.lock().expect("clock lock");
        now.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(now)
    }

    /// Moves now forward by `by`.
    pub fn advance(&self, by: TimeDelta) {
        *self.offset.lock().expect("clock lock") += by;
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
