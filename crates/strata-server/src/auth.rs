//! Authentication: bearer tokens and basic auth, for writes and reads
//! separately.
//!
//! Tokens from `auth.token_file` are kept as SHA-256 digests and compared in
//! constant time. Configured credentials are bcrypt hashes; bcrypt is slow
//! on purpose (tens of milliseconds), so a verified credential is
//! remembered by its SHA-256 digest and later requests cost one hash. The
//! cache is bounded and holds only digests.

use std::sync::Arc;

use axum::http::{header, HeaderMap};
use base64::Engine as _;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{AuthConfig, CredentialsConfig};

/// Verified (or refused) credentials kept, per side.
const CACHE_ENTRIES: usize = 4096;

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
    /// SHA-256 of a presented credential -> whether it was accepted.
    verified: Mutex<FxHashMap<[u8; 32], bool>>,
}

/// Why a request is refused, for the 401 message.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    Missing,
    Invalid,
    Malformed(&'static str),
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
        }
    }
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
    fn new(config: &CredentialsConfig, file_tokens: &[String]) -> Result<Self, String> {
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
            verified: Mutex::new(FxHashMap::default()),
        })
    }

    fn enabled(&self) -> bool {
        !(self.token_digests.is_empty() && self.bearer_hashes.is_empty() && self.basic.is_empty())
    }

    fn check(&self, headers: &HeaderMap) -> Result<(), AuthError> {
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
                return Ok(());
            }
            return self.cached(d, || {
                self.bearer_hashes
                    .iter()
                    .any(|h| bcrypt::verify(rest, h).unwrap_or(false))
            });
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
            let d = digest(&[b"basic", user.as_bytes(), password.as_bytes()]);
            return self.cached(d, || {
                self.basic
                    .iter()
                    .filter(|(u, _)| u == user)
                    .any(|(_, h)| bcrypt::verify(password, h).unwrap_or(false))
            });
        }
        Err(AuthError::Malformed("use the Bearer or Basic scheme"))
    }

    fn cached(&self, d: [u8; 32], verify: impl FnOnce() -> bool) -> Result<(), AuthError> {
        let known = self.verified.lock().get(&d).copied();
        let ok = match known {
            Some(ok) => ok,
            None => {
                let ok = verify();
                let mut cache = self.verified.lock();
                if cache.len() >= CACHE_ENTRIES {
                    cache.clear();
                }
                cache.insert(d, ok);
                ok
            }
        };
        if ok {
            Ok(())
        } else {
            Err(AuthError::Invalid)
        }
    }
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

/// Both sides' credentials.
pub struct Authenticator {
    write: Credentials,
    read: Credentials,
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
        Ok(Arc::new(Self {
            write: Credentials::new(&config.write, &tokens)
                .map_err(|e| format!("auth.write: {e}"))?,
            read: Credentials::new(&config.read, &tokens).map_err(|e| format!("auth.read: {e}"))?,
        }))
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

    /// Checks a request's credentials for `access`.
    pub fn check(&self, access: Access, headers: &HeaderMap) -> Result<(), AuthError> {
        let side = self.side(access);
        if !side.enabled() {
            return Ok(());
        }
        side.check(headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn auth(token_file_tokens: &[&str], write: CredentialsConfig) -> Authenticator {
        let tokens: Vec<String> = token_file_tokens.iter().map(|t| t.to_string()).collect();
        Authenticator {
            write: Credentials::new(&write, &tokens).unwrap(),
            read: Credentials::new(&CredentialsConfig::default(), &tokens).unwrap(),
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
            a.check(Access::Write, &HeaderMap::new()),
            Err(AuthError::Missing)
        );
        assert_eq!(a.check(Access::Write, &basic("alice", "s3cret")), Ok(()));
        // Again, from the cache.
        assert_eq!(a.check(Access::Write, &basic("alice", "s3cret")), Ok(()));
        assert_eq!(
            a.check(Access::Write, &basic("alice", "wrong")),
            Err(AuthError::Invalid)
        );
        assert_eq!(
            a.check(Access::Write, &basic("bob", "s3cret")),
            Err(AuthError::Invalid)
        );
        assert_eq!(a.check(Access::Write, &with("Bearer writer-token")), Ok(()));
        assert_eq!(
            a.check(Access::Write, &with("Bearer other")),
            Err(AuthError::Invalid)
        );
        assert!(matches!(
            a.check(Access::Write, &with("Digest x")),
            Err(AuthError::Malformed(_))
        ));
        assert!(matches!(
            a.check(Access::Write, &with("Basic %%%")),
            Err(AuthError::Malformed(_))
        ));
        // The read side has no credentials: open.
        assert_eq!(a.check(Access::Read, &HeaderMap::new()), Ok(()));
    }

    #[test]
    fn token_file_tokens_work_on_both_sides() {
        let a = auth(&["t1", "t2"], CredentialsConfig::default());
        for side in [Access::Write, Access::Read] {
            assert_eq!(a.check(side, &with("Bearer t2")), Ok(()));
            assert_eq!(a.check(side, &with("bearer t1")), Ok(()));
            assert_eq!(a.check(side, &with("Bearer t3")), Err(AuthError::Invalid));
            assert_eq!(a.check(side, &with("Bearer t")), Err(AuthError::Invalid));
        }
    }

    #[test]
    fn bad_hashes_are_refused_at_start() {
        let bad = CredentialsConfig {
            bearer_token_hashes: vec!["plaintext".into()],
            basic_auth: vec![],
        };
        assert!(Credentials::new(&bad, &[]).is_err());
        let bad = CredentialsConfig {
            bearer_token_hashes: vec![],
            basic_auth: vec!["no-colon".into()],
        };
        assert!(Credentials::new(&bad, &[]).is_err());
    }
}
