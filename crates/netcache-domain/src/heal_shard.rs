//! Heal's shards: the servers divided by the first hex digit of their id into
//! sixteen ranges, so the processes of one deployment share a sweep instead of
//! each repeating it. A process takes a shard with a deployment-wide lease that
//! lasts until the shard is due again (see [`due_after`]), and sweeps it; a
//! shard whose process died is taken by another once that lease runs out.

use std::time::Duration;

use uuid::Uuid;

use crate::ServerId;

/// One of the [`HealShard::COUNT`] ranges of server ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HealShard(u8);

impl HealShard {
    pub const COUNT: u8 = 16;

    /// Every shard, in id order.
    pub fn all() -> impl Iterator<Item = HealShard> {
        (0..Self::COUNT).map(HealShard)
    }

    /// Every shard, starting at the one `start` names (modulo the count): the
    /// processes of a deployment start apart, so that passes running at once
    /// take different shards first.
    pub fn all_from(start: u64) -> impl Iterator<Item = HealShard> {
        let first = (start % u64::from(Self::COUNT)) as u8;
        (0..Self::COUNT).map(move |i| HealShard((first + i) % Self::COUNT))
    }

    /// The shard a server is in.
    #[must_use]
    pub fn of(server: ServerId) -> Self {
        Self((server.0.as_u128() >> 124) as u8)
    }

    /// The first and last ids of the shard, both included.
    #[must_use]
    pub fn range(self) -> (ServerId, ServerId) {
        let first = u128::from(self.0) << 124;
        let last = first | (u128::MAX >> 4);
        (ServerId(Uuid::from_u128(first)), ServerId(Uuid::from_u128(last)))
    }

    /// The name of the shard's lease.
    #[must_use]
    pub fn lease_name(self) -> String {
        format!("heal-shard-{:x}", self.0)
    }
}

/// How long a pass that takes a shard `elapsed` after it started holds it: until
/// nine tenths of the heal interval after the pass started. A process's next
/// pass comes at least an interval later, so it finds every shard it swept due
/// again; a shard another process swept is left to it until then. Never less
/// than `floor` (the operation lease), so a shard is held while it is swept.
#[must_use]
pub fn due_after(interval: Duration, elapsed: Duration, floor: Duration) -> Duration {
    (interval.mul_f64(0.9).saturating_sub(elapsed)).max(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_cover_every_id_once_in_order() {
        let shards: Vec<HealShard> = HealShard::all().collect();
        assert_eq!(shards.len(), 16);
        assert_eq!(shards[0].range().0, ServerId(Uuid::nil()));
        assert_eq!(shards[15].range().1, ServerId(Uuid::max()));
        for pair in shards.windows(2) {
            let (_, last) = pair[0].range();
            let (next_first, _) = pair[1].range();
            assert_eq!(last.0.as_u128() + 1, next_first.0.as_u128());
        }
        let id: ServerId = "a1b2c3d4-0000-4000-8000-000000000000".parse().unwrap();
        let shard = HealShard::of(id);
        assert_eq!(shard.lease_name(), "heal-shard-a");
        let (first, last) = shard.range();
        assert!(first <= id && id <= last);
    }

    #[test]
    fn processes_start_apart_and_visit_every_shard() {
        let from_five: Vec<HealShard> = HealShard::all_from(21).collect();
        assert_eq!(from_five[0], HealShard(5));
        assert_eq!(from_five[11], HealShard(0));
        let mut sorted = from_five;
        sorted.sort();
        assert_eq!(sorted, HealShard::all().collect::<Vec<_>>());
    }

    #[test]
    fn a_shard_is_due_again_before_the_next_pass_of_the_process_that_swept_it() {
        let minute = Duration::from_secs(60);
        let lease = Duration::from_secs(30);
        assert_eq!(due_after(minute, Duration::ZERO, lease), Duration::from_secs(54));
        assert_eq!(
            due_after(minute, Duration::from_secs(20), lease),
            Duration::from_secs(34)
        );
        assert_eq!(
            due_after(minute, Duration::from_secs(50), lease),
            lease,
            "held while swept"
        );
    }
}
