//! The failure limiter: per client address, how many credentials that
//! need bcrypt it may still present before it is answered 429.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// Most client addresses the failure limiter tracks; past it, addresses
/// whose bucket has refilled are forgotten, then the longest idle.
const MAX_TRACKED_ADDRESSES: usize = 16_384;
/// Per client address, a bucket of failure tokens refilled at `rate` per
/// second up to `burst`: each credential that needs bcrypt takes one, a
/// verified one gives it back. IPv6 addresses count by their /64, the
/// block one host usually has.
pub(super) struct FailureLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<FxHashMap<IpAddr, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now`.
    fn level(&self, now: Instant, rate: f64, burst: f64) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * rate).min(burst)
    }
}

/// The key an address is limited by.
fn limit_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
    }
}

impl FailureLimiter {
    pub(super) fn new(rate: u32, burst: u32) -> Self {
        Self {
            rate: f64::from(rate),
            burst: f64::from(burst),
            buckets: Mutex::new(FxHashMap::default()),
        }
    }

    /// Takes a token of `ip`'s bucket, or says how long until there is one.
    pub(super) fn take(&self, ip: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let Some(ip) = ip.filter(|_| self.rate > 0.0) else {
            return Ok(());
        };
        let key = limit_key(ip);
        let (rate, burst) = (self.rate, self.burst);
        let mut buckets = self.buckets.lock();
        if !buckets.contains_key(&key) && buckets.len() >= MAX_TRACKED_ADDRESSES {
            // A full bucket is the same as none.
            buckets.retain(|_, b| b.level(now, rate, burst) < burst);
            if buckets.len() >= MAX_TRACKED_ADDRESSES {
                // Still full: the eighth idle longest go, so that a flood
                // of new addresses pays for this walk once in many.
                let mut last_seen: Vec<Instant> = buckets.values().map(|b| b.at).collect();
                let (_, cut, _) = last_seen.select_nth_unstable(MAX_TRACKED_ADDRESSES / 8);
                let cut = *cut;
                buckets.retain(|_, b| b.at > cut);
            }
        }
        let b = buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let level = b.level(now, rate, burst);
        b.at = now;
        if level >= 1.0 {
            b.tokens = level - 1.0;
            Ok(())
        } else {
            b.tokens = level;
            Err(Duration::from_secs_f64((1.0 - level) / rate))
        }
    }

    /// Gives back the token a verified credential took.
    pub(super) fn give_back(&self, ip: Option<IpAddr>) {
        let Some(ip) = ip.filter(|_| self.rate > 0.0) else {
            return;
        };
        if let Some(b) = self.buckets.lock().get_mut(&limit_key(ip)) {
            b.tokens = (b.tokens + 1.0).min(self.burst);
        }
    }

    /// Addresses tracked.
    pub(super) fn len(&self) -> usize {
        self.buckets.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_buckets_per_address() {
        let l = FailureLimiter::new(10, 20);
        let t0 = Instant::now();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let b = Some(IpAddr::from([10, 0, 0, 2]));
        for _ in 0..20 {
            assert!(l.take(a, t0).is_ok());
        }
        let wait = l.take(a, t0).unwrap_err();
        assert!(
            wait <= Duration::from_millis(100) && wait > Duration::ZERO,
            "{wait:?}"
        );
        assert!(l.take(b, t0).is_ok(), "another address has its own bucket");
        assert!(l.take(None, t0).is_ok(), "no address, no limit");
        // A tenth of a second refills one token.
        assert!(l.take(a, t0 + Duration::from_millis(101)).is_ok());
        assert!(l.take(a, t0 + Duration::from_millis(102)).is_err());
        // A verified credential gives its token back.
        l.give_back(a);
        assert!(l.take(a, t0 + Duration::from_millis(103)).is_ok());
        // IPv6 addresses count by /64; v4-mapped ones as IPv4.
        let v6 = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        for _ in 0..20 {
            assert!(l.take(v6("2001:db8::1"), t0).is_ok());
        }
        assert!(l.take(v6("2001:db8::ffff:2"), t0).is_err());
        assert!(l.take(v6("2001:db8:0:1::1"), t0).is_ok());
        assert!(l.take(v6("::ffff:10.0.0.2"), t0).is_ok());
        assert_eq!(l.len(), 4);
        // Rate 0: no limit, nothing tracked.
        let off = FailureLimiter::new(0, 0);
        for _ in 0..100 {
            assert!(off.take(a, t0).is_ok());
        }
        assert_eq!(off.len(), 0);
    }

    #[test]
    fn limiter_memory_is_bounded() {
        let l = FailureLimiter::new(1, 2);
        let t0 = Instant::now();
        for i in 0..(MAX_TRACKED_ADDRESSES as u32) {
            assert!(l.take(Some(IpAddr::from(i.to_be_bytes())), t0).is_ok());
        }
        assert_eq!(l.len(), MAX_TRACKED_ADDRESSES);
        // Once their buckets have refilled, addresses are forgotten.
        let later = t0 + Duration::from_secs(10);
        assert!(l.take(Some(IpAddr::from([255, 2, 3, 4])), later).is_ok());
        assert_eq!(l.len(), 1);
        for i in 0..(MAX_TRACKED_ADDRESSES as u32 + 100) {
            assert!(l.take(Some(IpAddr::from(i.to_be_bytes())), later).is_ok());
            assert!(l.len() <= MAX_TRACKED_ADDRESSES);
        }
        // The longest idle go first.
        let l = FailureLimiter::new(1, 2);
        let at = |i: u32| t0 + Duration::from_millis(u64::from(i) / 100);
        for i in 0..(MAX_TRACKED_ADDRESSES as u32 + 1) {
            assert!(l.take(Some(IpAddr::from(i.to_be_bytes())), at(i)).is_ok());
        }
        assert!(l.len() <= MAX_TRACKED_ADDRESSES * 7 / 8 + 1, "{}", l.len());
        assert!(l.len() > MAX_TRACKED_ADDRESSES / 2, "{}", l.len());
        let newest = IpAddr::from((MAX_TRACKED_ADDRESSES as u32 - 1).to_be_bytes());
        assert!(l.buckets.lock().contains_key(&newest));
        assert!(!l.buckets.lock().contains_key(&IpAddr::from([0, 0, 0, 0])));
    }
}
