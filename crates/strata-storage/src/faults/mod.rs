//! A fault-injecting object store for tests: wraps any store and, per kind
//! of operation, adds latency, answers as S3 does to HTTP 500 or 503,
//! stalls, black-holes (never answers), or resets the connection, always,
//! for the next N calls, or with a probability. A cloneable [`Faults`]
//! handle changes the faults while the store is in use and counts what it
//! injected.
//!
//! ```
//! # use std::sync::Arc;
//! # use object_store::{memory::InMemory, ObjectStore};
//! use strata_storage::faults::{Fault, Faults, Op};
//! let faults = Faults::new();
//! let store: Arc<dyn ObjectStore> = faults.wrap(Arc::new(InMemory::new()));
//! faults.set(Op::Put, Fault::Status(503));
//! // ... every put now fails as an S3 client reports a 503 ...
//! faults.heal();
//! # drop(store);
//! ```

mod store;
#[cfg(test)]
mod tests;

pub use store::FaultyStore;
use store::{reset_error, status_error};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::{ObjectStore, Result};
use parking_lot::Mutex;
use strata_codec::rand::SplitMix64;
use tokio::sync::watch;

/// A kind of object-store operation; faults are set per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A single-request upload (`put_opts`).
    Put,
    /// A multipart upload: starting it, each part and completing it.
    PutMultipart,
    /// A read of an object or ranges of it (`get_opts`, `get_range(s)`).
    Get,
    /// A read of an object's metadata (`head`, `get_opts` with `head`).
    Head,
    /// A listing, with or without delimiter or offset.
    List,
    Delete,
    /// A server-side copy or rename.
    Copy,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::Put,
        Op::PutMultipart,
        Op::Get,
        Op::Head,
        Op::List,
        Op::Delete,
        Op::Copy,
    ];
    /// Operations that upload data.
    pub const WRITES: [Op; 2] = [Op::Put, Op::PutMultipart];
    /// Operations that read data or metadata.
    pub const READS: [Op; 3] = [Op::Get, Op::Head, Op::List];

    fn index(self) -> usize {
        self as usize
    }
}

/// What happens to an operation a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// The call waits this long, then goes to the store.
    Latency(Duration),
    /// The call fails as an S3 client reports this HTTP status (500, 503,
    /// ...): `object_store::Error::Generic` naming the status. The store
    /// never sees the call.
    Status(u16),
    /// The call waits until this fault is cleared (or changed), then goes
    /// to the store: a request held up somewhere that resumes.
    Stall,
    /// The call never answers, not even after the fault is cleared: a
    /// request lost in a network partition, on a connection that stays
    /// dead. Only dropping the call (a timeout) ends it; calls made after
    /// healing go to the store.
    BlackHole,
    /// The connection resets before the store sees the call: an error whose
    /// source is an `std::io::Error` of kind `ConnectionReset`.
    Reset,
    /// The store does the call, then the connection resets before the
    /// answer arrives: the caller sees a reset for work that was done.
    AnswerLost,
}

/// When a fault applies to a call of its kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    Always,
    /// The next `n` calls, then the fault clears itself.
    Next(u64),
    /// Each call with this probability (0.0 ..= 1.0), from a seeded PRNG.
    Probability(f64),
}

/// A fault and when it applies.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rule {
    fault: Fault,
    when: When,
}

#[derive(Debug, Default)]
struct Counters {
    calls: AtomicU64,
    injected: AtomicU64,
    /// Bumped each time this kind's fault is set or cleared: a stalled call
    /// waits for it to move.
    epoch: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    rules: Mutex<RuleSet>,
    counters: [Counters; Op::ALL.len()],
    /// Bumped on every change, to wake stalled calls.
    changed: watch::Sender<u64>,
}

#[derive(Debug)]
struct RuleSet {
    rules: [Option<Rule>; Op::ALL.len()],
    rng: SplitMix64,
}

/// The control handle of one or more [`FaultyStore`]s: set and clear
/// faults, and count calls and injected faults. Clones share state.
#[derive(Clone, Debug)]
pub struct Faults(Arc<Shared>);

impl Default for Faults {
    fn default() -> Self {
        Self::new()
    }
}

impl Faults {
    /// No faults; probabilities drawn from a fixed seed.
    pub fn new() -> Self {
        Self::with_seed(0x5eed)
    }

    /// No faults; probabilities drawn from `seed`.
    pub fn with_seed(seed: u64) -> Self {
        Self(Arc::new(Shared {
            rules: Mutex::new(RuleSet {
                rules: [None; Op::ALL.len()],
                rng: SplitMix64::new(seed),
            }),
            counters: Default::default(),
            changed: watch::channel(0).0,
        }))
    }

    /// `inner` behind a [`FaultyStore`] controlled by this handle.
    pub fn wrap(&self, inner: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(FaultyStore::new(inner, self.clone()))
    }

