//! TLS on the server's own ports: the certificate and key it serves, the CA its clients'
//! certificates must come from (mutual TLS), and the rustls configuration each port's
//! handshakes use, swapped whole when the files change (`crate::reload` watches them).
//!
//! - [`ServingTls`]: the files, as the validated config names them;
//! - [`Loaded`]: those files read and checked (the key matches the certificate, the CA file
//!   holds CA certificates), with the leaf's subject and expiry for logs and metrics;
//! - [`Tls`]: what serves them: one [`Acceptor`] per port, swapped by [`Tls::reload`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{RootCertStore, ServerConfig};

use crate::metrics::{Metrics, PortLabels};

/// What the HTTP port offers in ALPN: both protocols on one port, as the plain port serves
/// both.
const ALPN_HTTP: [&[u8]; 2] = [b"h2", b"http/1.1"];
/// What the gRPC port offers in ALPN: gRPC is HTTP/2 only, and a client that offers only
/// `http/1.1` is refused at the handshake rather than answered in a protocol it did not
/// choose.
const ALPN_GRPC: [&[u8]; 1] = [b"h2"];

/// The TLS files the server serves with, as validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingTls {
    /// The certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The CA certificates (PEM) that sign the clients' certificates; `None` asks for none.
    pub client_ca: Option<PathBuf>,
    /// Whether the Thrift port speaks TLS too.
    pub thrift: bool,
}

/// A TLS file that cannot be used: the setting that names it, the file, and what is wrong,
/// never what the file holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {}: {problem}", .path.display())]
pub struct TlsFileError {
    /// The setting: `tls_cert`, `tls_key` or `tls_client_ca`.
    pub key: &'static str,
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

impl TlsFileError {
    fn new(key: &'static str, path: &Path, problem: impl ToString) -> TlsFileError {
        TlsFileError {
            key,
            path: path.to_path_buf(),
            problem: problem.to_string(),
        }
    }
}

/// The files of a [`ServingTls`], read and checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    certified: Arc<CertifiedKey>,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// When the leaf certificate expires (its notAfter), in Unix seconds.
    pub not_after: i64,
    /// The leaf's subject, as in `CN=localhost`.
    pub subject: String,
    /// The leaf's serial number, in hex.
    pub serial: String,
}

impl Loaded {
    /// Reads the certificate, the key and the client CA of `files`.
    ///
    /// # Errors
    ///
    /// A file cannot be read or holds nothing usable, or the key is not the certificate's.
    pub fn read(files: &ServingTls) -> Result<Loaded, TlsFileError> {
        snowmint_lease::install_crypto_provider();
        let chain = certificates("tls_cert", &files.cert)?;
        let key = private_key(&files.key)?;
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let leaf = x509_parser::parse_x509_certificate(&chain[0])
            .map_err(|e| {
                TlsFileError::new(
                    "tls_cert",
                    &files.cert,
                    format!("not an X.509 certificate: {e}"),
                )
            })?
            .1;
        let not_after = leaf.validity().not_after.timestamp();
        let subject = leaf.subject().to_string();
        let serial = leaf.raw_serial_as_string().replace(':', "");
        let certified = CertifiedKey::from_der(chain, key, &provider).map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsFileError::new(
                "tls_key",
                &files.key,
                format!(
                    "is not the private key of the certificate in tls_cert {}",
                    files.cert.display()
                ),
            ),
            other => TlsFileError::new(
                "tls_key",
                &files.key,
                format!("is not a key the server can sign with: {other}"),
            ),
        })?;
        let verifier = files
            .client_ca
            .as_deref()
            .map(client_verifier)
            .transpose()?;
        Ok(Loaded {
            certified: Arc::new(certified),
            verifier,
            not_after,
            subject,
            serial,
        })
    }

    /// A server configuration serving this pair, asking for client certificates if a
    /// client CA is set, offering `alpn`.
    fn server_config(&self, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let builder = ServerConfig::builder();
        let builder = match &self.verifier {
            Some(verifier) => builder.with_client_cert_verifier(Arc::clone(verifier)),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(Arc::new(SingleCertAndKey::from(Arc::clone(
            &self.certified,
        ))));
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

/// The certificates of a PEM file, leaf first.
fn certificates(
    key: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    let bytes = read(key, path)?;
    snowmint_lease::pem_certificates(&bytes).map_err(|why| TlsFileError::new(key, path, why))
}

/// The private key of a PEM file. Its errors never quote the file.
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsFileError> {
    let bytes = read("tls_key", path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| {
        TlsFileError::new(
            "tls_key",
            path,
            "holds no private key (no BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block)",
        )
    })
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsFileError> {
    snowmint_lease::read_small_file(path)
        .map_err(|e| TlsFileError::new(key, path, format!("cannot be read: {e}")))
}

/// A verifier that takes only client certificates signed by the CAs of `path`.
fn client_verifier(path: &Path) -> Result<Arc<dyn ClientCertVerifier>, TlsFileError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates("tls_client_ca", path)? {
        roots.add(cert).map_err(|e| {
            TlsFileError::new(
                "tls_client_ca",
                path,
                format!("is not a CA certificate: {e}"),
            )
        })?;
    }
    WebPkiClientVerifier::builder(Arc::new(roots))
        .build()
        .map_err(|e| TlsFileError::new("tls_client_ca", path, e))
}

/// One port's TLS: the configuration its new handshakes use, swapped by the reloader.
#[derive(Debug, Clone)]
pub struct Acceptor(Arc<ArcSwap<ServerConfig>>);

impl Acceptor {
    /// Starts a handshake on `stream` with the configuration in force now.
    pub fn accept<S>(&self, stream: S) -> tokio_rustls::Accept<S>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        tokio_rustls::TlsAcceptor::from(self.0.load_full()).accept(stream)
    }
}

/// A port that serves TLS: its name in the metrics, its ALPN and its acceptor.
#[derive(Debug)]
struct Port {
    label: &'static str,
    alpn: &'static [&'static [u8]],
    acceptor: Acceptor,
}

