//! TLS for `https://` endpoints, over gRPC and HTTP alike: the CA that signs the servers'
//! certificates, an optional client certificate for servers that ask for one
//! (`snowmint serve --tls-client-ca`), and the name the certificates must hold.
//!
//! One rustls configuration serves both transports, with aws-lc-rs as its crypto provider
//! unless the process installed another. A failed handshake is told in words, not as
//! "transport error" ([`explain`]).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};

use crate::Error;

/// The TLS settings of a client whose endpoints are `https://` URLs; given to
/// [`Builder::tls`](crate::Builder::tls).
///
/// Without a CA file the client trusts the system's CA certificates. The files are read
/// when named, so a missing or unreadable file is an error at once, naming the file.
///
/// ```no_run
/// use snowmint_client::{Client, Tls};
///
/// # async fn run() -> Result<(), snowmint_client::Error> {
/// let client = Client::builder()
///     .endpoints(["https://ids.internal:50051"])
///     .tls(
///         Tls::new()
///             .ca_pem_file("/etc/snowmint/ca.pem")?
///             .identity_pem_files("/etc/snowmint/client.pem", "/etc/snowmint/client.key")?,
///     )
///     .auth_token("s3cret")
///     .build()?;
/// let id = client.next_id().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
#[must_use]
pub struct Tls {
    ca: Option<(PathBuf, Vec<CertificateDer<'static>>)>,
    identity: Option<Identity>,
    domain_name: Option<String>,
}

/// A client certificate (a chain, leaf first) and its key, with the files they came from.
struct Identity {
    cert: PathBuf,
    key: PathBuf,
    chain: Vec<CertificateDer<'static>>,
    der: PrivateKeyDer<'static>,
}

impl Clone for Tls {
    fn clone(&self) -> Tls {
        Tls {
            ca: self.ca.clone(),
            identity: self.identity.as_ref().map(|identity| Identity {
                cert: identity.cert.clone(),
                key: identity.key.clone(),
                chain: identity.chain.clone(),
                der: identity.der.clone_key(),
            }),
            domain_name: self.domain_name.clone(),
        }
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("ca", &self.ca.as_ref().map(|(path, _)| path))
            .field(
                "identity",
                &self.identity.as_ref().map(|id| (&id.cert, &id.key)),
            )
            .field("domain_name", &self.domain_name)
            .finish()
    }
}

impl Tls {
    /// TLS that trusts the system's CA certificates and presents no client certificate.
    pub fn new() -> Tls {
        Tls::default()
    }

    /// Trusts the CA certificates of the PEM file at `path` (one or more), instead of the
    /// system's: those that sign the servers' certificates (`snowmint serve --tls-cert`).
    ///
    /// # Errors
    ///
    /// [`Error::TlsFile`] naming the file: it cannot be read, or holds no certificate.
    pub fn ca_pem_file(mut self, path: impl AsRef<Path>) -> Result<Tls, Error> {
        let path = path.as_ref();
        let certs = certificates("CA file", path)?;
        self.ca = Some((path.to_path_buf(), certs));
        Ok(self)
    }

    /// Presents the client certificate of the PEM file `cert` (a chain allowed, leaf
    /// first) with the private key of the PEM file `key`, to servers that ask for one
    /// (`snowmint serve --tls-client-ca`).
    ///
    /// # Errors
    ///
    /// [`Error::TlsFile`] naming the file: it cannot be read, or holds no certificate or no
    /// private key. Whether the two belong together is checked when the client is built.
    pub fn identity_pem_files(
        mut self,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Tls, Error> {
        let (cert, key) = (cert.as_ref(), key.as_ref());
        let chain = certificates("client certificate file", cert)?;
        let bytes = read("client key file", key)?;
        let der = PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| Error::TlsFile {
            file: "client key file",
            path: key.to_path_buf(),
            reason: "holds no private key (a PEM PRIVATE KEY block)".into(),
        })?;
        self.identity = Some(Identity {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            chain,
            der,
        });
        Ok(self)
    }

