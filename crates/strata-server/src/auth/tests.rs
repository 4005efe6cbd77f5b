//! Tests of the whole check flow: both sides, token-file tokens, bcrypt,
//! the cache, the failure limiter and the verify queue working together.

use base64::Engine as _;

use super::*;
use crate::config::CredentialsConfig;

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
    let check = |h: &HeaderMap, peer: Option<IpAddr>| rt.block_on(a.check(Access::Write, h, peer));
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
