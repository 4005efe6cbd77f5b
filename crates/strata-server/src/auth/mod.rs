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
//!
//! The pieces: `credentials` reads the credential a request presents and
//! holds each side's tokens and hashes, `cache` what a side remembers of
//! verified credentials, `limiter` the per-address failure buckets and
//! `pool` the verify threads. This module puts them together in
//! [`Authenticator::check`].

mod cache;
mod credentials;
mod limiter;
mod pool;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use tokio::sync::oneshot;

use crate::config::AuthConfig;

use self::credentials::Credentials;
use self::limiter::FailureLimiter;
use self::pool::{verify_job, verify_threads, VerifyPool};

/// Which side of the API a request uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Write,
    Read,
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
