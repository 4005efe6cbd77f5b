//! Authentication: bearer tokens and basic auth, for writes and reads
//! separately.
//!
//! Tokens from `auth.token_file` are kept as SHA-256 digests and compared in
//! constant time. Configured credentials are bcrypt hashes; bcrypt is slow
//! on purpose (tens of milliseconds), so that guessing costs an attacker
//! more than it costs Strata:
//!
//! - bcrypt runs on a few dedicated threads (`auth.verify_threads`), never
//!   on the runtime's, behind a bounded queue (`auth.verify_queue`); when
//!   the queue is full the request is answered 503 with `Retry-After`
//!   without waiting;
//! - a verified credential is remembered by its SHA-256 digest for
//!   `auth.cache_ttl` (at most `auth.cache_size` per side), so later
//!   requests cost one hash; refusals are not remembered, so wrong
//!   credentials cannot push valid ones out;
//! - each credential that is neither a token-file token nor remembered
//!   costs the client's address a token of a bucket refilled at
//!   `auth.failure_rate_limit` per second (`auth.failure_burst` at most);
//!   an address with an empty bucket is answered 429 with `Retry-After`
//!   without running bcrypt, and a verified credential gives its token
//!   back. Remembered credentials are checked before the bucket, so a
//!   client already verified passes even while its address is limited;
//! - requests presenting the same credential while it is being verified
//!   wait for that one verification.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use base64::Engine as _;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;

use crate::config::{AuthConfig, CredentialsConfig};

/// Most client addresses the failure limiter tracks; past it, addresses
/// whose bucket has refilled are forgotten, then the longest idle.
const MAX_TRACKED_ADDRESSES: usize = 16_384;

/// Which side of the API a request uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Write,
    Read,
}

/// One side's accepted credentials.
struct Credentials {
    /// SHA-256 of each token from the token file.
    token_digests: Vec<[u8; 32]>,
    bearer_hashes: Vec<String>,
    /// user -> bcrypt hash.
    basic: Vec<(String, String)>,
    /// Verified credentials and verifications under way, shared with the
    /// verify threads' jobs.
    verified: Arc<Mutex<Verified>>,
}

/// Why a request is refused: 401, or 429 and 503 with `Retry-After`.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    Missing,
    Invalid,
    Malformed(&'static str),
    /// The client's address used up its failure allowance: 429.
    RateLimited {
        retry_after: Duration,
    },
    /// Every verify thread is busy and the queue full: 503.
    Busy,
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => write!(
                f,
                "authentication required: send Authorization: Bearer <token> or basic auth"
            ),
            Self::Invalid => write!(f, "invalid credentials"),
            Self::Malformed(why) => write!(f, "malformed Authorization header: {why}"),
            Self::RateLimited { .. } => write!(
                f,
                "too many failed authentication attempts from this address \
                 (auth.failure_rate_limit); retry after {} s",
                retry_after_secs(self)
            ),
            Self::Busy => write!(
                f,
                "too many credentials waiting for verification (auth.verify_queue); retry later"
            ),
        }
    }
}

/// Seconds to wait before retrying, at least 1.
fn retry_after_secs(e: &AuthError) -> u64 {
    match e {
        AuthError::RateLimited { retry_after } => {
            let ceil = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            ceil.max(1)
        }
        _ => 1,
    }
}

impl AuthError {
    /// The answer's status: 401, 429 or 503.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Missing | Self::Invalid | Self::Malformed(_) => StatusCode::UNAUTHORIZED,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Busy => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// Adds the headers the answer needs: `WWW-Authenticate` to a 401,
    /// `Retry-After` to a 429 or 503.
    pub fn add_headers(&self, headers: &mut HeaderMap) {
        if self.status() == StatusCode::UNAUTHORIZED {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"strata\", Basic realm=\"strata\""),
            );
        } else {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(self)),
            );
        }
    }
}

