//! Wall-clock time derived from tokio's clock, so tests under a paused clock see
//! timestamps move exactly as far as the virtual time does.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct Clock {
    wall_at_start: DateTime<Utc>,
    tokio_at_start: Instant,
}

impl Clock {
    pub fn new() -> Self {
        Self {
            wall_at_start: Utc::now(),
            tokio_at_start: Instant::now(),
        }
    }

    /// Now, to the microsecond (what both stores keep exactly).
    pub fn now(&self) -> DateTime<Utc> {
        let elapsed = TimeDelta::from_std(self.tokio_at_start.elapsed()).unwrap_or(TimeDelta::MAX);
        let now = self.wall_at_start + elapsed;
        now.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(now)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
