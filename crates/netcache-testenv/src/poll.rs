//! The one place a test waits by sleeping: checking a condition again and
//! again, bounded so that a failing test ends rather than hangs. Under a paused
//! clock every pause is virtual and costs no real time.

use std::time::Duration;

/// How often a condition is checked.
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// Checks before giving up: 30 s of the test's clock, far past any wait that
/// succeeds (it only ends a failing test).
pub const MAX_CHECKS: u32 = 3000;

/// Checks `check` every [`POLL_INTERVAL`] until it answers `Some`; `None` if it
/// did not within [`MAX_CHECKS`] checks.
pub async fn poll<T>(mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    for _ in 0..MAX_CHECKS {
        if let Some(found) = check().await {
            return Some(found);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    None
}

/// [`poll`], panicking with `what` if the condition never held.
pub async fn eventually<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    poll(check)
        .await
        .unwrap_or_else(|| panic!("{what}: not within {MAX_CHECKS} checks"))
}

/// [`eventually`] for a condition with no value: until `check` is true.
pub async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    eventually(what, async || check().await.then_some(())).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_condition_is_checked_until_it_holds_and_no_longer() {
        let mut checks = 0;
        let found = poll(async || {
            checks += 1;
            (checks == 3).then_some(checks)
        })
        .await;
        assert_eq!(found, Some(3));
        assert_eq!(checks, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_condition_that_never_holds_ends_after_the_bound() {
        let started = tokio::time::Instant::now();
        assert_eq!(poll(async || None::<()>).await, None);
        assert_eq!(started.elapsed(), POLL_INTERVAL * MAX_CHECKS);
    }
}
