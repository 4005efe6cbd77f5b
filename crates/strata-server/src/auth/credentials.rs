//! One side's accepted credentials (token-file tokens, bcrypt hashes for
//! bearer tokens and basic auth) and reading the credential a request
//! presents from its `Authorization` header.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap};
use base64::Engine as _;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::cache::{SuccessCache, Verified};
use super::AuthError;
use crate::config::CredentialsConfig;

/// One side's accepted credentials.
pub(super) struct Credentials {
    /// SHA-256 of each token from the token file.
    token_digests: Vec<[u8; 32]>,
    pub(super) bearer_hashes: Vec<String>,
    /// user -> bcrypt hash.
    pub(super) basic: Vec<(String, String)>,
    /// Verified credentials and verifications under way, shared with the
    /// verify threads' jobs.
    pub(super) verified: Arc<Mutex<Verified>>,
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
    pub(super) fn new(
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

    pub(super) fn enabled(&self) -> bool {
        !(self.token_digests.is_empty() && self.bearer_hashes.is_empty() && self.basic.is_empty())
    }

    /// The credential `headers` present: `None` when it is a token from
    /// the token file (accepted), else what the cache or bcrypt decides.
    pub(super) fn attempt(&self, headers: &HeaderMap) -> Result<Option<Attempt>, AuthError> {
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
    pub(super) fn candidates(&self, a: &Attempt) -> Vec<String> {
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
pub(super) struct Attempt {
    /// SHA-256 of the scheme, user and secret: the cache's key.
    pub(super) digest: [u8; 32],
    /// The basic-auth user; `None` for a bearer token.
    user: Option<String>,
    pub(super) secret: String,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
