//! A token bucket over samples per second, shared by all writers.
//!
//! A request larger than the burst could never find that many tokens; it
//! is admitted when the bucket is full and leaves it in debt, so that the
//! requests after it wait out its cost and the rate still holds on
//! average. (Prometheus and vmagent cannot split a request they were
//! refused, so a refusal that can never pass would block them for good.)

use std::time::Instant;

use parking_lot::Mutex;

pub struct RateLimiter {
    rate: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl RateLimiter {
    pub fn new(rate_per_sec: u64, burst: u64) -> Self {
        Self {
            rate: rate_per_sec as f64,
            burst: burst as f64,
            state: Mutex::new((burst as f64, Instant::now())),
        }
    }

    /// Takes `n` tokens, or answers how many seconds until they would be
    /// there (at least 1, as `Retry-After` counts whole seconds). More than
    /// the burst is taken from a full bucket, leaving it in debt.
    pub fn take(&self, n: usize) -> Result<(), u64> {
        let mut st = self.state.lock();
        let now = Instant::now();
        let refill = now.duration_since(st.1).as_secs_f64() * self.rate;
        st.0 = (st.0 + refill).min(self.burst);
        st.1 = now;
        let take = n as f64;
        let need = take.min(self.burst);
        if st.0 >= need {
            st.0 -= take;
            Ok(())
        } else {
            let wait = ((need - st.0) / self.rate).ceil().max(1.0);
            Err(wait as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refuse() {
        let r = RateLimiter::new(100, 200);
        assert!(r.take(150).is_ok());
        assert!(r.take(40).is_ok());
        assert!(r.take(100).is_err());
    }

    #[test]
    fn more_than_the_burst_passes_from_a_full_bucket_and_leaves_debt() {
        let r = RateLimiter::new(5, 10);
        // 20 samples, twice the burst: admitted, the bucket now owes 10.
        assert!(r.take(20).is_ok());
        // The next request waits for the debt and its own cost: 12 tokens
        // at 5 a second.
        assert_eq!(r.take(2), Err(3));
        // Another large one waits for a full bucket: 20 tokens, 4 s.
        assert_eq!(r.take(20), Err(4));
    }
}
