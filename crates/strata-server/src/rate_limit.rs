//! A token bucket over samples per second, shared by all writers.

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
    /// there (at least 1, as `Retry-After` counts whole seconds).
    pub fn take(&self, n: usize) -> Result<(), u64> {
        let mut st = self.state.lock();
        let now = Instant::now();
        let refill = now.duration_since(st.1).as_secs_f64() * self.rate;
        st.0 = (st.0 + refill).min(self.burst);
        st.1 = now;
        let need = n as f64;
        if st.0 >= need {
            st.0 -= need;
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
}
