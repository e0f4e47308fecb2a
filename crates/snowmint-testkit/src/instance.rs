//! What the guards share: a server of some kind on a free loopback port, with a fresh
//! temporary directory for its data and its log.

use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

use crate::net::free_port;
use crate::process::{self, Daemon};

/// What sets one kind of server apart from the others, for [`Instance::start`].
pub(crate) struct Kind {
    /// Names its temporary directory (`snowmint-{name}-...`) and its log (`{name}.log`).
    pub(crate) name: &'static str,
    /// Its program, for messages.
    pub(crate) program: &'static str,
    /// The signal it shuts down cleanly on.
    pub(crate) stop_signal: libc::c_int,
    /// Whether it serves on `127.0.0.1:port`, as it should.
    pub(crate) ready: fn(port: u16) -> bool,
}

/// One server: its process, its port, and the temporary directory of its data and log.
pub(crate) struct Instance {
    // Declared before `dir`, so the server stops before its directory is removed.
    pub(crate) daemon: Daemon,
    pub(crate) port: u16,
    pub(crate) dir: TempDir,
}

impl Instance {
    /// Starts a server of `kind` on a free port, in a fresh temporary directory, and waits
    /// until it is ready. `setup` prepares the directory for the port and answers how to
    /// build the command line of each start (restarts included). When another process
    /// binds the port first, the server starts over on another port, with `setup` called
    /// again in another directory.
    ///
    /// # Panics
    ///
    /// As [`process::start_on_free_port`].
    #[track_caller]
    pub(crate) fn start<C>(kind: &Kind, mut setup: impl FnMut(u16, &Path) -> C) -> Instance
    where
        C: Fn() -> Command + Send + Sync + 'static,
    {
        let ready = kind.ready;
        Instance::start_probed(kind, |port, dir| (setup(port, dir), move || ready(port)))
    }

    /// As [`Instance::start`], for a server whose readiness probe needs what `setup` made
    /// (a socket in its directory, a password): `setup` answers the probe too, and the
    /// kind's own is not used.
    #[track_caller]
    pub(crate) fn start_probed<C, P>(
        kind: &Kind,
        mut setup: impl FnMut(u16, &Path) -> (C, P),
    ) -> Instance
    where
        C: Fn() -> Command + Send + Sync + 'static,
        P: Fn() -> bool + Send + Sync + 'static,
    {
        let make = || {
            let port = free_port();
            let dir = scratch_dir(kind.name);
            let (command, ready) = setup(port, dir.path());
            let daemon = Daemon::new(
                kind.program,
                port,
                dir.path().join(format!("{}.log", kind.name)),
                kind.stop_signal,
                Box::new(command),
                Box::new(ready),
            );
            Instance { daemon, port, dir }
        };
        process::start_on_free_port(make, |instance| &mut instance.daemon)
    }
}

/// A fresh temporary directory for one server, named after it so a leftover one (from
/// a test process killed outright) says what it was.
fn scratch_dir(server: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("snowmint-{server}-"))
        .tempdir()
        .unwrap_or_else(|err| panic!("cannot create a temporary directory for {server}: {err}"))
}
