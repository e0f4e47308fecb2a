//! What a lease URL says about security, the same for every backend:
//!
//! - the TLS files, `tls_ca=FILE`, `tls_cert=FILE` and `tls_key=FILE`, read into one rustls
//!   client configuration ([`TlsFiles::client_config`]);
//! - a password read from a file, `password_file=FILE` ([`Secured::password`]), so that it
//!   is never on a command line;
//! - the URL as it may be shown anywhere: [`redact`] hides every secret it holds.
//!
//! Every TLS connection in the binary uses one crypto provider, aws-lc-rs, installed by
//! [`install_crypto_provider`] before the first handshake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

/// The most bytes a certificate, key, CA, token or password file may hold: far more than
/// any real one, and a bound on what a file swapped for a device could make the process
/// read.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads a small regular file: a certificate, a key, a CA, a token file or a password file,
/// at start or again while the process runs. A FIFO, a device or a directory put where the
/// file was is refused at once rather than waited on or read without end (the file is
/// opened without blocking and checked before it is read), and so is a file larger than
/// [`MAX_FILE_BYTES`].
///
/// # Errors
///
/// The file cannot be opened or read, is not a regular file, or is too large; the message
/// says which, never what the file holds.
pub fn read_small_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a directory)",
        ));
    }
    let too_large = || {
        Error::new(
            ErrorKind::InvalidData,
            format!("larger than the {MAX_FILE_BYTES} bytes a file of this kind may hold"),
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_small_file`] as text.
///
/// # Errors
///
/// As [`read_small_file`], and text that is not UTF-8.
pub fn read_small_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_small_file(path)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// The URL parameters this module reads, whatever the backend.
pub const PARAMETERS: [&str; 4] = ["tls_ca", "tls_cert", "tls_key", "password_file"];

/// Installs aws-lc-rs as the process's rustls crypto provider, unless one is installed
/// already. Idempotent: the binary calls it at start, and every function here that builds
/// a TLS configuration calls it too, so that a library user needs nothing more.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread installing the same provider is fine.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}

/// The shared security parameters of one lease URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secured {
    /// The TLS files the URL names (any of them); `None` if it names none.
    pub tls: Option<TlsFiles>,
    /// The file the password is read from.
    pub password_file: Option<PathBuf>,
}

/// A registry user named in a lease URL, `USER[:PASSWORD]@HOST`, with its password from
/// the URL or from `password_file=`. Its `Debug` shows no password.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    /// The user name, percent-decoded.
    pub name: String,
    /// The password, percent-decoded or read from the password file.
    pub password: String,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The TLS files of a lease URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificates (PEM) that sign the registry's certificate; the system's roots
    /// when absent.
    pub ca: Option<PathBuf>,
    /// The client certificate (PEM, a chain allowed), for registries that authenticate
    /// clients by certificate.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub key: Option<PathBuf>,
}

impl Secured {
    /// Takes this module's [`PARAMETERS`] out of `query` (the part after `?`, without it)
    /// and returns the other pairs in their order, for the backend to read.
    ///
    /// # Errors
    ///
    /// A parameter given twice or with an empty value, or a certificate without its key
    /// (or a key without its certificate), named in the message.
    ///
    /// ```
    /// use snowmint_lease::Secured;
    /// let (secured, rest) = Secured::take("tls_ca=/etc/ca.pem&wait=1")?;
    /// assert_eq!(secured.tls.unwrap().ca.unwrap().to_str(), Some("/etc/ca.pem"));
    /// assert_eq!(rest, [("wait".to_string(), "1".to_string())]);
    /// assert!(Secured::take("tls_cert=/c.pem").unwrap_err().contains("tls_key"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn take(query: &str) -> Result<(Secured, Vec<(String, String)>), String> {
        let mut secured = Secured::default();
        let mut tls = TlsFiles::default();
        let mut rest = Vec::new();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match &*key {
                "tls_ca" => &mut tls.ca,
                "tls_cert" => &mut tls.cert,
                "tls_key" => &mut tls.key,
                "password_file" => &mut secured.password_file,
                _ => {
                    rest.push((key.into_owned(), value.into_owned()));
                    continue;
                }
            };
            if value.is_empty() {
                return Err(format!("{key}= needs a file"));
            }
            if slot.replace(PathBuf::from(&*value)).is_some() {
                return Err(format!("{key} is given twice"));
            }
        }
        match (&tls.cert, &tls.key) {
            (Some(_), None) => return Err("tls_cert needs tls_key, the certificate's key".into()),
            (None, Some(_)) => return Err("tls_key needs tls_cert, the key's certificate".into()),
            _ => {}
        }
        if tls != TlsFiles::default() {
            secured.tls = Some(tls);
        }
        Ok((secured, rest))
    }

    /// The password from [`Secured::password_file`]: the file's first line, without its
    /// line ending. `None` if the URL names no file.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or is empty.
    pub fn password(&self) -> Result<Option<String>, String> {
        let Some(path) = &self.password_file else {
            return Ok(None);
        };
        let text = read_small_text(path)
            .map_err(|e| format!("password_file={}: cannot read it: {e}", path.display()))?;
        let line = text.lines().next().unwrap_or("");
        if line.is_empty() {
            return Err(format!(
                "password_file={}: its first line is empty",
                path.display()
            ));
        }
        Ok(Some(line.to_string()))
    }
}