    /// The name the servers' certificates must hold, instead of the host of each endpoint's
    /// URL: for servers reached by an address their certificate does not name.
    pub fn domain_name(mut self, name: impl Into<String>) -> Tls {
        self.domain_name = Some(name.into());
        self
    }

    /// The rustls configuration, without ALPN (each transport offers its own).
    pub(crate) fn config(&self) -> Result<Settings, Error> {
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let roots = match &self.ca {
            Some((path, certs)) => {
                let mut roots = RootCertStore::empty();
                for cert in certs {
                    roots.add(cert.clone()).map_err(|e| Error::TlsFile {
                        file: "CA file",
                        path: path.clone(),
                        reason: format!("not a CA certificate: {e}"),
                    })?;
                }
                roots
            }
            None => system_roots()?,
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(format!("the crypto provider cannot run TLS: {e}")))?
            .with_root_certificates(roots);
        let config = match &self.identity {
            Some(identity) => builder
                .with_client_auth_cert(identity.chain.clone(), identity.der.clone_key())
                .map_err(|e| {
                    Error::Tls(format!(
                        "client certificate file {} and client key file {}: {e}",
                        identity.cert.display(),
                        identity.key.display()
                    ))
                })?,
            None => builder.with_no_client_auth(),
        };
        if let Some(name) = &self.domain_name {
            rustls::pki_types::ServerName::try_from(name.as_str())
                .map_err(|e| Error::Tls(format!("domain_name {name:?}: {e}")))?;
        }
        Ok(Settings {
            config: Arc::new(config),
            domain_name: self.domain_name.clone(),
        })
    }
}

/// A checked [`Tls`]: what each connection is made with.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) domain_name: Option<String>,
}

impl Settings {
    /// The connector of an `https://` endpoint over `inner`, offering `h2` by ALPN for
    /// gRPC, nothing for HTTP/1.1.
    pub(crate) fn connector<H>(&self, inner: H, http2: bool) -> hyper_rustls::HttpsConnector<H> {
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*self.config).clone())
            .https_only();
        let builder = match &self.domain_name {
            Some(name) => {
                builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
                    // Checked in `Tls::config`.
                    rustls::pki_types::ServerName::try_from(name.clone())
                        .unwrap_or_else(|_| unreachable!("checked when built")),
                ))
            }
            None => builder,
        };
        if http2 {
            builder.enable_http2().wrap_connector(inner)
        } else {
            builder.enable_http1().wrap_connector(inner)
        }
    }
}

/// How long [`probe`] waits for the server's word after the handshake: a server that
/// refuses the client's certificate says so at once, right after the handshake.
const PROBE_WAIT: Duration = Duration::from_millis(100);

/// Why the server at `url` (`https://host:port`) closes TLS connections, if it says: one
/// connection that completes the handshake offering `h2` and then only reads.
///
/// In TLS 1.3 a server checks the client's certificate after the client's side of the
/// handshake is done, and sends its refusal as it closes. HTTP/2 writes at once, so a
/// gRPC call meets the closed socket ("broken pipe", "connection closed") before it reads
/// the alert; this connection writes nothing, so it reads it.
pub(crate) async fn probe(settings: &Settings, url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(443);
    let name = settings.domain_name.as_deref().unwrap_or(host);
    let name = rustls::pki_types::ServerName::try_from(name.to_string()).ok()?;
    let mut config = (*settings.config).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect((host, port)).await.ok()?;
    let mut tls = match connector.connect(name, tcp).await {
        Ok(tls) => tls,
        Err(e) => return explain(&e),
    };
    let mut byte = [0u8; 1];
    match tokio::time::timeout(
        PROBE_WAIT,
        tokio::io::AsyncReadExt::read(&mut tls, &mut byte),
    )
    .await
    {
        Ok(Err(e)) => explain(&e),
        _ => None,
    }
}

/// The certificates of a PEM file, in order.
fn certificates(file: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bytes = read(file, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::TlsFile {
            file,
            path: path.to_path_buf(),
            reason: pem_problem(e),
        })?;
    if certs.is_empty() {
        return Err(Error::TlsFile {
            file,
            path: path.to_path_buf(),
            reason: "holds no certificate (no BEGIN CERTIFICATE block)".into(),
        });
    }
    Ok(certs)
}