/// The server's TLS: the files it reads, what it loaded from them last, and the ports that
/// serve it.
#[derive(Debug)]
pub struct Tls {
    files: ServingTls,
    loaded: Mutex<Loaded>,
    ports: Mutex<Vec<Port>>,
}

impl Tls {
    /// Reads `files`.
    ///
    /// # Errors
    ///
    /// As [`Loaded::read`].
    pub fn load(files: ServingTls) -> Result<Tls, TlsFileError> {
        let loaded = Loaded::read(&files)?;
        Ok(Tls {
            files,
            loaded: Mutex::new(loaded),
            ports: Mutex::new(Vec::new()),
        })
    }

    /// The files it serves.
    #[must_use]
    pub fn files(&self) -> &ServingTls {
        &self.files
    }

    /// What it serves now.
    #[must_use]
    pub fn loaded(&self) -> Loaded {
        lock(&self.loaded).clone()
    }

    /// The acceptor of the port `label` (`http`, `grpc`, `thrift` or `admin`, which offers
    /// what `http` offers), or `None` if that port speaks plain text (Thrift without
    /// `thrift_tls`). Its certificate's expiry goes into `metrics`.
    pub fn acceptor(&self, label: &'static str, metrics: &Metrics) -> Option<Acceptor> {
        let alpn: &'static [&'static [u8]] = match label {
            "thrift" if !self.files.thrift => return None,
            "thrift" => &[],
            "grpc" => &ALPN_GRPC,
            _ => &ALPN_HTTP,
        };
        let loaded = lock(&self.loaded);
        let acceptor = Acceptor(Arc::new(ArcSwap::new(loaded.server_config(alpn))));
        metrics
            .tls_certificate_expiry
            .get_or_create(&PortLabels { port: label })
            .set(loaded.not_after);
        lock(&self.ports).push(Port {
            label,
            alpn,
            acceptor: acceptor.clone(),
        });
        Some(acceptor)
    }

    /// Reads the files again and, if they are usable, has every port's new handshakes use
    /// them; otherwise the old pair keeps serving. Counted, by port, in `metrics`.
    ///
    /// # Errors
    ///
    /// As [`Loaded::read`]: nothing was swapped.
    pub fn reload(&self, metrics: &Metrics) -> Result<Loaded, TlsFileError> {
        let read = Loaded::read(&self.files);
        let ports = lock(&self.ports);
        for port in ports.iter() {
            let labels = PortLabels { port: port.label };
            match &read {
                Ok(loaded) => {
                    port.acceptor.0.store(loaded.server_config(port.alpn));
                    metrics
                        .tls_certificate_expiry
                        .get_or_create(&labels)
                        .set(loaded.not_after);
                    metrics.tls_reloads.get_or_create(&labels).inc();
                }
                Err(_) => {
                    metrics.tls_reload_failures.get_or_create(&labels).inc();
                }
            }
        }
        if let Ok(loaded) = &read {
            *lock(&self.loaded) = loaded.clone();
        }
        read
    }
}

/// A lock that a panic elsewhere does not poison for good: what it guards is replaced whole.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
