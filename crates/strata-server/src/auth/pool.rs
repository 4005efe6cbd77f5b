//! The verify threads: bcrypt runs here, never on the runtime's threads,
//! behind a queue of bounded length, and its verdict goes to every request
//! waiting for it.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use parking_lot::Mutex;

use super::cache::Verified;
use super::limiter::FailureLimiter;
use super::AuthStats;

/// A few threads that run bcrypt, fed from a queue of bounded length.
pub(super) struct VerifyPool {
    jobs: mpsc::Sender<Job>,
    /// Jobs queued or running; at most `limit`.
    outstanding: Arc<AtomicU64>,
    /// Threads plus the queue's length.
    limit: u64,
}

pub(super) type Job = Box<dyn FnOnce() + Send>;

impl VerifyPool {
    pub(super) fn start(
        threads: usize,
        queue: usize,
        stats: &Arc<AuthStats>,
    ) -> Result<Self, String> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let outstanding = Arc::new(AtomicU64::new(0));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            let stats = Arc::clone(stats);
            let outstanding = Arc::clone(&outstanding);
            std::thread::Builder::new()
                .name(format!("strata-auth-{i}"))
                .spawn(move || loop {
                    // The sender is gone with the authenticator: stop.
                    let job = match rx.lock() {
                        Ok(rx) => match rx.recv() {
                            Ok(job) => job,
                            Err(_) => return,
                        },
                        Err(_) => return,
                    };
                    stats.queued.fetch_sub(1, Ordering::Relaxed);
                    // A panic drops the job's senders: its waiters get 503.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    outstanding.fetch_sub(1, Ordering::Relaxed);
                })
                .map_err(|e| format!("cannot start the bcrypt threads: {e}"))?;
        }
        Ok(Self {
            jobs,
            outstanding,
            limit: (threads + queue) as u64,
        })
    }

    /// Hands `job` to the threads, unless they are all busy and the queue
    /// is full.
    pub(super) fn try_submit(&self, job: Job, stats: &AuthStats) -> bool {
        if self.outstanding.fetch_add(1, Ordering::Relaxed) >= self.limit {
            self.outstanding.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        stats.queued.fetch_add(1, Ordering::Relaxed);
        if self.jobs.send(job).is_err() {
            stats.queued.fetch_sub(1, Ordering::Relaxed);
            self.outstanding.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}
/// `auth.verify_threads`, 0 meaning half the cores, at least one.
pub(super) fn verify_threads(configured: usize) -> usize {
    if configured > 0 {
        return configured;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (cores / 2).max(1)
}

/// The verify threads' work for one credential: bcrypt against each
/// candidate hash, then the answer to every request waiting for it.
pub(super) fn verify_job(
    d: [u8; 32],
    secret: String,
    hashes: Vec<String>,
    verified: Arc<Mutex<Verified>>,
    limiter: Arc<FailureLimiter>,
    stats: Arc<AuthStats>,
    peer: Option<IpAddr>,
) -> Job {
    Box::new(move || {
        let ok = std::panic::catch_unwind(|| {
            hashes.iter().any(|h| {
                stats.bcrypt_verifications.fetch_add(1, Ordering::Relaxed);
                bcrypt::verify(&secret, h).unwrap_or(false)
            })
        })
        .unwrap_or(false);
        if ok {
            limiter.give_back(peer);
        }
        let waiting = {
            let mut v = verified.lock();
            if ok {
                v.cache.insert(d, Instant::now());
            }
            v.pending.remove(&d).unwrap_or_default()
        };
        for w in waiting {
            let _ = w.send(ok);
        }
    })
}
