//! Keystone's answers about tokens, kept by the token's SHA-256 (tokens
//! themselves never are) as keystonemiddleware's auth_token keeps them: a
//! valid token for `auth.cache_ttl` but never admitted past its `expires_at`,
//! and a refused one for `auth.cache_ttl` too, so a bogus token costs one
//! Keystone call per cache time, not one per request.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::Identity;

/// A token's SHA-256, with the kind of its validation.
pub(super) type Key = [u8; 32];

/// Entries of each kind (valid, refused) at which the stale are dropped; if
/// more than half are still fresh (a flood of tokens), all of that kind are,
/// so memory is bounded and a flood costs one scan per `CACHE_BOUND / 2`
/// tokens. Kept apart, refused tokens never evict a valid validation.
pub(super) const CACHE_BOUND: usize = 10_000;

/// What the cache knows of a token.
pub(super) enum Known {
    Valid(Identity),
    /// Refused by Keystone, or past its `expires_at`.
    Invalid,
}

pub(super) struct TokenCache {
    ttl: Duration,
    /// The identity, and the instant the token expires unless an expired
    /// token is acceptable (validated with `allow_expired`).
    valid: Expiring<(Identity, Option<Instant>)>,
    invalid: Expiring<()>,
}

impl TokenCache {
    pub(super) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            valid: Expiring::default(),
            invalid: Expiring::default(),
        }
    }

    pub(super) fn get(&self, key: &Key, now: Instant) -> Option<Known> {
        if let Some((identity, expires)) = self.valid.get(key, now) {
            // As keystonemiddleware: a cached token past its expiry is
            // refused, Keystone not asked again.
            return Some(match expires {
                Some(expires) if now >= *expires => Known::Invalid,
                _ => Known::Valid(identity.clone()),
            });
        }
        self.invalid.get(key, now).map(|()| Known::Invalid)
    }

    pub(super) fn valid(&mut self, key: Key, identity: Identity, expires: Option<Instant>, now: Instant) {
        self.valid.insert(key, (identity, expires), now + self.ttl, now);
    }

    pub(super) fn invalid(&mut self, key: Key, now: Instant) {
        self.invalid.insert(key, (), now + self.ttl, now);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.valid.entries.len() + self.invalid.entries.len()
    }
}

/// Entries each kept until an instant, at most [`CACHE_BOUND`] of them.
struct Expiring<V> {
    entries: HashMap<Key, (V, Instant)>,
}

impl<V> Default for Expiring<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
        }
    }
}

impl<V> Expiring<V> {
    fn get(&self, key: &Key, now: Instant) -> Option<&V> {
        self.entries
            .get(key)
            .filter(|(_, until)| now < *until)
            .map(|(value, _)| value)
    }

    fn insert(&mut self, key: Key, value: V, until: Instant, now: Instant) {
        if self.entries.len() >= CACHE_BOUND {
            self.entries.retain(|_, (_, until)| now < *until);
            if self.entries.len() > CACHE_BOUND / 2 {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (value, until));
    }
}
