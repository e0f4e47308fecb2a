//! A TLS failure in plain words: which check failed, found wherever it lies in an error's
//! chain (a client library wraps rustls's error in its own, often in an `io::Error`).

use std::error::Error;

use rustls::{AlertDescription, CertificateError};

use crate::secured::TlsFiles;

/// What failed, if `err` or one of its causes is a TLS failure, said for an operator:
/// "the server's certificate has expired", "... is not signed by tls_ca=FILE", "... is
/// for other.invalid, not 127.0.0.1", "the server refused our client certificate ...", "the
/// server does not speak TLS ...". `files` are the URL's, to name the one at fault.
pub(crate) fn tls_refusal(err: &(dyn Error + 'static), files: &TlsFiles) -> Option<String> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(tls) = as_rustls(err) {
            return Some(words(tls, files));
        }
        next = err.source();
    }
    None
}

/// `err` as rustls's error, also when `io::Error`s carry it, one in another (an
/// `io::Error`'s `source` skips the error it carries).
fn as_rustls<'a>(mut err: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    loop {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let inner = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)?;
        err = inner;
    }
}

fn words(err: &rustls::Error, files: &TlsFiles) -> String {
    match err {
        rustls::Error::InvalidCertificate(cert) => format!(
            "the server's certificate {}",
            certificate_words(cert, files)
        ),
        rustls::Error::AlertReceived(alert) => alert_words(*alert, files),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the server does not speak TLS (a plain-text port?)".into()
        }
        other => format!("the TLS handshake failed: {other}"),
    }
}

fn certificate_words(err: &CertificateError, files: &TlsFiles) -> String {
    match err {
        CertificateError::UnknownIssuer => match &files.ca {
            Some(ca) => format!("is not signed by tls_ca={}", ca.display()),
            None => "is not signed by a CA the system trusts (name its CA with tls_ca=FILE)".into(),
        },
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "has expired".into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "is not valid yet".into()
        }
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "is for {}, not {}",
            if presented.is_empty() {
                "no host name".to_string()
            } else {
                presented
                    .iter()
                    .map(|name| presented_name(name))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            expected.to_str()
        ),
        CertificateError::NotValidForName => "is not for this host name".into(),
        CertificateError::Revoked => "is revoked".into(),
        other => format!("is refused: {other:?}"),
    }
}

/// A name as rustls presents it, `DnsName("h")` or `IpAddress(1.2.3.4)`, as written.
fn presented_name(name: &str) -> &str {
    ["DnsName(", "IpAddress("]
        .iter()
        .find_map(|kind| name.strip_prefix(kind))
        .and_then(|inner| inner.strip_suffix(')'))
        .map_or(name, |inner| inner.trim_matches('"'))
}

fn alert_words(alert: AlertDescription, files: &TlsFiles) -> String {
    let client = match (&files.cert, alert) {
        (_, AlertDescription::CertificateExpired) => "it has expired".to_string(),
        (Some(cert), _) => format!("tls_cert={} is not one it trusts", cert.display()),
        (None, _) => "it asks for one: give tls_cert=FILE and tls_key=FILE".to_string(),
    };
    match alert {
        AlertDescription::BadCertificate
        | AlertDescription::CertificateRequired
        | AlertDescription::UnknownCA
        | AlertDescription::CertificateUnknown
        | AlertDescription::CertificateExpired
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::AccessDenied => {
            format!("the server refused our client certificate: {client} ({alert:?})")
        }
        other => format!("the server ended the TLS handshake ({other:?})"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rustls::pki_types::ServerName;

    use super::*;

    fn files(cert: bool) -> TlsFiles {
        TlsFiles {
            ca: Some(PathBuf::from("/x/ca.pem")),
            cert: cert.then(|| PathBuf::from("/x/client.pem")),
            key: cert.then(|| PathBuf::from("/x/client-key.pem")),
        }
    }

    /// As a client library reports them: rustls's error in an `io::Error` in its own.
    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Wrapper(#[source] std::io::Error);

    fn wrapped(err: rustls::Error) -> Wrapper {
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, err);
        Wrapper(std::io::Error::other(inner))
    }

    #[test]
    fn each_check_is_named_in_plain_words() {
        let said = |err: rustls::Error, cert: bool| tls_refusal(&wrapped(err), &files(cert));
        assert_eq!(
            said(CertificateError::UnknownIssuer.into(), false).unwrap(),
            "the server's certificate is not signed by tls_ca=/x/ca.pem"
        );
        assert_eq!(
            said(CertificateError::Expired.into(), false).unwrap(),
            "the server's certificate has expired"
        );
        let name = CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("127.0.0.1").unwrap(),
            presented: vec![
                "DnsName(\"other.invalid\")".into(),
                "IpAddress(10.0.0.1)".into(),
            ],
        };
        assert_eq!(
            said(name.into(), false).unwrap(),
            "the server's certificate is for other.invalid, 10.0.0.1, not 127.0.0.1"
        );
        assert_eq!(
            said(
                rustls::Error::AlertReceived(AlertDescription::CertificateRequired),
                false
            )
            .unwrap(),
            "the server refused our client certificate: it asks for one: give tls_cert=FILE and tls_key=FILE (CertificateRequired)"
        );
        assert_eq!(
            said(
                rustls::Error::AlertReceived(AlertDescription::BadCertificate),
                true
            )
            .unwrap(),
            "the server refused our client certificate: tls_cert=/x/client.pem is not one it trusts (BadCertificate)"
        );
        let plain = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        assert_eq!(
            said(plain, false).unwrap(),
            "the server does not speak TLS (a plain-text port?)"
        );
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(tls_refusal(&Wrapper(refused), &files(false)), None);
    }
}