    /// Every call of kind `op` gets `fault`, until cleared.
    pub fn set(&self, op: Op, fault: Fault) {
        self.set_when(op, fault, When::Always);
    }

    /// Calls of kind `op` get `fault` as `when` says, replacing any fault
    /// set for `op` before.
    pub fn set_when(&self, op: Op, fault: Fault, when: When) {
        self.replace(op, Some(Rule { fault, when }));
    }

    /// The same fault on several kinds, e.g. [`Op::WRITES`].
    pub fn set_all(&self, ops: &[Op], fault: Fault, when: When) {
        for &op in ops {
            self.set_when(op, fault, when);
        }
    }

    /// Clears the fault of `op`; stalled calls of that kind go on.
    pub fn clear(&self, op: Op) {
        self.replace(op, None);
    }

    /// Clears every fault; stalled calls go on, black-holed calls stay
    /// unanswered. Counters are kept.
    pub fn heal(&self) {
        for op in Op::ALL {
            self.replace(op, None);
        }
    }

    /// Calls of kind `op` so far.
    pub fn calls(&self, op: Op) -> u64 {
        self.counters(op)
            .map_or(0, |c| c.calls.load(Ordering::Relaxed))
    }

    /// Faults injected into calls of kind `op` so far.
    pub fn injected(&self, op: Op) -> u64 {
        self.counters(op)
            .map_or(0, |c| c.injected.load(Ordering::Relaxed))
    }

    /// Faults injected into calls of any kind so far.
    pub fn injected_total(&self) -> u64 {
        Op::ALL.iter().map(|&op| self.injected(op)).sum()
    }

    fn counters(&self, op: Op) -> Option<&Counters> {
        self.0.counters.get(op.index())
    }

    fn replace(&self, op: Op, rule: Option<Rule>) {
        if let Some(slot) = self.0.rules.lock().rules.get_mut(op.index()) {
            *slot = rule;
        }
        if let Some(c) = self.counters(op) {
            c.epoch.fetch_add(1, Ordering::AcqRel);
        }
        self.0.changed.send_modify(|g| *g += 1);
    }

    /// Counts a call of kind `op` and picks the fault it gets, if any.
    fn pick(&self, op: Op) -> Option<Fault> {
        let counters = self.counters(op)?;
        counters.calls.fetch_add(1, Ordering::Relaxed);
        let mut set = self.0.rules.lock();
        let RuleSet { rules, rng } = &mut *set;
        let slot = rules.get_mut(op.index())?;
        let rule = (*slot)?;
        let applies = match rule.when {
            When::Always => true,
            When::Next(0) => false,
            When::Next(n) => {
                *slot = (n > 1).then_some(Rule {
                    when: When::Next(n - 1),
                    ..rule
                });
                true
            }
            When::Probability(p) => rng.unit() < p,
        };
        if !applies {
            return None;
        }
        counters.injected.fetch_add(1, Ordering::Relaxed);
        Some(rule.fault)
    }

    fn epoch(&self, op: Op) -> u64 {
        self.counters(op)
            .map_or(0, |c| c.epoch.load(Ordering::Acquire))
    }

    /// Applies the fault a call of kind `op` gets before it goes to the
    /// store. `Ok(true)`: do the call, then report its answer lost.
    async fn before(&self, op: Op) -> Result<bool> {
        // Subscribed before the pick, so no change after it is missed.
        let mut changed = self.0.changed.subscribe();
        let epoch = self.epoch(op);
        match self.pick(op) {
            None => Ok(false),
            Some(Fault::Latency(d)) => {
                tokio::time::sleep(d).await;
                Ok(false)
            }
            Some(Fault::Status(code)) => Err(status_error(op, code)),
            Some(Fault::Reset) => Err(reset_error(op)),
            Some(Fault::AnswerLost) => Ok(true),
            Some(Fault::BlackHole) => std::future::pending().await,
            Some(Fault::Stall) => {
                while self.epoch(op) == epoch {
                    if changed.changed().await.is_err() {
                        break;
                    }
                }
                Ok(false)
            }
        }
    }

    /// Runs `call` under the fault `op` gets.
    async fn run<T>(
        &self,
        op: Op,
        call: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let lose_answer = self.before(op).await?;
        let answer = call.await;
        if lose_answer && answer.is_ok() {
            return Err(reset_error(op));
        }
        answer
    }

    /// `stream` under the fault `op` gets, applied when it is first polled.
    fn stream<T: Send + 'static>(
        &self,
        op: Op,
        stream: BoxStream<'static, Result<T>>,
    ) -> BoxStream<'static, Result<T>> {
        let faults = self.clone();
        futures::stream::once(async move {
            match faults.before(op).await {
                Ok(false) => stream,
                // The whole answer is produced, then cut off.
                Ok(true) => stream
                    .chain(futures::stream::once(async move { Err(reset_error(op)) }))
                    .boxed(),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }
}