/// The address of the client that sent a request, as the server puts it
/// in the request's extensions (`axum::extract::ConnectInfo`).
pub fn peer_ip(extensions: &axum::http::Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| a.ip())
}

fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

impl Credentials {
    /// `cache`: how long a verified credential is remembered, and how
    /// many are at most.
    fn new(
        config: &CredentialsConfig,
        file_tokens: &[String],
        cache: (Duration, usize),
    ) -> Result<Self, String> {
        let mut basic = Vec::new();
        for entry in &config.basic_auth {
            let (user, hash) = entry.split_once(':').ok_or_else(|| {
                format!(
                    "basic_auth entry {:?} is not user:bcrypt-hash",
                    redact(entry)
                )
            })?;
            check_bcrypt(hash).map_err(|e| format!("basic_auth user {user:?}: {e}"))?;
            basic.push((user.to_owned(), hash.to_owned()));
        }
        for hash in &config.bearer_token_hashes {
            check_bcrypt(hash).map_err(|e| format!("bearer_token_hashes: {e}"))?;
        }
        Ok(Self {
            token_digests: file_tokens
                .iter()
                .map(|t| digest(&[b"bearer", t.as_bytes()]))
                .collect(),
            bearer_hashes: config.bearer_token_hashes.clone(),
            basic,
            verified: Arc::new(Mutex::new(Verified {
                cache: SuccessCache::new(cache.0, cache.1),
                pending: FxHashMap::default(),
            })),
        })
    }

    fn enabled(&self) -> bool {
        !(self.token_digests.is_empty() && self.bearer_hashes.is_empty() && self.basic.is_empty())
    }

    /// The credential `headers` present: `None` when it is a token from
    /// the token file (accepted), else what the cache or bcrypt decides.
    fn attempt(&self, headers: &HeaderMap) -> Result<Option<Attempt>, AuthError> {
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or(AuthError::Missing)?
            .to_str()
            .map_err(|_| AuthError::Malformed("not visible ASCII"))?;
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            if rest.is_empty() {
                return Err(AuthError::Malformed("empty bearer token"));
            }
            let d = digest(&[b"bearer", rest.as_bytes()]);
            // Every digest is compared, so the time taken does not say
            // which (or whether one) matched.
            let mut hit = subtle::Choice::from(0);
            for t in &self.token_digests {
                hit |= t.ct_eq(&d);
            }
            if bool::from(hit) {
                return Ok(None);
            }
            return Ok(Some(Attempt {
                digest: d,
                user: None,
                secret: rest.to_owned(),
            }));
        }
        if scheme.eq_ignore_ascii_case("basic") {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .map_err(|_| AuthError::Malformed("basic credentials are not base64"))?;
            let text = String::from_utf8(decoded)
                .map_err(|_| AuthError::Malformed("basic credentials are not UTF-8"))?;
            let (user, password) = text
                .split_once(':')
                .ok_or(AuthError::Malformed("basic credentials lack user:password"))?;
            return Ok(Some(Attempt {
                digest: digest(&[b"basic", user.as_bytes(), password.as_bytes()]),
                user: Some(user.to_owned()),
                secret: password.to_owned(),
            }));
        }
        Err(AuthError::Malformed("use the Bearer or Basic scheme"))
    }

    /// The bcrypt hashes `a` may match.
    fn candidates(&self, a: &Attempt) -> Vec<String> {
        match &a.user {
            None => self.bearer_hashes.clone(),
            Some(user) => self
                .basic
                .iter()
                .filter(|(u, _)| u == user)
                .map(|(_, h)| h.clone())
                .collect(),
        }
    }
}

/// A presented credential that is not a token-file token.
struct Attempt {
    /// SHA-256 of the scheme, user and secret: the cache's key.
    digest: [u8; 32],
    /// The basic-auth user; `None` for a bearer token.
    user: Option<String>,
    secret: String,
}

/// One side's verified credentials and the verifications under way.
struct Verified {
    cache: SuccessCache,
    /// Digest -> the requests waiting for its verification.
    pending: FxHashMap<[u8; 32], Vec<oneshot::Sender<bool>>>,
}

