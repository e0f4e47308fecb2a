//! `sslmode=` with libpq's meaning, over rustls: the URL's TLS parameters (libpq's own,
//! `sslrootcert=`, `sslcert=`, `sslkey=`, or every backend's, `tls_ca=`, `tls_cert=`,
//! `tls_key=`) read into one client configuration, with the check each mode asks for.
//! The driver knows only `disable`, `prefer` and `require`, and refuses the other
//! parameters: they are taken out here, and the driver is told what to do.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` (the default) | if the server offers it | not checked |
//! | `require` | always | not checked; with `sslrootcert=`, checked as `verify-ca` (as libpq does) |
//! | `verify-ca` | always | signed by the CA |
//! | `verify-full` | always | signed by the CA, and for the host name connected to |

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_cert_signed_by_trust_anchor};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;

use crate::secured::{self, Secured};

/// The modes of `sslmode=`, as libpq names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Mode, String> {
        Ok(match value {
            "disable" => Mode::Disable,
            "allow" => Mode::Allow,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other} is not a mode: disable, allow, prefer, require, verify-ca or verify-full"
                ));
            }
        })
    }

    /// What the driver is told: it tries TLS first for `allow` too (the server decides).
    pub(super) fn driver(self) -> SslMode {
        match self {
            Mode::Disable => SslMode::Disable,
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }
}

/// The TLS half of a PostgreSQL URL.
#[derive(Debug)]
pub(super) struct Tls {
    pub(super) mode: Mode,
    /// The CA file and the parameter that named it, for messages.
    ca: Option<(&'static str, PathBuf)>,
    cert: Option<(&'static str, PathBuf)>,
    key: Option<(&'static str, PathBuf)>,
}

/// The URL parameters taken here, none of them the driver's.
pub(super) const PARAMETERS: [&str; 8] = [
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "tls_ca",
    "tls_cert",
    "tls_key",
    "password_file",
];

/// What [`take`] reads: the TLS settings and the password from `password_file=`.
pub(super) struct Taken {
    pub(super) tls: Tls,
    pub(super) password: Option<String>,
}

/// Reads the TLS parameters and `password_file=` of `query` ([`PARAMETERS`]).
pub(super) fn take(query: &str) -> Result<Taken, String> {
    let (secured, rest) = Secured::take(query)?;
    let files = secured.tls.clone().unwrap_or_default();
    let mut tls = Tls {
        mode: Mode::Prefer,
        ca: files.ca.map(|path| ("tls_ca", path)),
        cert: files.cert.map(|path| ("tls_cert", path)),
        key: files.key.map(|path| ("tls_key", path)),
    };
    let mut mode = None;
    for (key, value) in rest {
        let (slot, common) = match key.as_str() {
            "sslmode" => {
                if mode.replace(Mode::parse(&value)?).is_some() {
                    return Err("sslmode is given twice".into());
                }
                continue;
            }
            "sslrootcert" => (&mut tls.ca, "tls_ca"),
            "sslcert" => (&mut tls.cert, "tls_cert"),
            "sslkey" => (&mut tls.key, "tls_key"),
            _ => continue,
        };
        let parameter = match key.as_str() {
            "sslrootcert" => "sslrootcert",
            "sslcert" => "sslcert",
            _ => "sslkey",
        };
        if value.is_empty() {
            return Err(format!("{parameter}= needs a file"));
        }
        if let Some((given, _)) = slot {
            return Err(format!(
                "{parameter} and {given} name the same file: give one ({common} is every backend's name, {parameter} libpq's)"
            ));
        }
        *slot = Some((parameter, PathBuf::from(value)));
    }
    match (&tls.cert, &tls.key) {
        (Some((cert, _)), None) => return Err(format!("{cert} needs a key: sslkey= or tls_key=")),
        (None, Some((key, _))) => {
            return Err(format!(
                "{key} needs its certificate: sslcert= or tls_cert="
            ));
        }
        _ => {}
    }
    tls.mode = mode.unwrap_or(Mode::Prefer);
    if tls.mode == Mode::Disable && (tls.ca.is_some() || tls.cert.is_some()) {
        return Err(
            "sslmode=disable takes no certificates: drop them, or choose a mode with TLS".into(),
        );
    }
    Ok(Taken {
        tls,
        password: secured.password()?,
    })
}

impl Tls {
    /// What the server's certificate must be signed by, for messages.
    pub(super) fn trust(&self) -> String {
        crate::refusal::trust(
            self.ca.as_ref().map_or("tls_ca", |(p, _)| p),
            self.ca.as_ref().map(|(_, path)| path.as_path()),
        )
    }

    /// The client configuration for this mode, or `None` for `disable`.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or holds nothing usable, named with its parameter.
    pub(super) fn client_config(&self) -> Result<Option<ClientConfig>, String> {
        secured::install_crypto_provider();
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .ok_or("no TLS crypto provider is installed")?;
        let checked = match self.mode {
            Mode::Disable => return Ok(None),
            Mode::Allow | Mode::Prefer => false,
            Mode::Require => self.ca.is_some(),
            Mode::VerifyCa | Mode::VerifyFull => true,
        };
        let verifier: Arc<dyn ServerCertVerifier> = if checked {
            let roots = Arc::new(self.roots()?);
            let webpki =
                WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                    .build()
                    .map_err(|e| format!("{}: {e}", self.trust()))?;
            if self.mode == Mode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly {
                    roots,
                    webpki,
                    provider: provider.clone(),
                })
            }
        } else {
            Arc::new(Unchecked(provider))
        };
        let builder = ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&self.cert, &self.key) {
            (Some((cert_parameter, cert)), Some((key_parameter, key))) => {
                let chain = secured::certificates(cert_parameter, cert)?;
                let key = secured::private_key(key_parameter, key)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("{cert_parameter}={}: {e}", cert.display()))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Some(config))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        match &self.ca {
            Some((parameter, ca)) => {
                for cert in secured::certificates(parameter, ca)? {
                    roots.add(cert).map_err(|e| {
                        format!("{parameter}={}: not a CA certificate: {e}", ca.display())
                    })?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
                if roots.is_empty() {
                    return Err(format!(
                        "sslmode={} checks the server's certificate, and the system has no CA certificates: name the CA with sslrootcert=FILE",
                        self.mode.name()
                    ));
                }
            }
        }
        Ok(roots)
    }
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Allow => "allow",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// `verify-ca`: the chain to a trusted CA, validity dates included, but not the host
/// name; signatures of the handshake as usual.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `allow`, `prefer` and `require` without a CA: encryption only, as libpq does; the
/// handshake's signatures are still checked against the certificate presented.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
