//! An etcd in its production form: https only, a client certificate of the test CA
//! required (`--client-cert-auth`), and etcd's authentication enabled, with a `root`
//! user and a user `snowmint` whose role may read and write the prefix `/snowmint/` and
//! nothing else.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::etcd::{Etcd, KIND, etcd_command, listening};
use crate::instance::{Instance, Kind};
use crate::net::free_port;
use crate::pki::{Pair, Pki};
use crate::program;
use crate::wait::eventually;

/// The user snowmint authenticates as, and its role's name.
pub const SNOWMINT_USER: &str = "snowmint";
/// The keys snowmint writes, all under this prefix: the only ones its role may touch.
pub const SNOWMINT_PREFIX: &str = "/snowmint/";

/// How long `etcdctl` may take to connect and to run one command.
const ETCDCTL_TIMEOUT: &str = "5s";

/// A secured etcd's ready check: it accepts connections; the start then waits for an
/// `etcdctl` answer over TLS.
const SECURED_KIND: Kind = Kind {
    ready: listening,
    ..KIND
};

/// The TLS files a secured etcd uses, under fixed names in its directory, so that a test
/// can put another server certificate in their place and restart it
/// ([`Etcd::use_server_certificate`]).
pub(crate) struct Tls {
    dir: PathBuf,
    /// `--auth-token-ttl`, in seconds, when not etcd's default (300).
    token_ttl: Option<u64>,
}

impl Tls {
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes the CA, a server pair, the `root` client pair and snowmint's client pair.
    fn write(dir: &Path, pki: &Pki, token_ttl: Option<u64>) -> Tls {
        let tls = Tls {
            dir: dir.join("tls"),
            token_ttl,
        };
        fs::create_dir_all(&tls.dir).expect("the TLS directory");
        copy(pki.ca(), &tls.file("ca.pem"));
        // Also a client's: the gateway presents it to its own server.
        tls.put("server", &pki.server_also_client());
        tls.put("root", &pki.client("root"));
        // Without a name: etcd's gateway refuses a client certificate that has one.
        tls.put("client", &pki.client_without_name());
        tls
    }

    fn put(&self, name: &str, pair: &Pair) {
        copy(&pair.cert, &self.file(&format!("{name}.pem")));
        copy(&pair.key, &self.file(&format!("{name}.key")));
    }

    fn pair(&self, name: &str) -> Pair {
        Pair {
            cert: self.file(&format!("{name}.pem")),
            key: self.file(&format!("{name}.key")),
        }
    }

    /// etcd's flags for https clients with certificates.
    pub(crate) fn add_flags(&self, command: &mut Command) {
        command
            .arg("--cert-file")
            .arg(self.file("server.pem"))
            .arg("--key-file")
            .arg(self.file("server.key"))
            .arg("--trusted-ca-file")
            .arg(self.file("ca.pem"))
            .arg("--client-cert-auth");
        if let Some(ttl) = self.token_ttl {
            command.args(["--auth-token-ttl", &ttl.to_string()]);
        }
    }
}

/// What a secured etcd's guard knows: its TLS files and snowmint's password file.
pub(crate) struct Secured {
    tls: Tls,
    password_file: PathBuf,
}

impl Secured {
    /// The URL snowmint takes: https, the test CA, snowmint's client certificate, and the
    /// user `snowmint` with its password file.
    pub(crate) fn url(&self, port: u16) -> String {
        Etcd::secured_url_for(
            port,
            &self.tls.file("ca.pem"),
            Some(&self.tls.pair("client")),
            Some((SNOWMINT_USER, &self.password_file)),
        )
    }
}

