//! The notifier posting over HTTPS to a server with certificates made in
//! the test: a CA file, a server name other than the URL's host, client
//! certificates, and no check at all.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

struct Pki {
    dir: tempfile::TempDir,
    ca_pem: String,
    server: (String, String),
    client: (String, String),
}

impl Pki {
    /// A CA, a server certificate for `am.test` only, and a client one.
    fn new() -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issue = |name: &str| {
            let key = KeyPair::generate().unwrap();
            let cert = CertificateParams::new(vec![name.to_owned()])
                .unwrap()
                .signed_by(&key, &ca, &ca_key)
                .unwrap();
            (cert.pem(), key.serialize_pem())
        };
        Self {
            dir: tempfile::tempdir().unwrap(),
            ca_pem: ca.pem(),
            server: issue("am.test"),
            client: issue("strata"),
        }
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

/// An HTTPS server answering every request 200, counting them; with
/// `client_ca`, it asks for a client certificate signed by it.
async fn serve(pki: &Pki, client_ca: bool) -> (String, Arc<AtomicUsize>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_ca {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs(&pki.ca_pem));
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let key = PrivateKeyDer::from_pem_slice(pki.server.1.as_bytes()).unwrap();
    let config = builder.with_single_cert(certs(&pki.server.0), key).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://{}", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&served);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as it announces.
                while let Ok(n) = tls.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse().ok())?
                            })
                            .unwrap_or(0);
                        if body.len() >= len {
                            break;
                        }
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (base, served)
}

/// Sends one alert with `tls` to `base`; true when it was accepted.
async fn sent_with(base: &str, tls: TlsSettings) -> bool {
    let n = Notifier::start(&NotifierSettings {
        alertmanagers: vec![AlertmanagerSettings {
            urls: vec![base.to_owned()],
            timeout: Duration::from_secs(5),
            tls: Some(tls),
            ..Default::default()
        }],
        ..Default::default()
    })
    .unwrap();
    n.send(vec![Notification {
        labels: LabelSet::from([("alertname".to_owned(), "Tls".to_owned())]),
        annotations: LabelSet::new(),
        starts_at: 1,
        ends_at: 2,
        generator_url: String::new(),
    }]);
    let stats = n.stats();
    let url = format!("{base}/api/v2/alerts");
    for _ in 0..500 {
        if let Some(s) = stats.alertmanager(&url) {
            if s.sent + s.errors > 0 {
                n.shutdown().await;
                return s.sent == 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no answer from {base}");
}

fn path(p: &Path) -> Option<PathBuf> {
    Some(p.to_owned())
}

#[tokio::test]
async fn checks_certificates_as_configured() {
    let pki = Pki::new();
    let ca = pki.file("ca.pem", &pki.ca_pem);
    let (base, served) = serve(&pki, false).await;

    // The certificate names am.test, not 127.0.0.1.
    let by_host = TlsSettings {
        ca_file: path(&ca),
        ..Default::default()
    };
    assert!(!sent_with(&base, by_host.clone()).await);
    assert!(
        sent_with(
            &base,
            TlsSettings {
                server_name: Some("am.test".into()),
                ..by_host
            }
        )
        .await
    );
    // Not signed by a built-in root.
    let builtin = TlsSettings {
        server_name: Some("am.test".into()),
        ..Default::default()
    };
    assert!(!sent_with(&base, builtin).await);
    let insecure = TlsSettings {
        insecure_skip_verify: true,
        ..Default::default()
    };
    assert!(sent_with(&base, insecure).await);
    assert_eq!(served.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn shows_a_client_certificate() {
    let pki = Pki::new();
    let ca = pki.file("ca.pem", &pki.ca_pem);
    let cert = pki.file("client.pem", &pki.client.0);
    let key = pki.file("client.key", &pki.client.1);
    let (base, served) = serve(&pki, true).await;
    let without = TlsSettings {
        ca_file: path(&ca),
        server_name: Some("am.test".into()),
        ..Default::default()
    };
    assert!(!sent_with(&base, without.clone()).await);
    let with = TlsSettings {
        cert_file: path(&cert),
        key_file: path(&key),
        ..without
    };
    assert!(sent_with(&base, with).await);
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

#[test]
fn bad_files_are_named() {
    let pki = Pki::new();
    let not_pem = pki.file("junk.pem", "junk");
    let err = |tls: TlsSettings| tls::client_config(&tls).unwrap_err().to_string();
    let e = err(TlsSettings {
        ca_file: path(&not_pem),
        ..Default::default()
    });
    assert!(e.contains("tls.ca_file") && e.contains("junk.pem"), "{e}");
    let e = err(TlsSettings {
        ca_file: Some(pki.dir.path().join("missing.pem")),
        ..Default::default()
    });
    assert!(e.contains("missing.pem"), "{e}");
    let cert = pki.file("client.pem", &pki.client.0);
    let e = err(TlsSettings {
        cert_file: path(&cert),
        key_file: path(&not_pem),
        ..Default::default()
    });
    assert!(e.contains("tls.key_file"), "{e}");
}
