//! A ZooKeeper server in its production form: a TLS client port (Netty, PEM files,
//! client certificates of the test CA required), and a digest user for snowmint, whose
//! nodes carry an ACL that only that user may change.

use std::fs;
use std::path::{Path, PathBuf};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::instance::{Instance, Kind};
use crate::net::{self, free_port};
use crate::pki::{Pair, Pki};
use crate::program;
use crate::wait::eventually;
use crate::zookeeper::{
    KIND, MAIN_CLASS, ROOT, ZooKeeper, configure, server_jar, serves, zookeeper_command,
};

/// A secured server's ready check: it answers `srvr` on its plain port (which it keeps
/// for this check alone), and its TLS port accepts connections. The server opens the TLS
/// port after it starts serving on the plain one, and accepts connections on a port
/// before it serves them: each check alone comes too early.
const SECURED_KIND: Kind = Kind {
    ready: serves_securely,
    ..KIND
};

/// The TLS port of each secured server, by its plain port, for [`SECURED_KIND`]'s check.
static SECURE_PORTS: Mutex<BTreeMap<u16, u16>> = Mutex::new(BTreeMap::new());

fn serves_securely(port: u16) -> bool {
    let secure = SECURE_PORTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&port)
        .copied();
    serves(port) && secure.is_some_and(|secure| net::connect(secure).is_ok())
}

/// The digest user snowmint authenticates as on a secured server.
pub const ZOOKEEPER_USER: &str = "snowmint";

/// What a secured server's guard knows: its TLS port and files, and the password file of
/// [`ZOOKEEPER_USER`].
pub(crate) struct Secured {
    secure_port: u16,
    tls: PathBuf,
    password_file: PathBuf,
}

impl Secured {
    fn file(&self, name: &str) -> PathBuf {
        self.tls.join(name)
    }

    fn client(&self) -> Pair {
        Pair {
            cert: self.file("client.pem"),
            key: self.file("client.key"),
        }
    }

    /// The URL snowmint takes: the TLS port, the CA, a client certificate, the digest user
    /// and its password file.
    pub(crate) fn url(&self) -> String {
        ZooKeeper::secured_url_for(
            self.secure_port,
            &self.file("ca.pem"),
            Some(&self.client()),
            Some((ZOOKEEPER_USER, &self.password_file)),
        )
    }
}