impl Secured {
    /// The user of `userinfo`, a URL's percent-encoded part before `@` (`None` if it has
    /// none), with its password from that part or from [`Secured::password_file`]:
    /// exactly one of the two.
    ///
    /// # Errors
    ///
    /// An empty user name, text that is not UTF-8 once decoded, a password given in both
    /// places or in neither, a password file without a user, or a password file that
    /// cannot be read. No message holds the password.
    ///
    /// ```
    /// use snowmint_lease::Secured;
    /// let user = Secured::default().user(Some("snow%40mint:p%40ss"))?.unwrap();
    /// assert_eq!((user.name.as_str(), user.password.as_str()), ("snow@mint", "p@ss"));
    /// assert!(Secured::default().user(Some("snow")).unwrap_err().contains("needs a password"));
    /// assert_eq!(Secured::default().user(None)?, None);
    /// # Ok::<(), String>(())
    /// ```
    pub fn user(&self, userinfo: Option<&str>) -> Result<Option<User>, String> {
        let decode = |part: &str| {
            percent_encoding::percent_decode_str(part)
                .decode_utf8()
                .map(|text| text.into_owned())
                .map_err(|_| "the user part is not UTF-8 once percent-decoded".to_string())
        };
        let Some(userinfo) = userinfo else {
            if self.password_file.is_some() {
                return Err("password_file needs a user name: USER@HOST".into());
            }
            return Ok(None);
        };
        let (name, password) = match userinfo.split_once(':') {
            Some((name, password)) => (decode(name)?, Some(decode(password)?)),
            None => (decode(userinfo)?, None),
        };
        if name.is_empty() {
            return Err("the user name is empty".into());
        }
        let password = match (password, self.password()?) {
            (Some(_), Some(_)) => {
                return Err(
                    "the password is given twice: in the URL and in password_file, keep one".into(),
                );
            }
            (Some(password), None) | (None, Some(password)) => password,
            (None, None) => {
                return Err(format!(
                    "user {name} needs a password: USER:PASSWORD@HOST or password_file=FILE"
                ));
            }
        };
        Ok(Some(User { name, password }))
    }
}

