//! What one side remembers between requests: the credentials bcrypt
//! accepted, until they expire, and the verifications under way that later
//! requests for the same credential wait for.

use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use tokio::sync::oneshot;

/// One side's verified credentials and the verifications under way.
pub(super) struct Verified {
    pub(super) cache: SuccessCache,
    /// Digest -> the requests waiting for its verification.
    pub(super) pending: FxHashMap<[u8; 32], Vec<oneshot::Sender<bool>>>,
}

/// Credentials bcrypt accepted, by digest, each until it expires. Only
/// successes: a wrong credential never takes a place.
pub(super) struct SuccessCache {
    ttl: Duration,
    capacity: usize,
    /// Digest -> when it stops counting as verified.
    expires: FxHashMap<[u8; 32], Instant>,
}

impl SuccessCache {
    pub(super) fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            expires: FxHashMap::default(),
        }
    }

    /// Whether `d` was verified less than the TTL before `now`.
    pub(super) fn contains(&mut self, d: &[u8; 32], now: Instant) -> bool {
        match self.expires.get(d) {
            Some(&until) if until > now => true,
            Some(_) => {
                self.expires.remove(d);
                false
            }
            None => false,
        }
    }

    /// Remembers `d` as verified at `now`. When full, expired entries go
    /// first, then the one closest to expiring.
    pub(super) fn insert(&mut self, d: [u8; 32], now: Instant) {
        if self.capacity == 0 || self.ttl.is_zero() {
            return;
        }
        if !self.expires.contains_key(&d) && self.expires.len() >= self.capacity {
            self.expires.retain(|_, until| *until > now);
            if self.expires.len() >= self.capacity {
                if let Some(oldest) = self
                    .expires
                    .iter()
                    .min_by_key(|(_, until)| **until)
                    .map(|(k, _)| *k)
                {
                    self.expires.remove(&oldest);
                }
            }
        }
        self.expires.insert(d, now + self.ttl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_cache_expires_and_evicts_the_oldest() {
        let t0 = Instant::now();
        let min = Duration::from_secs(60);
        let mut c = SuccessCache::new(5 * min, 2);
        c.insert([1; 32], t0);
        assert!(c.contains(&[1; 32], t0 + min));
        assert!(!c.contains(&[1; 32], t0 + 5 * min));
        assert!(c.expires.is_empty(), "an expired entry is dropped");
        c.insert([1; 32], t0);
        c.insert([2; 32], t0 + min);
        c.insert([3; 32], t0 + 2 * min);
        assert!(!c.contains(&[1; 32], t0 + 2 * min), "the oldest went");
        assert!(c.contains(&[2; 32], t0 + 2 * min));
        assert!(c.contains(&[3; 32], t0 + 2 * min));
        // Expired entries go before live ones.
        c.insert([4; 32], t0 + 6 * min + Duration::from_secs(1));
        assert!(c.contains(&[3; 32], t0 + 6 * min + Duration::from_secs(1)));
        assert!(c.contains(&[4; 32], t0 + 6 * min + Duration::from_secs(1)));
        // No TTL or no room: nothing is remembered.
        let mut off = SuccessCache::new(Duration::ZERO, 10);
        off.insert([1; 32], t0);
        assert!(!off.contains(&[1; 32], t0));
    }
}