impl ZooKeeper {
    /// Starts a ZooKeeper server that also serves TLS on a port of its own
    /// ([`ZooKeeper::secure_port`]: Netty's `secureClientPort`, with a server certificate
    /// from `pki` as a PEM key store and the test CA as the trust store, so that a client
    /// certificate of that CA is required). Its plain port ([`ZooKeeper::port`]) stays for
    /// the readiness check. [`ZooKeeper::url`] is then a `zookeepers://` URL of the TLS port with
    /// the digest user [`ZOOKEEPER_USER`] and its password file; the first acquisition makes
    /// the root node, with that user's ACL.
    ///
    /// # Panics
    ///
    /// As [`ZooKeeper::start`].
    ///
    /// ```no_run
    /// let pki = snowmint_testkit::Pki::new();
    /// let zookeeper = snowmint_testkit::ZooKeeper::start_secured(&pki);
    /// assert!(zookeeper.url().starts_with(&format!(
    ///     "zookeepers://snowmint@127.0.0.1:{}/snowmint?tls_ca=",
    ///     zookeeper.secure_port()
    /// )));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start_secured(pki: &Pki) -> ZooKeeper {
        let java = program::find_on_path("java", "default-jre-headless");
        if let Err(missing) = server_jar() {
            panic!("{missing}");
        }
        let mut secure_port = 0;
        let server = Instance::start(&SECURED_KIND, |port, dir| {
            secure_port = free_port();
            SECURE_PORTS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(port, secure_port);
            let tls = dir.join("tls");
            fs::create_dir_all(&tls).expect("the TLS directory");
            copy(pki.ca(), &tls.join("ca.pem"));
            write_key_store(&pki.server(), &tls.join("server.pem"));
            let client = pki.client(ZOOKEEPER_USER);
            copy(&client.cert, &tls.join("client.pem"));
            copy(&client.key, &tls.join("client.key"));
            let config = configure(port, dir);
            let mut text = fs::read_to_string(&config).expect("zoo.cfg");
            text.push_str(&format!(
                "secureClientPort={secure_port}\nsecureClientPortAddress=127.0.0.1\n"
            ));
            fs::write(&config, text).expect("zoo.cfg");
            let properties = vec![
                "zookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
                    .to_string(),
                format!(
                    "zookeeper.ssl.keyStore.location={}",
                    tls.join("server.pem").display()
                ),
                "zookeeper.ssl.keyStore.type=PEM".to_string(),
                format!(
                    "zookeeper.ssl.trustStore.location={}",
                    tls.join("ca.pem").display()
                ),
                "zookeeper.ssl.trustStore.type=PEM".to_string(),
                "zookeeper.ssl.clientAuth=need".to_string(),
            ];
            let java = java.clone();
            move || zookeeper_command(&java, &properties, MAIN_CLASS, &config)
        });
        let tls = server.dir.path().join("tls");
        let password_file = tls.join("snowmint.password");
        let password: String = std::iter::repeat_with(fastrand::alphanumeric)
            .take(20)
            .collect();
        fs::write(&password_file, format!("{password}\n")).expect("the password file");
        let zookeeper = ZooKeeper {
            server,
            secured: Some(Secured {
                secure_port,
                tls,
                password_file,
            }),
        };
        zookeeper.warm_up();
        zookeeper
    }

    /// The JVM's first TLS handshake takes long (a second, on a busy machine, and more):
    /// made here, after each start, it is not a test's first acquisition's.
    fn warm_up(&self) {
        eventually(
            Duration::from_secs(30),
            "a first TLS handshake with ZooKeeper",
            || self.handshake(),
        );
    }

    /// One TLS handshake with the secure port, as the CA and client certificate of the
    /// secured server's URL make it.
    fn handshake(&self) -> Result<(), String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
        let secured = self.secured();
        let mut roots = rustls::RootCertStore::empty();
        for cert in
            CertificateDer::pem_file_iter(secured.file("ca.pem")).map_err(|e| e.to_string())?
        {
            roots
                .add(cert.map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        }
        let client = secured.client();
        let chain = CertificateDer::pem_file_iter(&client.cert)
            .map_err(|e| e.to_string())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let key = PrivateKeyDer::from_pem_file(&client.key).map_err(|e| e.to_string())?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?;
        let mut connection =
            rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
        let mut socket = net::connect(secured.secure_port).map_err(|e| e.to_string())?;
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        while connection.is_handshaking() {
            connection
                .complete_io(&mut socket)
                .map_err(|e| format!("TLS handshake: {e}"))?;
        }
        Ok(())
    }

    /// The TLS client port of a server started by [`ZooKeeper::start_secured`]; the same
    /// across restarts.
    ///
    /// # Panics
    ///
    /// If the server is not secured, as for the other accessors of a secured server.
    #[must_use]
    pub fn secure_port(&self) -> u16 {
        self.secured().secure_port
    }

    /// The URL of a secured server's TLS port `port` as snowmint takes it:
    /// `zookeepers://`, the root `/snowmint`, `ca` as `tls_ca`, perhaps a client
    /// certificate and a digest user with its password file.
    #[must_use]
    pub fn secured_url_for(
        port: u16,
        ca: &Path,
        client: Option<&Pair>,
        user: Option<(&str, &Path)>,
    ) -> String {
        crate::pki::secured_url(
            "zookeepers",
            &format!("127.0.0.1:{port}{ROOT}"),
            ca,
            client,
            user,
        )
    }

    /// The CA the secured server trusts and its certificate comes from.
    #[must_use]
    pub fn tls_ca(&self) -> PathBuf {
        self.secured().file("ca.pem")
    }

    /// A client certificate of the test CA.
    #[must_use]
    pub fn tls_client(&self) -> Pair {
        self.secured().client()
    }

    /// The file that holds [`ZOOKEEPER_USER`]'s password.
    #[must_use]
    pub fn password_file(&self) -> PathBuf {
        self.secured().password_file.clone()
    }

    fn secured(&self) -> &Secured {
        self.secured
            .as_ref()
            .expect("a server started with ZooKeeper::start_secured")
    }
}

/// A PEM key store as ZooKeeper reads one: the certificate, then its private key.
fn write_key_store(pair: &Pair, to: &Path) {
    let mut pem = fs::read_to_string(&pair.cert).expect("the certificate");
    pem.push_str(&fs::read_to_string(&pair.key).expect("the key"));
    fs::write(to, pem).expect("the key store");
}

fn copy(from: &Path, to: &Path) {
    fs::copy(from, to)
        .unwrap_or_else(|err| panic!("cannot copy {} to {}: {err}", from.display(), to.display()));
}

impl crate::ServesCertificate for ZooKeeper {
    fn use_server_certificate(&self, pair: &Pair) {
        write_key_store(pair, &self.secured().file("server.pem"));
    }

    fn await_handshakes(&self) {
        self.warm_up();
    }
}