impl Etcd {
    /// Starts `etcd` in its production form: https only (`--cert-file`, `--key-file`,
    /// `--trusted-ca-file`, with a server certificate from `pki` for 127.0.0.1),
    /// `--client-cert-auth`, and etcd's authentication enabled, with a `root` user and a
    /// user [`SNOWMINT_USER`] whose role may read and write only [`SNOWMINT_PREFIX`].
    /// [`Etcd::url`] is then an `etcds://` URL with that user, its password file, the CA
    /// and a client certificate.
    ///
    /// # Panics
    ///
    /// As [`Etcd::start`]; also if `etcdctl` (Debian's `etcd-client` package) is missing
    /// or the users cannot be set up.
    ///
    /// ```no_run
    /// let pki = snowmint_testkit::Pki::new();
    /// let etcd = snowmint_testkit::Etcd::start_secured(&pki);
    /// assert!(etcd.url().starts_with(&format!("etcds://snowmint@127.0.0.1:{}?tls_ca=", etcd.port())));
    /// assert!(etcd.endpoint().starts_with("https://"));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn start_secured(pki: &Pki) -> Etcd {
        Etcd::start_secured_with(pki, None)
    }

    /// [`Etcd::start_secured`], with tokens that expire after `token_ttl` unused
    /// (`--auth-token-ttl`, whole seconds, at least 1).
    ///
    /// # Panics
    ///
    /// As [`Etcd::start_secured`].
    #[must_use]
    #[track_caller]
    pub fn start_secured_with_token_ttl(pki: &Pki, token_ttl: Duration) -> Etcd {
        Etcd::start_secured_with(pki, Some(token_ttl.as_secs().max(1)))
    }

    #[track_caller]
    fn start_secured_with(pki: &Pki, token_ttl: Option<u64>) -> Etcd {
        let program = program::find_on_path("etcd", "etcd-server");
        program::find_on_path("etcdctl", "etcd-client");
        let server = Instance::start(&SECURED_KIND, |port, dir| {
            let tls = Tls::write(dir, pki, token_ttl);
            let (program, data, peer_port) = (program.clone(), dir.join("data"), free_port());
            move || etcd_command(&program, port, peer_port, &data, Some(&tls))
        });
        let tls = Tls {
            dir: server.dir.path().join("tls"),
            token_ttl,
        };
        let password_file = tls.file("snowmint.password");
        fs::write(&password_file, format!("{}\n", password())).expect("the password file");
        let etcd = Etcd {
            server,
            secured: Some(Secured { tls, password_file }),
        };
        eventually(
            Duration::from_secs(30),
            "etcd answering etcdctl over TLS",
            || etcd.etcdctl(&["endpoint", "health"]),
        );
        let snowmint_password = fs::read_to_string(etcd.password_file())
            .expect("the password file")
            .trim()
            .to_string();
        let root = format!("root:{}", password());
        for args in [
            vec!["user", "add", &root],
            vec!["user", "grant-role", "root", "root"],
        ] {
            etcd.etcdctl(&args).unwrap_or_else(|err| panic!("{err}"));
        }
        etcd.add_user(SNOWMINT_USER, &snowmint_password, SNOWMINT_PREFIX);
        etcd.etcdctl(&["auth", "enable"])
            .unwrap_or_else(|err| panic!("{err}"));
        etcd
    }

    /// The URL of a secured etcd on `port` as snowmint takes it: `etcds://`, `ca` as
    /// `tls_ca`, perhaps a client certificate and a user with its password file.
    #[must_use]
    pub fn secured_url_for(
        port: u16,
        ca: &Path,
        client: Option<&Pair>,
        user: Option<(&str, &Path)>,
    ) -> String {
        crate::pki::secured_url("etcds", &format!("127.0.0.1:{port}"), ca, client, user)
    }

    /// The CA a secured etcd's certificates come from (a copy of the [`Pki`]'s).
    ///
    /// # Panics
    ///
    /// If the etcd is not secured, as for the other accessors of a secured etcd.
    #[must_use]
    pub fn ca(&self) -> PathBuf {
        self.tls().file("ca.pem")
    }

    /// A client certificate of the test CA without a common name, as etcd's gateway
    /// takes them.
    #[must_use]
    pub fn client(&self) -> Pair {
        self.tls().pair("client")
    }

    /// The file that holds [`SNOWMINT_USER`]'s password.
    #[must_use]
    pub fn password_file(&self) -> PathBuf {
        self.secured().password_file.clone()
    }

    /// Adds a user `name` with `password` and a role of the same name that may read and
    /// write the keys under `prefix` and nothing else.
    ///
    /// # Panics
    ///
    /// If `etcdctl` fails.
    pub fn add_user(&self, name: &str, password: &str, prefix: &str) {
        let user = format!("{name}:{password}");
        for args in [
            vec!["role", "add", name],
            vec![
                "role",
                "grant-permission",
                name,
                "readwrite",
                "--prefix=true",
                prefix,
            ],
            vec!["user", "add", &user],
            vec!["user", "grant-role", name, name],
        ] {
            self.etcdctl(&args).unwrap_or_else(|err| panic!("{err}"));
        }
    }

    /// Runs `etcdctl` against this etcd as `root` (by its client certificate's name);
    /// answers its output, or why it failed.
    ///
    /// # Errors
    ///
    /// `etcdctl`'s exit status and output when it fails.
    pub fn etcdctl(&self, args: &[&str]) -> Result<String, String> {
        let tls = self.tls();
        let output = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.endpoint()))
            .arg("--cacert")
            .arg(tls.file("ca.pem"))
            .arg("--cert")
            .arg(tls.file("root.pem"))
            .arg("--key")
            .arg(tls.file("root.key"))
            .args(["--dial-timeout", ETCDCTL_TIMEOUT])
            .args(["--command-timeout", ETCDCTL_TIMEOUT])
            .args(args)
            .output()
            .map_err(|err| format!("cannot run etcdctl: {err}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if output.status.success() {
            Ok(text)
        } else {
            Err(format!(
                "etcdctl {} failed: {}: {text}",
                args.join(" "),
                output.status
            ))
        }
    }

    fn secured(&self) -> &Secured {
        self.secured
            .as_ref()
            .expect("an etcd started with Etcd::start_secured")
    }

    fn tls(&self) -> &Tls {
        &self.secured().tls
    }
}

/// A password of 20 random letters and digits.
fn password() -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(20)
        .collect()
}

fn copy(from: &Path, to: &Path) {
    fs::copy(from, to)
        .unwrap_or_else(|err| panic!("cannot copy {} to {}: {err}", from.display(), to.display()));
}

impl crate::ServesCertificate for Etcd {
    fn use_server_certificate(&self, pair: &Pair) {
        self.tls().put("server", pair);
    }
}
