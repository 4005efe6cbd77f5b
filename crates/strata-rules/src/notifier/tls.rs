//! The rustls client configuration a group's `tls` settings describe:
//! its CA in place of the built-in roots, a client certificate, a server
//! name to check certificates against, or no check at all.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::settings::TlsSettings;
use super::NotifierError;

fn tls_err(what: &str, path: &Path, e: impl std::fmt::Display) -> NotifierError {
    NotifierError::Tls(format!("{what} {}: {e}", path.display()))
}

fn read_certs(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, NotifierError> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_err(what, path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_err(what, path, e))?;
    if certs.is_empty() {
        return Err(tls_err(what, path, "no PEM certificate in it"));
    }
    Ok(certs)
}

/// The client configuration for `tls`, or an error naming the file at
/// fault.
pub(crate) fn client_config(tls: &TlsSettings) -> Result<ClientConfig, NotifierError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    match &tls.ca_file {
        Some(path) => {
            for cert in read_certs("tls.ca_file", path)? {
                roots
                    .add(cert)
                    .map_err(|e| tls_err("tls.ca_file", path, e))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let webpki =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(|e| NotifierError::Tls(format!("tls: {e}")))?;
    let server_name = match &tls.server_name {
        Some(name) => Some(
            ServerName::try_from(name.clone())
                .map_err(|e| NotifierError::Tls(format!("tls.server_name {name:?}: {e}")))?,
        ),
        None => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure_skip_verify {
        Arc::new(Verifier {
            check: Check::Nothing,
            provider: Arc::clone(&provider),
        })
    } else if let Some(name) = server_name {
        Arc::new(Verifier {
            check: Check::As(webpki, name),
            provider: Arc::clone(&provider),
        })
    } else {
        webpki
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| NotifierError::Tls(format!("tls: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => {
            let certs = read_certs("tls.cert_file", cert)?;
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| tls_err("tls.key_file", key, e))?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                NotifierError::Tls(format!(
                    "tls.cert_file and tls.key_file do not make a certificate and its key: {e}"
                ))
            })?
        }
        _ => builder.with_no_client_auth(),
    };
    // reqwest is built without HTTP/2 here.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// What a [`Verifier`] checks of the server's certificate chain.
#[derive(Debug)]
enum Check {
    /// Nothing (`insecure_skip_verify`).
    Nothing,
    /// The chain, against this name rather than the URL's host.
    As(Arc<WebPkiServerVerifier>, ServerName<'static>),
}

/// Checks certificates against a configured server name, or not at all;
/// handshake signatures are checked either way.
#[derive(Debug)]
struct Verifier {
    check: Check,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.check {
            Check::Nothing => Ok(ServerCertVerified::assertion()),
            Check::As(webpki, name) => {
                webpki.verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
