//! Certificates made at test time: a CA, the pairs it signs, and the wrong ones every TLS
//! test needs (expired, from another CA, for another host name), as PEM files in a
//! temporary directory that lives as long as the [`Pki`].

use std::fs;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;
use time::OffsetDateTime;

/// The names every server certificate of the [`Pki`] holds: how tests reach a server on
/// loopback.
pub const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A certificate and its private key, as PEM files.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The certificate (one PEM block; [`Pki::chain`] writes a chain).
    pub cert: PathBuf,
    /// Its private key (PKCS#8 PEM).
    pub key: PathBuf,
}

/// A lease URL in its secured form, as snowmint takes it:
/// `SCHEME://[USER@]ADDRESS?tls_ca=CA[&tls_cert=..&tls_key=..][&password_file=..]`, where
/// `address` holds the hosts and, for backends that have one, the path.
///
/// ```
/// use std::path::Path;
/// let url = snowmint_testkit::secured_url(
///     "etcds",
///     "127.0.0.1:2379",
///     Path::new("/ca.pem"),
///     None,
///     Some(("app", Path::new("/pw"))),
/// );
/// assert_eq!(url, "etcds://app@127.0.0.1:2379?tls_ca=/ca.pem&password_file=/pw");
/// ```
#[must_use]
pub fn secured_url(
    scheme: &str,
    address: &str,
    ca: &Path,
    client: Option<&Pair>,
    user: Option<(&str, &Path)>,
) -> String {
    let user_part = user.map(|(name, _)| format!("{name}@")).unwrap_or_default();
    let mut url = format!("{scheme}://{user_part}{address}?tls_ca={}", ca.display());
    if let Some(client) = client {
        url.push_str(&format!(
            "&tls_cert={}&tls_key={}",
            client.cert.display(),
            client.key.display()
        ));
    }
    if let Some((_, password_file)) = user {
        url.push_str(&format!("&password_file={}", password_file.display()));
    }
    url
}

/// How long a certificate is valid, relative to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// From a day ago to 30 days ahead.
    Current,
    /// From a day ago to `n` days ahead: certificates told apart by their expiry.
    Days(u32),
    /// Expired yesterday.
    Expired,
}

/// One certificate authority with its key, and a second one that nothing trusts.
///
/// ```
/// let pki = snowmint_testkit::Pki::new();
/// let server = pki.server();
/// assert!(std::fs::read_to_string(&server.cert)?.starts_with("-----BEGIN CERTIFICATE-----"));
/// assert!(pki.ca().exists() && pki.foreign_ca().exists());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Pki {
    dir: TempDir,
    trusted: Authority,
    foreign: Authority,
    serial: std::sync::atomic::AtomicU32,
}

struct Authority {
    issuer: Issuer<'static, KeyPair>,
    pem: PathBuf,
}

