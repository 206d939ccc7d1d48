//! Retention: which deleted servers may be purged, with every row of theirs
//! (Nova's `archive_deleted_rows` and `purge`, without the shadow tables).

use chrono::{DateTime, TimeDelta, Utc};

/// Rows a purge removed, or would remove.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub servers: u64,
    pub intents: u64,
    pub actions: u64,
    pub events: u64,
}

impl Purged {
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            servers: self.servers + other.servers,
            intents: self.intents + other.intents,
            actions: self.actions + other.actions,
            events: self.events + other.events,
        }
    }
}

/// The deletion time before which servers are purged: what was asked for, but
/// never a server still watched for ghosts (heal looks for the ports of servers
/// deleted within `ghost_watch`, and a purged server is no longer looked at).
#[must_use]
pub fn purge_cutoff(requested: DateTime<Utc>, now: DateTime<Utc>, ghost_watch: TimeDelta) -> DateTime<Utc> {
    let watched_since = now.checked_sub_signed(ghost_watch).unwrap_or(DateTime::UNIX_EPOCH);
    requested.min(watched_since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_purge_never_reaches_into_the_ghost_watch() {
        let now = DateTime::UNIX_EPOCH + TimeDelta::days(100);
        let week = TimeDelta::days(7);
        let long_ago = now - TimeDelta::days(30);
        assert_eq!(purge_cutoff(long_ago, now, week), long_ago);
        assert_eq!(purge_cutoff(now, now, week), now - week, "clamped to the watch");
        assert_eq!(purge_cutoff(now, now, TimeDelta::MAX), DateTime::UNIX_EPOCH);
    }

    #[test]
    fn counts_add_up() {
        let one = Purged {
            servers: 1,
            intents: 2,
            actions: 3,
            events: 4,
        };
        assert_eq!(
            one.plus(one),
            Purged {
                servers: 2,
                intents: 4,
                actions: 6,
                events: 8
            }
        );
    }
}
