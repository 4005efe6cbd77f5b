//! What all running queries share: a bound on how many run at once (the
//! others wait their turn, within their timeout) and on the samples they
//! hold together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::engine::QueryLimits;
use crate::error::QueryError;

/// The admission state of every query an engine (or a router) runs.
#[derive(Debug)]
pub struct QueryGate {
    running: tokio::sync::Semaphore,
    max_concurrent: usize,
    /// Samples loaded by the running queries.
    held: AtomicUsize,
    max_total: usize,
}

/// A running query's turn; the next waiting query starts when it drops.
pub struct Turn<'a> {
    _permit: tokio::sync::SemaphorePermit<'a>,
}

/// Samples a query holds against the shared budget, given back on drop.
pub struct Reservation<'a> {
    gate: &'a QueryGate,
    samples: usize,
}

impl QueryGate {
    pub fn new(limits: &QueryLimits) -> Self {
        let max_concurrent = limits.max_concurrent.max(1);
        Self {
            running: tokio::sync::Semaphore::new(max_concurrent),
            max_concurrent,
            held: AtomicUsize::new(0),
            max_total: limits.max_samples_total,
        }
    }

    /// Waits for a turn to run, at most until `deadline`.
    pub async fn turn(&self, deadline: Instant) -> Result<Turn<'_>, QueryError> {
        match tokio::time::timeout_at(deadline.into(), self.running.acquire()).await {
            Ok(Ok(permit)) => Ok(Turn { _permit: permit }),
            Ok(Err(_)) => Err(QueryError::Internal("the query gate is closed".into())),
            Err(_) => Err(QueryError::Timeout(format!(
                "query timed out in query queue: {} queries were running (query.max_concurrent)",
                self.max_concurrent
            ))),
        }
    }

    /// Takes `samples` from the budget all running queries share, or
    /// fails naming the limit when they would go over it.
    pub fn reserve(&self, samples: usize) -> Result<Reservation<'_>, QueryError> {
        let mut held = self.held.load(Ordering::Relaxed);
        loop {
            let total = held.saturating_add(samples);
            if total > self.max_total {
                return Err(QueryError::Unavailable(format!(
                    "this query loaded {samples} samples while running queries hold {held}: \
                     over query.max_samples_total ({}); retry when fewer queries run",
                    self.max_total
                )));
            }
            match self
                .held
                .compare_exchange_weak(held, total, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Ok(Reservation {
                        gate: self,
                        samples,
                    })
                }
                Err(now) => held = now,
            }
        }
    }

    /// Samples the running queries hold.
    pub fn held_samples(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.gate.held.fetch_sub(self.samples, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn gate(max_concurrent: usize, max_samples_total: usize) -> QueryGate {
        QueryGate::new(&QueryLimits {
            max_concurrent,
            max_samples_total,
            ..QueryLimits::default()
        })
    }

    #[tokio::test]
    async fn a_query_waits_for_a_turn_within_its_deadline() {
        let g = gate(1, 10);
        let first = g
            .turn(Instant::now() + Duration::from_secs(1))
            .await
            .unwrap();
        let err = g
            .turn(Instant::now() + Duration::from_millis(50))
            .await
            .err()
            .expect("no turn while one runs");
        assert!(err.to_string().contains("query.max_concurrent"), "{err}");
        drop(first);
        assert!(g
            .turn(Instant::now() + Duration::from_millis(50))
            .await
            .is_ok());
    }

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let g = gate(4, 100);
        let a = g.reserve(60).unwrap();
        let err = g.reserve(41).err().expect("over the budget");
        assert!(
            err.to_string().contains("query.max_samples_total (100)"),
            "{err}"
        );
        let b = g.reserve(40).unwrap();
        assert_eq!(g.held_samples(), 100);
        drop(a);
        drop(b);
        assert_eq!(g.held_samples(), 0);
    }
}
