//! `deploy/systemd/snowmint.service`: systemd accepts it, it is hardened, and the server
//! speaks the `Type=notify` protocol it declares.

use crate::support;

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{http_get, serve_command, spawn_logged};

/// The unit as shipped.
fn unit() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/systemd/snowmint.service");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The unit with its `ExecStart=` binary at this build's `snowmint`, in a directory of its
/// own: `systemd-analyze verify` checks that the binary exists.
fn unit_here(dir: &Path) -> std::path::PathBuf {
    let unit = unit();
    assert!(
        unit.contains("ExecStart=/usr/local/bin/snowmint serve"),
        "{unit}"
    );
    let here = unit.replace("/usr/local/bin/snowmint", env!("CARGO_BIN_EXE_snowmint"));
    let path = dir.join("snowmint.service");
    std::fs::write(&path, here).unwrap();
    path
}

/// `systemd-analyze ARGS`, whose absence fails the test: `scripts/setup` installs it.
fn systemd_analyze(args: &[&str], unit: &Path) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .arg(unit)
        .output()
        .expect("systemd-analyze runs (Debian's systemd package; scripts/setup installs it)")
}

#[test]
fn systemd_accepts_the_unit_and_rates_it_hardened() {
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_here(dir.path());
    // `--man=no`: the man page is not installed where man looks for it in a build tree.
    let verify = systemd_analyze(&["verify", "--man=no"], &unit);
    let said = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success() && said.trim().is_empty(), "{said}");

    let security = systemd_analyze(&["security", "--offline=true", "--no-pager"], &unit);
    let report = String::from_utf8_lossy(&security.stdout);
    let exposure: f64 = report
        .lines()
        .find_map(|line| {
            line.split("Overall exposure level for snowmint.service: ")
                .nth(1)
        })
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in\n{report}"));
    println!("systemd-analyze security --offline=true: exposure {exposure} (0 is best, 10 worst)");
    // systemd calls up to 2.0 "OK"; the unit scored 1.1 when it was written.
    assert!(exposure <= 2.0, "{report}");
}

#[test]
fn the_server_tells_systemd_it_is_ready_and_then_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let state = dir.path().join("state");
    let mut cmd = serve_command(
        &state,
        &["--grpc-addr", "off", "--admin-addr", "127.0.0.1:0"],
    );
    cmd.env("NOTIFY_SOCKET", &socket_path);
    let mut server = spawn_logged(cmd);
    let mut buf = [0u8; 1024];
    let n = socket.recv(&mut buf).expect("READY=1 within 20 s");
    let ready = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert_eq!(
        ready,
        format!(
            "READY=1\nSTATUS=serving on {} (http), off (grpc), off (thrift), {} (admin)\n",
            server.http,
            server.admin.unwrap()
        )
    );
    // Ready means ready: the ports answer at once.
    assert_eq!(server.get("/readyz").0, 200);
    assert_eq!(http_get(server.admin.unwrap(), "/readyz").0, 200);

    let status = server.terminate();
    let n = socket.recv(&mut buf).expect("STOPPING=1 before the exit");
    assert_eq!(&buf[..n], b"STOPPING=1\n");
    assert!(status.success(), "{status:?}");
}

/// The unit serves the probes and the metrics on the admin port, on loopback until
/// snowmint.env moves it: a variable of the unit that the server takes as it is.
#[test]
fn the_unit_serves_the_admin_port() {
    let unit = unit();
    let admin = unit
        .lines()
        .find_map(|line| line.strip_prefix("Environment=SNOWMINT_ADMIN_ADDR="))
        .unwrap_or_else(|| panic!("no SNOWMINT_ADMIN_ADDR in\n{unit}"));
    let addr: std::net::SocketAddr = admin.parse().expect("an address");
    assert!(addr.ip().is_loopback(), "{addr}");
    // systemd.exec: the variables of EnvironmentFile= override those of Environment=.
    assert!(
        unit.contains("EnvironmentFile=-/etc/snowmint/snowmint.env"),
        "{unit}"
    );
}