/// What is wrong with a PEM file, in words that quote nothing of it.
fn pem_problem(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { end_marker } => format!(
            "is cut short: a PEM block has no -----END {}----- line (was the file read while it was written?)",
            String::from_utf8_lossy(&end_marker)
        ),
        Error::IllegalSectionStart { .. } => {
            "is not PEM: a line that opens a block is malformed".to_string()
        }
        Error::Base64Decode(why) => format!("is not PEM: a block's base64 is broken ({why})"),
        other => format!("is not PEM certificates: {other}"),
    }
}

fn read(file: &'static str, path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::TlsFile {
        file,
        path: path.to_path_buf(),
        reason: format!("cannot read it: {e}"),
    })
}

fn system_roots() -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    let (added, _) =
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if added == 0 {
        return Err(Error::Tls(
            "no CA file given and the system has no CA certificates: name the servers' CA with Tls::ca_pem_file".into(),
        ));
    }
    Ok(roots)
}

/// A TLS failure found anywhere in `err`'s chain, in words that say what to do; `None`
/// when the chain holds none.
pub(crate) fn explain(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(tls) = rustls_error(err) {
            return Some(describe(tls));
        }
        next = err.source();
    }
    None
}

/// The rustls error `err` is, or that an `io::Error` carries (its `source` skips it).
fn rustls_error<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = err.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = err.downcast_ref::<io::Error>()?.get_ref()?;
    rustls_error(inner)
}

fn describe(err: &rustls::Error) -> String {
    use rustls::Error as E;
    let text = match err {
        E::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => {
                "the server's certificate is not trusted: no CA the client trusts signed it \
                 (name the servers' CA with Tls::ca_pem_file)"
                    .to_string()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("the server's certificate is not valid for the name dialed: {cert}")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the server's certificate has expired: {cert}")
            }
            other => format!("the server's certificate is refused: {other}"),
        },
        E::AlertReceived(AlertDescription::CertificateRequired) => {
            "the server requires a client certificate (give one with Tls::identity_pem_files)"
                .to_string()
        }
        E::AlertReceived(
            alert @ (AlertDescription::UnknownCA
            | AlertDescription::BadCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::AccessDenied),
        ) => format!("the server refused the client certificate: {alert:?}"),
        other => other.to_string(),
    };
    format!("TLS handshake failed: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_says_what_to_do() {
        assert_eq!(
            describe(&rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer
            )),
            "TLS handshake failed: the server's certificate is not trusted: no CA the client \
             trusts signed it (name the servers' CA with Tls::ca_pem_file)"
        );
        assert_eq!(
            describe(&rustls::Error::AlertReceived(
                AlertDescription::CertificateRequired
            )),
            "TLS handshake failed: the server requires a client certificate (give one with \
             Tls::identity_pem_files)"
        );
        assert_eq!(
            describe(&rustls::Error::AlertReceived(AlertDescription::UnknownCA)),
            "TLS handshake failed: the server refused the client certificate: UnknownCA"
        );
    }

    #[test]
    fn a_failure_inside_an_io_error_is_found() {
        let io = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::Expired),
        );
        let wrapped = io::Error::other(io);
        assert_eq!(
            explain(&wrapped).as_deref(),
            Some("TLS handshake failed: the server's certificate has expired: Expired")
        );
        assert_eq!(explain(&io::Error::other("refused")), None);
    }

    #[test]
    fn an_unreadable_file_is_named() {
        let err = Tls::new().ca_pem_file("/nonexistent/ca.pem").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("CA file /nonexistent/ca.pem: cannot read it: "),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here\n").unwrap();
        assert_eq!(
            Tls::new().ca_pem_file(&empty).unwrap_err().to_string(),
            format!(
                "CA file {}: holds no certificate (no BEGIN CERTIFICATE block)",
                empty.display()
            )
        );
        let missing = dir.path().join("client.key");
        let err = Tls::new().identity_pem_files(&empty, &missing).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "client certificate file {}: holds no certificate (no BEGIN CERTIFICATE block)",
                empty.display()
            )
        );
    }
}