impl Pki {
    /// Makes both authorities and writes their certificates.
    ///
    /// # Panics
    ///
    /// If the temporary directory cannot be written.
    #[must_use]
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("snowmint-pki-")
            .tempdir()
            .expect("a temporary directory for certificates");
        let trusted = Authority::new(dir.path(), "ca", "snowmint test CA");
        let foreign = Authority::new(dir.path(), "foreign-ca", "a CA nothing trusts");
        Pki {
            dir,
            trusted,
            foreign,
            serial: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// The directory the files are in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The trusted CA's certificate.
    #[must_use]
    pub fn ca(&self) -> &Path {
        &self.trusted.pem
    }

    /// The certificate of a CA that signs [`Pki::foreign_server`] and
    /// [`Pki::foreign_client`], and that no test trusts unless it says so.
    #[must_use]
    pub fn foreign_ca(&self) -> &Path {
        &self.foreign.pem
    }

    /// A server certificate for [`LOOPBACK_NAMES`], signed by the trusted CA.
    #[must_use]
    pub fn server(&self) -> Pair {
        self.issue(&Leaf::server(&LOOPBACK_NAMES), Validity::Current, false)
    }

    /// A server certificate for [`LOOPBACK_NAMES`] that may also authenticate as a client
    /// (both key purposes): etcd's JSON gateway presents its server's certificate when it
    /// connects to that server, which checks it as a client's with `--client-cert-auth`.
    #[must_use]
    pub fn server_also_client(&self) -> Pair {
        let mut leaf = Leaf::server(&LOOPBACK_NAMES);
        leaf.purposes.push(ExtendedKeyUsagePurpose::ClientAuth);
        self.issue(&leaf, Validity::Current, false)
    }

    /// A server certificate for [`LOOPBACK_NAMES`], valid as `validity` says.
    #[must_use]
    pub fn server_valid(&self, validity: Validity) -> Pair {
        self.issue(&Leaf::server(&LOOPBACK_NAMES), validity, false)
    }

    /// A server certificate for `names` only (a test of host-name checks gives a name the
    /// client does not dial).
    #[must_use]
    pub fn server_for(&self, names: &[&str]) -> Pair {
        self.issue(&Leaf::server(names), Validity::Current, false)
    }

    /// A server certificate for [`LOOPBACK_NAMES`] that expired yesterday.
    #[must_use]
    pub fn expired_server(&self) -> Pair {
        self.server_valid(Validity::Expired)
    }

    /// A server certificate for [`LOOPBACK_NAMES`] signed by the foreign CA.
    #[must_use]
    pub fn foreign_server(&self) -> Pair {
        self.issue(&Leaf::server(&LOOPBACK_NAMES), Validity::Current, true)
    }

    /// A client certificate whose common name is `name` (etcd takes it as the user name),
    /// signed by the trusted CA.
    #[must_use]
    pub fn client(&self, name: &str) -> Pair {
        self.issue(&Leaf::client(name), Validity::Current, false)
    }

    /// A client certificate with no common name (an empty subject), signed by the trusted
    /// CA: etcd's JSON gateway refuses a client certificate that has one, since the name
    /// would not reach etcd's role checks.
    #[must_use]
    pub fn client_without_name(&self) -> Pair {
        self.issue(&Leaf::client(""), Validity::Current, false)
    }

    /// A client certificate whose common name is `name`, signed by the foreign CA.
    #[must_use]
    pub fn foreign_client(&self, name: &str) -> Pair {
        self.issue(&Leaf::client(name), Validity::Current, true)
    }

    /// A client certificate that expired yesterday.
    #[must_use]
    pub fn expired_client(&self, name: &str) -> Pair {
        self.issue(&Leaf::client(name), Validity::Expired, false)
    }

    /// `pair`'s certificate followed by the trusted CA's, in one file: a chain, as
    /// cert-manager writes `tls.crt`.
    ///
    /// # Panics
    ///
    /// If the files cannot be read or written.
    #[must_use]
    pub fn chain(&self, pair: &Pair) -> Pair {
        let mut pem = fs::read_to_string(&pair.cert).expect("the leaf certificate");
        pem.push_str(&fs::read_to_string(self.ca()).expect("the CA certificate"));
        let path = self.path(&format!("{}-chain.pem", stem(&pair.cert)));
        fs::write(&path, pem).expect("the chain file");
        Pair {
            cert: path,
            key: pair.key.clone(),
        }
    }

    fn issue(&self, leaf: &Leaf, validity: Validity, foreign: bool) -> Pair {
        let n = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut params = CertificateParams::new(leaf.names.clone()).expect("valid subject names");
        params.distinguished_name = DistinguishedName::new();
        if !leaf.common_name.is_empty() {
            params
                .distinguished_name
                .push(DnType::CommonName, leaf.common_name.clone());
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages.clone_from(&leaf.purposes);
        let (not_before, not_after) = span(validity);
        params.not_before = not_before;
        params.not_after = not_after;
        let key = KeyPair::generate().expect("a key pair");
        let authority = if foreign {
            &self.foreign
        } else {
            &self.trusted
        };
        let cert = params
            .signed_by(&key, &authority.issuer)
            .expect("a signed certificate");
        let stem = format!("{}-{n}", leaf.kind);
        let pair = Pair {
            cert: self.path(&format!("{stem}.pem")),
            key: self.path(&format!("{stem}.key")),
        };
        fs::write(&pair.cert, cert.pem()).expect("the certificate file");
        fs::write(&pair.key, key.serialize_pem()).expect("the key file");
        pair
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

impl Authority {
    fn new(dir: &Path, stem: &str, name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let (not_before, not_after) = span(Validity::Days(365));
        params.not_before = not_before;
        params.not_after = not_after;
        let key = KeyPair::generate().expect("a key pair");
        let cert = params.self_signed(&key).expect("a self-signed CA");
        let pem = dir.join(format!("{stem}.pem"));
        fs::write(&pem, cert.pem()).expect("the CA file");
        Authority {
            issuer: Issuer::new(params, key),
            pem,
        }
    }
}

/// What a leaf certificate is for.
struct Leaf {
    kind: &'static str,
    common_name: String,
    names: Vec<String>,
    purposes: Vec<ExtendedKeyUsagePurpose>,
}

impl Leaf {
    fn server(names: &[&str]) -> Self {
        Leaf {
            kind: "server",
            common_name: names.first().copied().unwrap_or("server").to_string(),
            names: names.iter().map(|name| (*name).to_string()).collect(),
            purposes: vec![ExtendedKeyUsagePurpose::ServerAuth],
        }
    }

    fn client(name: &str) -> Self {
        Leaf {
            kind: "client",
            common_name: name.to_string(),
            names: Vec::new(),
            purposes: vec![ExtendedKeyUsagePurpose::ClientAuth],
        }
    }
}

/// The dates `validity` names, from now.
fn span(validity: Validity) -> (OffsetDateTime, OffsetDateTime) {
    let now = OffsetDateTime::now_utc();
    let day = time::Duration::days(1);
    match validity {
        Validity::Current => (now - day, now + day * 30),
        Validity::Days(n) => (now - day, now + day * i32::try_from(n).unwrap_or(i32::MAX)),
        Validity::Expired => (now - day * 30, now - day),
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}
