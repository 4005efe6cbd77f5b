//! The rustls configuration for HTTPS, with client-certificate
//! verification when a CA is configured; [`crate::serve`] serves with it.

use std::sync::Arc;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::config::TlsConfig;

/// The rustls server configuration `config` describes; errors name the
/// file at fault.
pub fn server_config(config: &TlsConfig) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&config.cert_file)
        .with_context(|| format!("tls.cert_file {}", config.cert_file))?
        .collect::<Result<_, _>>()
        .with_context(|| {
            format!(
                "tls.cert_file {}: not a PEM certificate chain",
                config.cert_file
            )
        })?;
    anyhow::ensure!(
        !certs.is_empty(),
        "tls.cert_file {}: no certificate in it",
        config.cert_file
    );
    let key = PrivateKeyDer::from_pem_file(&config.key_file)
        .with_context(|| format!("tls.key_file {}: no PEM private key", config.key_file))?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = if config.client_ca_file.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(&config.client_ca_file)
            .with_context(|| format!("tls.client_ca_file {}", config.client_ca_file))?
        {
            let cert = cert.with_context(|| {
                format!("tls.client_ca_file {}: not PEM", config.client_ca_file)
            })?;
            roots
                .add(cert)
                .with_context(|| format!("tls.client_ca_file {}", config.client_ca_file))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .with_context(|| format!("tls.client_ca_file {}", config.client_ca_file))?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut server = builder
        .with_single_cert(certs, key)
        .context("tls.cert_file and tls.key_file do not make a certificate and its key")?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(server))
}