impl TlsFiles {
    /// A rustls client configuration that trusts [`TlsFiles::ca`] (or the system's roots)
    /// and presents the client certificate if one is named, offering `alpn`.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or holds nothing usable, named with its parameter.
    pub fn client_config(&self, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, String> {
        install_crypto_provider();
        let roots = match &self.ca {
            Some(ca) => roots_from(ca)?,
            None => system_roots()?,
        };
        let builder = ClientConfig::builder().with_root_certificates(roots);
        let mut config = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = certificates("tls_cert", cert)?;
                let key = private_key("tls_key", key)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    format!(
                        "tls_cert={} and tls_key={}: {e}",
                        cert.display(),
                        key_path(self)
                    )
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }
}

fn key_path(files: &TlsFiles) -> String {
    files
        .key
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// The certificates of a PEM file, in order (a chain, leaf first).
///
/// # Errors
///
/// The file cannot be read or holds no certificate; the message names `parameter` and the
/// file.
pub fn certificates(parameter: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(parameter, path)?;
    pem_certificates(&bytes).map_err(|why| format!("{parameter}={}: {why}", path.display()))
}

/// The certificates of PEM text, in order; or, if it holds none or a block is broken, why,
/// in words that quote nothing of the text: a file half written while it was read (a
/// rotation caught midway) says it was cut short.
///
/// # Errors
///
/// The text holds no certificate, or a PEM block in it is broken.
///
/// ```
/// let cut = b"-----BEGIN CERTIFICATE-----\nMIIB";
/// let why = snowmint_lease::pem_certificates(cut).unwrap_err();
/// assert_eq!(why, "is cut short: a PEM block has no -----END CERTIFICATE----- line (was the file read while it was written?)");
/// ```
pub fn pem_certificates(bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::Error;
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| match e {
            Error::MissingSectionEnd { end_marker } => format!(
                "is cut short: a PEM block has no -----END {}----- line (was the file read while it was written?)",
                String::from_utf8_lossy(&end_marker)
            ),
            Error::IllegalSectionStart { .. } => {
                "is not PEM: a line that opens a block is malformed".to_string()
            }
            Error::Base64Decode(why) => format!("is not PEM: a block's base64 is broken ({why})"),
            other => format!("is not PEM certificates: {other}"),
        })?;
    if certs.is_empty() {
        return Err("holds no certificate (no BEGIN CERTIFICATE block)".into());
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
///
/// # Errors
///
/// The file cannot be read or holds no private key; the message names `parameter` and the
/// file, never the key.
pub fn private_key(parameter: &str, path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = read(parameter, path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| {
        format!(
            "{parameter}={}: holds no private key (a PEM PRIVATE KEY block)",
            path.display()
        )
    })
}

fn read(parameter: &str, path: &Path) -> Result<Vec<u8>, String> {
    read_small_file(path)
        .map_err(|e| format!("{parameter}={}: cannot read it: {e}", path.display()))
}

fn roots_from(ca: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates("tls_ca", ca)? {
        roots
            .add(cert)
            .map_err(|e| format!("tls_ca={}: not a CA certificate: {e}", ca.display()))?;
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(
            "no tls_ca= given and the system has no CA certificates: name the registry's CA with tls_ca=FILE"
                .into(),
        );
    }
    Ok(roots)
}

/// `url` as it may be shown: the password of its user part and the value of every
/// parameter that holds a secret (`password`, `sslpassword`, `token`) become `***`.
/// Parameters that name a file (`password_file=`, `tls_key=`) are kept: a path is not a
/// secret.
///
/// ```
/// use snowmint_lease::redact;
/// assert_eq!(redact("rediss://app:s3cret@h:6380/0"), "rediss://app:***@h:6380/0");
/// assert_eq!(redact("etcds://h:2379?password=s3cret&tls_ca=/ca.pem"), "etcds://h:2379?password=***&tls_ca=/ca.pem");
/// assert_eq!(redact("static:3"), "static:3");
/// ```
#[must_use]
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // The user part ends at the last `@` of the URL, not at the last one before the first
    // `/` or `?`: a password that is not percent-encoded may hold `/`, `?` or `#`, and
    // every parser here but Redis's splits at that last `@`. A `@` in a parameter's value
    // then hides more than the password, never less.
    let (authority, tail) = match rest.rfind('@') {
        Some(at) if rest[..at].contains(':') => {
            let user = rest[..at].split_once(':').map_or("", |(user, _)| user);
            // A user part that holds more than a name is hidden whole.
            let user = if user.contains(['/', '?', '#', '&', '=', '@']) {
                "***".to_string()
            } else {
                format!("{user}:***")
            };
            let after = &rest[at + 1..];
            let end = after.find(['/', '?']).unwrap_or(after.len());
            (format!("{user}@{}", &after[..end]), &after[end..])
        }
        _ => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            (rest[..end].to_string(), &rest[end..])
        }
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if SECRET_PARAMETERS.contains(&key) => format!("{key}=***"),
                    _ => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// How an error names a parameter of a lease URL that it refuses: `"name"` when the name
/// is a word (letters, digits, `_`), else without it. A password that is not
/// percent-encoded and holds `?` puts its end among the parameters, where its text would
/// be quoted as a parameter's name.
#[must_use]
pub(crate) fn parameter_shown(name: &str) -> String {
    if !name.is_empty()
        && name.len() <= 40
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        format!("{name:?}")
    } else {
        "(its name is not shown: it is no word, perhaps the end of a password that is not percent-encoded)".into()
    }
}

/// The URL parameters whose values are secrets, in any backend's URL.
const SECRET_PARAMETERS: [&str; 3] = ["password", "sslpassword", "token"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_user_part_or_a_parameter_is_hidden() {
        assert_eq!(
            redact("postgres://u:p%40ss@h1:5432,h2/db?sslmode=verify-full&password=x"),
            "postgres://u:***@h1:5432,h2/db?sslmode=verify-full&password=***"
        );
        assert_eq!(
            redact("redis+sentinel://:pw@s1,s2/primary"),
            "redis+sentinel://:***@s1,s2/primary"
        );
        assert_eq!(redact("zookeeper://u@h/p"), "zookeeper://u@h/p");
        assert_eq!(redact("file:/var/lib/x"), "file:/var/lib/x");
    }

    /// An attack wrote passwords unencoded: a `/`, `?` or `#` in one ended the user part
    /// early, and the URL was quoted whole in the error that refused it.
    #[test]
    fn a_password_that_is_not_percent_encoded_is_hidden_too() {
        for (url, shown) in [
            ("rediss://app:s3/cr3t@h:6380/0", "rediss://app:***@h:6380/0"),
            (
                "etcds://app:s3?cr3t@h:2379?tls_ca=/ca.pem",
                "etcds://app:***@h:2379?tls_ca=/ca.pem",
            ),
            (
                "zookeeper://app:s3#c/r?3t@h:2181/root",
                "zookeeper://app:***@h:2181/root",
            ),
            ("postgres://app:s3/c@r3t@h/db", "postgres://app:***@h/db"),
            ("redis://:12/s3cr3t@h:6379/0", "redis://:***@h:6379/0"),
            // A `@` in a parameter's value: more is hidden, a secret parameter too.
            (
                "postgres://h/db?password=s3cr3t&sslrootcert=/a:b@c",
                "postgres://***@c",
            ),
            (
                "etcds://h:2379?tls_ca=/x@y/ca.pem",
                "etcds://h:***@y/ca.pem",
            ),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
        assert_eq!(redact("etcds://app@h:2379?tls_ca=/x@y"), "etcds://***@y");
    }

    /// The same URLs refused by the backends: no part of the password in the message, a
    /// part after a `?` taken for a parameter included.
    #[test]
    fn a_backend_refusing_a_password_that_is_not_percent_encoded_shows_none_of_it() {
        for url in [
            "rediss://app:s3cr/etPW@127.0.0.1:6380/0",
            "rediss://app:12/s3cretPW@127.0.0.1:6380/0",
            "redis://app:s3cr?etPW@127.0.0.1:6380/0",
            "redis://app:s3cr?wait=etPW@127.0.0.1:6380/0",
            "redis://app:s3cr?wait=1&etPW@127.0.0.1:6380/0",
            "etcds://app:s3cr/etPW@127.0.0.1:2379?tls_ca=/nonexistent/ca.pem",
            "etcds://app:s3cr?etPW@127.0.0.1:2379?tls_ca=/nonexistent/ca.pem",
            "zookeepers://app:s3cr/etPW@127.0.0.1:2281/snowmint",
            "zookeeper://app:s3cr?etPW@127.0.0.1:2281/snowmint",
            "zookeeper://app:s3/cr?etPW@127.0.0.1:2281/snowmint",
            "postgres://app:s3cr/etPW@127.0.0.1:5432/db?sslrootcert=/nonexistent/ca.pem",
        ] {
            let Err(err) = crate::registry_from_url(url) else {
                continue;
            };
            let said = err.to_string();
            assert!(!said.contains("etPW"), "{url}: {said}");
        }
        assert_eq!(parameter_shown("wiat"), "\"wiat\"");
        assert!(!parameter_shown("etPW@h:6379/0").contains("etPW"));
    }

    #[test]
    fn a_password_file_gives_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "s3cret\n").unwrap();
        let (secured, rest) = Secured::take(&format!("password_file={}", path.display())).unwrap();
        assert!(rest.is_empty());
        assert_eq!(secured.password().unwrap().as_deref(), Some("s3cret"));
        std::fs::write(&path, "\n").unwrap();
        assert!(
            secured
                .password()
                .unwrap_err()
                .contains("first line is empty")
        );
        let missing = Secured {
            password_file: Some(dir.path().join("none")),
            ..Secured::default()
        };
        assert!(missing.password().unwrap_err().contains("cannot read it"));
    }

    #[test]
    fn unreadable_tls_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let files = TlsFiles {
            ca: Some(empty.clone()),
            ..TlsFiles::default()
        };
        let err = files.client_config(&[]).unwrap_err();
        assert!(
            err.starts_with(&format!("tls_ca={}: holds no certificate", empty.display())),
            "{err}"
        );
        let files = TlsFiles {
            ca: Some(dir.path().join("absent.pem")),
            ..TlsFiles::default()
        };
        assert!(
            files
                .client_config(&[])
                .unwrap_err()
                .contains("cannot read it")
        );
    }
}
