//! Why a registry refused a secured connection, in plain words: which TLS check failed,
//! read from the rustls error wherever a client library wrapped it. Each backend adds
//! its own words for what its server says after the handshake (a wrong password, missing
//! rights).

use std::error::Error;

use rustls::{AlertDescription, CertificateError};

/// The words for the first TLS failure in `err`'s chain, if there is one: `TLS refused:
/// ...`. `trust` names what the certificate must be signed by (`tls_ca=FILE`, or the
/// system's CAs).
pub(crate) fn tls_refusal(err: &(dyn Error + 'static), trust: &str) -> Option<String> {
    tls_refusal_with(err, trust, None)
}

/// [`tls_refusal`], saying which client certificate the server refused: `Some(file)` the
/// URL's `tls_cert=FILE`, `Some(None)` none given, `None` not known here.
fn tls_refusal_with(
    err: &(dyn Error + 'static),
    trust: &str,
    cert: Option<Option<&std::path::Path>>,
) -> Option<String> {
    let tls = chain(err).find_map(|cause| cause.downcast_ref::<rustls::Error>())?;
    Some(format!("TLS refused: {}", words(tls, trust, cert)))
}

/// [`tls_refusal`] for a lease URL's TLS files: the certificate must be signed by the CA of
/// `tls_ca=`, or the system's.
pub(crate) fn tls_refusal_for(
    err: &(dyn Error + 'static),
    files: &crate::secured::TlsFiles,
) -> Option<String> {
    tls_refusal_with(
        err,
        &trust("tls_ca", files.ca.as_deref()),
        Some(files.cert.as_deref()),
    )
}

/// How long [`handshake_refusal`] may take: a server that answers does so in far less.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(750);

/// Why `host` (`name:port`) refuses a TLS connection with `files`, found by a handshake of
/// its own: for a client library that reports a refused handshake only as a connection
/// lost or closed (a server refuses a client certificate under TLS 1.3 after the
/// handshake, so the library's first write meets a closed socket). `None` if the
/// handshake succeeds and the server then says nothing.
pub(crate) async fn handshake_refusal(
    host: &str,
    files: &crate::secured::TlsFiles,
) -> Option<String> {
    use std::sync::Arc;
    use tokio::io::AsyncReadExt;
    let config = files.client_config(&[]).ok()?;
    let (name, _) = host.rsplit_once(':')?;
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let server = rustls::pki_types::ServerName::try_from(name.to_string()).ok()?;
    let probe = async {
        let stream = tokio::net::TcpStream::connect(host).await.ok()?;
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(&config));
        let mut tls = match connector.connect(server, stream).await {
            Ok(tls) => tls,
            Err(err) => return tls_refusal_for(&err, files),
        };
        // TLS 1.3 sends a refusal of the client's certificate after the handshake.
        let mut byte = [0u8; 1];
        match tokio::time::timeout(PROBE_TIMEOUT / 2, tls.read(&mut byte)).await {
            Ok(Err(err)) => tls_refusal_for(&err, files),
            _ => None,
        }
    };
    tokio::time::timeout(PROBE_TIMEOUT, probe).await.ok()?
}

/// `err`, then each of its causes, looking inside I/O errors, whose `source` skips the
/// error they carry, and through the shared (`Arc`) errors client libraries keep, whose
/// type hides the one they share.
pub(crate) fn chain<'a>(
    err: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(unshared(err)), |&cause: &&'a (dyn Error + 'static)| {
        let next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn Error + 'static))
                .or_else(|| cause.source()),
            None => cause.source(),
        };
        next.map(unshared)
    })
}

/// The error an `Arc` shares, or `err` itself.
fn unshared<'a>(err: &'a (dyn Error + 'static)) -> &'a (dyn Error + 'static) {
    match err.downcast_ref::<std::sync::Arc<dyn Error + Send + Sync>>() {
        Some(shared) => &**shared,
        None => err,
    }
}

fn words(err: &rustls::Error, trust: &str, cert: Option<Option<&std::path::Path>>) -> String {
    match err {
        rustls::Error::InvalidCertificate(cert) => certificate(cert, trust),
        rustls::Error::AlertReceived(alert) => alert_words(*alert, cert),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the server does not speak TLS on this port (TLS to a plain port?)".into()
        }
        other => other.to_string(),
    }
}

/// A server's alert, for the client certificate it refused (`cert`, as for
/// [`tls_refusal_with`]) or anything else that ended the handshake.
fn alert_words(alert: AlertDescription, cert: Option<Option<&std::path::Path>>) -> String {
    match alert {
        AlertDescription::CertificateRequired => format!(
            "the server refused our client certificate: it asks for one: give tls_cert=FILE and tls_key=FILE ({alert:?})"
        ),
        AlertDescription::CertificateExpired => {
            format!("the server refused our client certificate: it has expired ({alert:?})")
        }
        AlertDescription::BadCertificate
        | AlertDescription::UnknownCA
        | AlertDescription::CertificateUnknown
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::AccessDenied => match cert {
            Some(None) => format!(
                "the server refused our client certificate: it asks for one: give tls_cert=FILE and tls_key=FILE ({alert:?})"
            ),
            Some(Some(cert)) => format!(
                "the server refused our client certificate: tls_cert={} is not one it trusts ({alert:?})",
                cert.display()
            ),
            None => format!("the server refused our client certificate ({alert:?})"),
        },
        other => format!("the server ended the handshake ({other:?})"),
    }
}

fn certificate(err: &CertificateError, trust: &str) -> String {
    match err {
        CertificateError::Expired => "the server's certificate has expired".into(),
        CertificateError::ExpiredContext { .. } => "the server's certificate has expired".into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet".into()
        }
        CertificateError::UnknownIssuer => {
            format!("the server's certificate is not signed by {trust} (UnknownIssuer)")
        }
        CertificateError::NotValidForName => {
            "the server's certificate is not for the host name connected to (NotValidForName)"
                .into()
        }
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "the server's certificate is for {}, not {} (NotValidForName)",
            presented
                .iter()
                .map(|name| bare(name))
                .collect::<Vec<_>>()
                .join(", "),
            expected.to_str()
        ),
        other => format!("the server's certificate is refused ({other:?})"),
    }
}

/// A name as rustls presents it, `DnsName("h")` or `IpAddress(10.0.0.1)`, without its kind.
fn bare(presented: &str) -> &str {
    presented
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .map_or(presented, |inner| inner.trim_matches('"'))
}

/// What a certificate must be signed by, for messages: the `tls_ca=` file (or the
/// parameter the URL named it with), or the system's CAs.
pub(crate) fn trust(parameter: &str, ca: Option<&std::path::Path>) -> String {
    match ca {
        Some(ca) => format!("{parameter}={}", ca.display()),
        None => "a CA the system trusts".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_refusal_is_said_in_plain_words_through_io_errors() {
        let inner = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, inner);
        assert_eq!(
            tls_refusal(&io, "tls_ca=/x/ca.pem").as_deref(),
            Some(
                "TLS refused: the server's certificate is not signed by tls_ca=/x/ca.pem (UnknownIssuer)"
            )
        );
        let expired = rustls::Error::InvalidCertificate(CertificateError::Expired);
        assert_eq!(
            tls_refusal(&expired, "").as_deref(),
            Some("TLS refused: the server's certificate has expired")
        );
        assert_eq!(bare("DnsName(\"other.invalid\")"), "other.invalid");
        assert_eq!(bare("IpAddress(10.0.0.1)"), "10.0.0.1");
        let plain = std::io::Error::other("connection reset");
        assert_eq!(tls_refusal(&plain, ""), None);
    }
}