/// Credentials bcrypt accepted, by digest, each until it expires. Only
/// successes: a wrong credential never takes a place.
struct SuccessCache {
    ttl: Duration,
    capacity: usize,
    /// Digest -> when it stops counting as verified.
    expires: FxHashMap<[u8; 32], Instant>,
}

impl SuccessCache {
    fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            expires: FxHashMap::default(),
        }
    }

    /// Whether `d` was verified less than the TTL before `now`.
    fn contains(&mut self, d: &[u8; 32], now: Instant) -> bool {
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
    fn insert(&mut self, d: [u8; 32], now: Instant) {
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

/// Per client address, a bucket of failure tokens refilled at `rate` per
/// second up to `burst`: each credential that needs bcrypt takes one, a
/// verified one gives it back. IPv6 addresses count by their /64, the
/// block one host usually has.
struct FailureLimiter {
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
    fn new(rate: u32, burst: u32) -> Self {
        Self {
            rate: f64::from(rate),
            burst: f64::from(burst),
            buckets: Mutex::new(FxHashMap::default()),
        }
    }

    /// Takes a token of `ip`'s bucket, or says how long until there is one.
    fn take(&self, ip: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
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
    fn give_back(&self, ip: Option<IpAddr>) {
        let Some(ip) = ip.filter(|_| self.rate > 0.0) else {
            return;
        };
        if let Some(b) = self.buckets.lock().get_mut(&limit_key(ip)) {
            b.tokens = (b.tokens + 1.0).min(self.burst);
        }
    }

    /// Addresses tracked.
    fn len(&self) -> usize {
        self.buckets.lock().len()
    }
}

/// A few threads that run bcrypt, fed from a queue of bounded length.
struct VerifyPool {
    jobs: mpsc::Sender<Job>,
    /// Jobs queued or running; at most `limit`.
    outstanding: Arc<AtomicU64>,
    /// Threads plus the queue's length.
    limit: u64,
}

type Job = Box<dyn FnOnce() + Send>;

impl VerifyPool {
    fn start(threads: usize, queue: usize, stats: &Arc<AuthStats>) -> Result<Self, String> {
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
    fn try_submit(&self, job: Job, stats: &AuthStats) -> bool {
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

/// What `/metrics` shows of authentication.
#[derive(Default)]
pub struct AuthStats {
    /// bcrypt comparisons run.
    pub bcrypt_verifications: AtomicU64,
    /// Requests answered 429 by the failure limiter.
    pub rate_limited: AtomicU64,
    /// Requests answered 503 because the verify queue was full.
    pub queue_full: AtomicU64,
    /// Jobs handed to the verify threads and not yet started.
    pub queued: AtomicU64,
}

/// The first characters of a secret-bearing config entry, for messages.
fn redact(entry: &str) -> String {
    let user = entry.split(':').next().unwrap_or_default();
    format!("{user}:…")
}

fn check_bcrypt(hash: &str) -> Result<(), String> {
    // Verifying against any password parses the hash.
    match bcrypt::verify("", hash) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("not a bcrypt hash ({e})")),
    }
}

/// Both sides' credentials, the verify threads and the failure limiter.
pub struct Authenticator {
    write: Credentials,
    read: Credentials,
    /// Started when a side has bcrypt hashes.
    pool: Option<VerifyPool>,
    limiter: Arc<FailureLimiter>,
    stats: Arc<AuthStats>,
}

impl Authenticator {
    pub fn new(config: &AuthConfig) -> Result<Arc<Self>, String> {
        let tokens = if config.token_file.is_empty() {
            Vec::new()
        } else {
            let text = std::fs::read_to_string(&config.token_file)
                .map_err(|e| format!("auth.token_file {}: {e}", config.token_file))?;
            let tokens: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned)
                .collect();
            if tokens.is_empty() {
                return Err(format!(
                    "auth.token_file {} holds no token",
                    config.token_file
                ));
            }
            tokens
        };
        let cache = (config.cache_ttl, config.cache_size);
        let write = Credentials::new(&config.write, &tokens, cache)
            .map_err(|e| format!("auth.write: {e}"))?;
        let read = Credentials::new(&config.read, &tokens, cache)
            .map_err(|e| format!("auth.read: {e}"))?;
        Self::with(write, read, config).map(Arc::new)
    }

    fn with(write: Credentials, read: Credentials, config: &AuthConfig) -> Result<Self, String> {
        let stats = Arc::new(AuthStats::default());
        let bcrypt = |c: &Credentials| !(c.bearer_hashes.is_empty() && c.basic.is_empty());
        let pool = if bcrypt(&write) || bcrypt(&read) {
            Some(VerifyPool::start(
                verify_threads(config.verify_threads),
                config.verify_queue,
                &stats,
            )?)
        } else {
            None
        };
        Ok(Self {
            write,
            read,
            pool,
            limiter: Arc::new(FailureLimiter::new(
                config.failure_rate_limit,
                config.failure_burst,
            )),
            stats,
        })
    }

    fn side(&self, access: Access) -> &Credentials {
        match access {
            Access::Write => &self.write,
            Access::Read => &self.read,
        }
    }

    /// Whether `access` needs credentials at all.
    pub fn enabled(&self, access: Access) -> bool {
        self.side(access).enabled()
    }

    /// What `/metrics` shows of authentication.
    pub fn stats(&self) -> &AuthStats {
        &self.stats
    }

    /// Appends authentication's metrics in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let s = &self.stats;
        let _ = writeln!(
            out,
            "# HELP strata_auth_bcrypt_verifications_total bcrypt comparisons run by the verify threads.\n\
             # TYPE strata_auth_bcrypt_verifications_total counter\n\
             strata_auth_bcrypt_verifications_total {}",
            l(&s.bcrypt_verifications)
        );
        let _ = writeln!(
            out,
            "# HELP strata_auth_rate_limited_total Requests refused with 429 without bcrypt: their address had used up auth.failure_burst.\n\
             # TYPE strata_auth_rate_limited_total counter\n\
             strata_auth_rate_limited_total {}",
            l(&s.rate_limited)
        );
        let _ = writeln!(
            out,
            "# HELP strata_auth_verify_queue_full_total Requests refused with 503 because the bcrypt verify queue was full (auth.verify_queue).\n\
             # TYPE strata_auth_verify_queue_full_total counter\n\
             strata_auth_verify_queue_full_total {}",
            l(&s.queue_full)
        );
        let _ = writeln!(
            out,
            "# HELP strata_auth_verify_queue_depth Credentials waiting for a bcrypt verify thread.\n\
             # TYPE strata_auth_verify_queue_depth gauge\n\
             strata_auth_verify_queue_depth {}",
            l(&s.queued)
        );
        let _ = writeln!(
            out,
            "# HELP strata_auth_limited_addresses Client addresses the authentication failure limiter tracks.\n\
             # TYPE strata_auth_limited_addresses gauge\n\
             strata_auth_limited_addresses {}",
            self.limiter.len()
        );
    }

    /// Checks a request's credentials for `access`; `peer` is the
    /// client's address, for the failure limiter. Token-file tokens and
    /// remembered credentials are answered at once; others wait for a
    /// verify thread (or are refused 429 or 503 without one).
    pub async fn check(
        &self,
        access: Access,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<(), AuthError> {
        let side = self.side(access);
        if !side.enabled() {
            return Ok(());
        }
        let Some(attempt) = side.attempt(headers)? else {
            return Ok(());
        };
        let now = Instant::now();
        let verdict = {
            let mut verified = side.verified.lock();
            if verified.cache.contains(&attempt.digest, now) {
                return Ok(());
            }
            let (tx, rx) = oneshot::channel();
            if let Some(waiting) = verified.pending.get_mut(&attempt.digest) {
                // Being verified for another request: its answer is ours.
                waiting.push(tx);
            } else {
                if let Err(retry_after) = self.limiter.take(peer, now) {
                    self.stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                    return Err(AuthError::RateLimited { retry_after });
                }
                let hashes = side.candidates(&attempt);
                let Some(pool) = self.pool.as_ref().filter(|_| !hashes.is_empty()) else {
                    return Err(AuthError::Invalid);
                };
                let job = verify_job(
                    attempt.digest,
                    attempt.secret,
                    hashes,
                    Arc::clone(&side.verified),
                    Arc::clone(&self.limiter),
                    Arc::clone(&self.stats),
                    peer,
                );
                if !pool.try_submit(job, &self.stats) {
                    self.limiter.give_back(peer);
                    self.stats.queue_full.fetch_add(1, Ordering::Relaxed);
                    return Err(AuthError::Busy);
                }
                verified.pending.insert(attempt.digest, vec![tx]);
            }
            rx
        };
        match verdict.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(AuthError::Invalid),
            Err(_) => Err(AuthError::Busy),
        }
    }
}

/// `auth.verify_threads`, 0 meaning half the cores, at least one.
fn verify_threads(configured: usize) -> usize {
    if configured > 0 {
        return configured;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (cores / 2).max(1)
}

/// The verify threads' work for one credential: bcrypt against each
/// candidate hash, then the answer to every request waiting for it.
fn verify_job(
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn defaults() -> AuthConfig {
        crate::config::Config::load(None, Vec::new(), &crate::config::Overrides::default())
            .unwrap()
            .auth
    }

    fn auth_with(
        token_file_tokens: &[&str],
        write: CredentialsConfig,
        config: &AuthConfig,
    ) -> Authenticator {
        let tokens: Vec<String> = token_file_tokens.iter().map(|t| t.to_string()).collect();
        let cache = (config.cache_ttl, config.cache_size);
        Authenticator::with(
            Credentials::new(&write, &tokens, cache).unwrap(),
            Credentials::new(&CredentialsConfig::default(), &tokens, cache).unwrap(),
            config,
        )
        .unwrap()
    }

    fn auth(token_file_tokens: &[&str], write: CredentialsConfig) -> Authenticator {
        auth_with(token_file_tokens, write, &defaults())
    }

    /// Checks without a client address (no failure limit), on a runtime
    /// of its own.
    impl Authenticator {
        fn check_now(&self, access: Access, headers: &HeaderMap) -> Result<(), AuthError> {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(self.check(access, headers, None))
        }
    }

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    fn basic(user: &str, password: &str) -> HeaderMap {
        let enc = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        with(&format!("Basic {enc}"))
    }

    #[test]
    fn tokens_and_bcrypt() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let token_hash = bcrypt::hash("writer-token", 4).unwrap();
        let a = auth(
            &[],
            CredentialsConfig {
                bearer_token_hashes: vec![token_hash],
                basic_auth: vec![format!("alice:{hash}")],
            },
        );
        assert!(a.enabled(Access::Write));
        assert!(!a.enabled(Access::Read));
        assert_eq!(
            a.check_now(Access::Write, &HeaderMap::new()),
            Err(AuthError::Missing)
        );
        assert_eq!(
            a.check_now(Access::Write, &basic("alice", "s3cret")),
            Ok(())
        );
        // Again, from the cache.
        assert_eq!(
            a.check_now(Access::Write, &basic("alice", "s3cret")),
            Ok(())
        );
        assert_eq!(
            a.check_now(Access::Write, &basic("alice", "wrong")),
            Err(AuthError::Invalid)
        );
        assert_eq!(
            a.check_now(Access::Write, &basic("bob", "s3cret")),
            Err(AuthError::Invalid)
        );
        assert_eq!(
            a.check_now(Access::Write, &with("Bearer writer-token")),
            Ok(())
        );
        assert_eq!(
            a.check_now(Access::Write, &with("Bearer other")),
            Err(AuthError::Invalid)
        );
        assert!(matches!(
            a.check_now(Access::Write, &with("Digest x")),
            Err(AuthError::Malformed(_))
        ));
        assert!(matches!(
            a.check_now(Access::Write, &with("Basic %%%")),
            Err(AuthError::Malformed(_))
        ));
        // The read side has no credentials: open.
        assert_eq!(a.check_now(Access::Read, &HeaderMap::new()), Ok(()));
    }

    #[test]
    fn token_file_tokens_work_on_both_sides() {
        let a = auth(&["t1", "t2"], CredentialsConfig::default());
        for side in [Access::Write, Access::Read] {
            assert_eq!(a.check_now(side, &with("Bearer t2")), Ok(()));
            assert_eq!(a.check_now(side, &with("bearer t1")), Ok(()));
            assert_eq!(
                a.check_now(side, &with("Bearer t3")),
                Err(AuthError::Invalid)
            );
            assert_eq!(
                a.check_now(side, &with("Bearer t")),
                Err(AuthError::Invalid)
            );
        }
    }

    #[test]
    fn bad_hashes_are_refused_at_start() {
        let bad = CredentialsConfig {
            bearer_token_hashes: vec!["plaintext".into()],
            basic_auth: vec![],
        };
        assert!(Credentials::new(&bad, &[], (Duration::from_secs(60), 10)).is_err());
        let bad = CredentialsConfig {
            bearer_token_hashes: vec![],
            basic_auth: vec!["no-colon".into()],
        };
        assert!(Credentials::new(&bad, &[], (Duration::from_secs(60), 10)).is_err());
    }

    fn bearer_only(token: &str, config: &AuthConfig) -> Authenticator {
        auth_with(
            &[],
            CredentialsConfig {
                bearer_token_hashes: vec![bcrypt::hash(token, 4).unwrap()],
                basic_auth: vec![],
            },
            config,
        )
    }

    fn verifications(a: &Authenticator) -> u64 {
        a.stats().bcrypt_verifications.load(Ordering::Relaxed)
    }

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

    #[test]
    fn failures_are_not_cached_and_successes_expire() {
        let a = bearer_only("right", &defaults());
        for n in 1..=3 {
            assert_eq!(
                a.check_now(Access::Write, &with("Bearer wrong")),
                Err(AuthError::Invalid)
            );
            assert_eq!(verifications(&a), n, "each wrong try pays for bcrypt");
        }
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(verifications(&a), 4, "the success is remembered");
        // A TTL of zero remembers nothing.
        let config = AuthConfig {
            cache_ttl: Duration::ZERO,
            ..defaults()
        };
        let a = bearer_only("right", &config);
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(verifications(&a), 2);
        // A short one: verified again once it has passed.
        let config = AuthConfig {
            cache_ttl: Duration::from_millis(200),
            ..defaults()
        };
        let a = bearer_only("right", &config);
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(verifications(&a), 1);
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async { tokio::time::sleep(Duration::from_millis(250)).await });
        assert_eq!(a.check_now(Access::Write, &with("Bearer right")), Ok(()));
        assert_eq!(verifications(&a), 2);
    }

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

    #[test]
    fn too_many_failures_get_429_but_remembered_credentials_pass() {
        let config = AuthConfig {
            failure_rate_limit: 1,
            failure_burst: 3,
            ..defaults()
        };
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let a = auth_with(
            &["file-token"],
            CredentialsConfig {
                bearer_token_hashes: vec![bcrypt::hash("right", 4).unwrap()],
                basic_auth: vec![format!("alice:{hash}")],
            },
            &config,
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let peer = Some(IpAddr::from([192, 0, 2, 1]));
        let check =
            |h: &HeaderMap, peer: Option<IpAddr>| rt.block_on(a.check(Access::Write, h, peer));
        assert_eq!(check(&with("Bearer right"), peer), Ok(()));
        for _ in 0..3 {
            assert_eq!(check(&with("Bearer wrong"), peer), Err(AuthError::Invalid));
        }
        let before = verifications(&a);
        let e = check(&with("Bearer wrong"), peer).unwrap_err();
        assert!(matches!(e, AuthError::RateLimited { .. }), "{e:?}");
        assert_eq!(e.status(), StatusCode::TOO_MANY_REQUESTS);
        let mut h = HeaderMap::new();
        e.add_headers(&mut h);
        assert_eq!(h[header::RETRY_AFTER], "1");
        assert!(e.to_string().contains("auth.failure_rate_limit"), "{e}");
        assert_eq!(verifications(&a), before, "no bcrypt for a limited address");
        assert_eq!(a.stats().rate_limited.load(Ordering::Relaxed), 1);
        // The remembered token and the token file's pass from the limited
        // address; a credential not yet verified waits for its turn.
        assert_eq!(check(&with("Bearer right"), peer), Ok(()));
        assert_eq!(check(&with("Bearer file-token"), peer), Ok(()));
        assert!(matches!(
            check(&basic("alice", "s3cret"), peer),
            Err(AuthError::RateLimited { .. })
        ));
        // Missing and malformed credentials cost nothing and say so.
        assert_eq!(check(&HeaderMap::new(), peer), Err(AuthError::Missing));
        // Another address is not limited.
        let other = Some(IpAddr::from([192, 0, 2, 2]));
        assert_eq!(check(&with("Bearer wrong"), other), Err(AuthError::Invalid));
        assert_eq!(check(&basic("alice", "s3cret"), other), Ok(()));
        assert_eq!(
            check(&basic("alice", "s3cret"), peer),
            Ok(()),
            "now remembered"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn full_queue_is_503_and_one_verification_serves_all_waiting() {
        let config = AuthConfig {
            verify_threads: 1,
            verify_queue: 4,
            failure_rate_limit: 0,
            ..defaults()
        };
        let a = Arc::new(bearer_only("right", &config));
        let pool = a.pool.as_ref().unwrap();
        // Keep the only thread busy.
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        assert!(pool.try_submit(
            Box::new(move || {
                let _ = blocked.recv();
            }),
            &a.stats
        ));
        // The same wrong token, many times at once: one job.
        let mut same = Vec::new();
        for _ in 0..10 {
            let a = Arc::clone(&a);
            same.push(tokio::spawn(async move {
                a.check(Access::Write, &with("Bearer same-wrong"), None)
                    .await
            }));
        }
        // Different ones fill the queue (4, one taken by the above).
        let mut others = Vec::new();
        for i in 0..3 {
            let a = Arc::clone(&a);
            others.push(tokio::spawn(async move {
                a.check(Access::Write, &with(&format!("Bearer wrong-{i}")), None)
                    .await
            }));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(a.stats().queued.load(Ordering::Relaxed), 4);
        let e = a
            .check(Access::Write, &with("Bearer one-more"), None)
            .await
            .unwrap_err();
        assert_eq!(e, AuthError::Busy);
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        let mut h = HeaderMap::new();
        e.add_headers(&mut h);
        assert_eq!(h[header::RETRY_AFTER], "1");
        assert_eq!(a.stats().queue_full.load(Ordering::Relaxed), 1);
        release.send(()).unwrap();
        for t in same.into_iter().chain(others) {
            assert_eq!(t.await.unwrap(), Err(AuthError::Invalid));
        }
        assert_eq!(verifications(&a), 4, "one bcrypt per distinct credential");
        assert_eq!(a.stats().queued.load(Ordering::Relaxed), 0);
        let mut page = String::new();
        a.render(&mut page);
        assert!(
            page.contains("strata_auth_bcrypt_verifications_total 4"),
            "{page}"
        );
        assert!(
            page.contains("strata_auth_verify_queue_full_total 1"),
            "{page}"
        );
    }
}
