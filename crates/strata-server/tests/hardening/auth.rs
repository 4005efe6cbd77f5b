//! Credentials on writes and reads, and TLS with client certificates.

use crate::common::inproc::{body, now_ms, post, post_with, ts, Server};
use crate::{expect, send, GOOD};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, "# tokens\nshared-token\n\n").unwrap();
    let hash = bcrypt::hash("dashboards", 4).unwrap();
    let write_hash = bcrypt::hash("writer-only", 4).unwrap();
    let read_users = format!("[\"grafana:{hash}\"]");
    let write_tokens = format!("[\"{write_hash}\"]");
    let srv = Server::start_in(
        dir,
        &[
            ("STRATA_AUTH_TOKEN_FILE", token_file.to_str().unwrap()),
            ("STRATA_AUTH_READ_BASIC_AUTH", &read_users),
            ("STRATA_AUTH_WRITE_BEARER_TOKEN_HASHES", &write_tokens),
        ],
    )
    .await;
    let url = srv.url.clone();
    let b = || body(vec![ts(GOOD, &[(now_ms(), 1.0)])]);

    let (s, m, h) = post(&url, b(), &[]).await;
    expect("no credentials", (s, m), 401, "authentication required");
    assert!(h.get("www-authenticate").is_some());
    expect(
        "bad token",
        send(&url, b(), &[("Authorization", "Bearer nope")]).await,
        401,
        "invalid",
    );
    assert_eq!(
        send(&url, b(), &[("Authorization", "Bearer shared-token")])
            .await
            .0,
        204
    );
    assert_eq!(
        send(&url, b(), &[("Authorization", "Bearer writer-only")])
            .await
            .0,
        204
    );
    let client = reqwest::Client::new();
    let query = |auth: Option<(&str, &str)>, token: Option<&str>| {
        let mut r = client
            .get(format!("{url}/api/v1/query"))
            .query(&[("query", "good_total")]);
        if let Some((u, p)) = auth {
            r = r.basic_auth(u, Some(p));
        }
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move { r.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(query(None, None).await, 401);
    assert_eq!(query(Some(("grafana", "wrong")), None).await, 401);
    assert_eq!(query(Some(("grafana", "dashboards")), None).await, 200);
    assert_eq!(query(None, Some("shared-token")).await, 200);
    assert_eq!(
        query(None, Some("writer-only")).await,
        401,
        "write-only token"
    );
    // Write with the read side's user: refused.
    let enc = "Basic Z3JhZmFuYTpkYXNoYm9hcmRz"; // grafana:dashboards
    assert_eq!(send(&url, b(), &[("Authorization", enc)]).await.0, 401);
    // Probes stay open; /metrics is on the read side.
    for (path, want) in [("/-/healthy", 200), ("/-/ready", 200), ("/metrics", 401)] {
        let s = client
            .get(format!("{url}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(s.as_u16(), want, "{path}");
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["client".into()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    let file = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cert = file("server.pem", server_cert.pem());
    let key = file("server.key", server_key.serialize_pem());
    let ca_file = file("ca.pem", ca.pem());
    let root = reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap();
    let identity = reqwest::Identity::from_pem(
        format!("{}{}", client_cert.pem(), client_key.serialize_pem()).as_bytes(),
    )
    .unwrap();
    let with_cert = reqwest::Client::builder()
        .add_root_certificate(root.clone())
        .identity(identity)
        .build()
        .unwrap();
    let srv = Server::start_with(
        dir,
        &[
            ("STRATA_TLS_CERT_FILE", &cert),
            ("STRATA_TLS_KEY_FILE", &key),
            ("STRATA_TLS_CLIENT_CA_FILE", &ca_file),
        ],
        with_cert.clone(),
        "https",
    )
    .await;
    let url = srv.url.clone();
    let t = now_ms();
    let (s, m, _) = post_with(&with_cert, &url, body(vec![ts(GOOD, &[(t, 1.0)])]), &[]).await;
    assert_eq!(s, 204, "{m}");
    let r = with_cert
        .get(format!("{url}/api/v1/query"))
        .query(&[("query", "good_total")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("good_total"));

    // Without a client certificate the handshake fails.
    let no_cert = reqwest::Client::builder()
        .add_root_certificate(root)
        .build()
        .unwrap();
    let r = no_cert
        .get(format!("{url}/api/v1/query?query=up"))
        .send()
        .await;
    assert!(r.is_err(), "no client certificate: {r:?}");
    // Plain HTTP to the TLS port gets no answer.
    let plain = reqwest::get(format!(
        "http://{}/-/healthy",
        url.trim_start_matches("https://")
    ))
    .await;
    assert!(plain.map(|r| r.status() != 200).unwrap_or(true));
    srv.stop().await;
}
