//! Files the server reads again while it runs, so that secrets and certificates rotate
//! without a restart: the bearer tokens of `auth_token_file`, and the TLS certificate, key
//! and client CA. Every [`POLL`] each file's [`Stamp`] is looked at, and the files that
//! changed are read again; on SIGHUP all of them are, changed or not. Files that cannot be
//! used change nothing: what was read before stays in force, and one line in the log says
//! what is wrong (the TLS failures are counted in `tls_reload_failures_total` too).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::AppState;
use crate::tls::Tls;

/// How often the files are looked at: a few metadata calls, cheap; cert-manager and Vault
/// renew days ahead, and a token's rotation waits on its clients, so a second is nothing.
pub const POLL: Duration = Duration::from_secs(1);

/// What tells a file's new version from its old one: a rewrite, a rename into place and a
/// swapped symlink (Kubernetes swaps a link to a new directory of files) each change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    device: u64,
    inode: u64,
}

impl Stamp {
    /// The stamp of the file at `path`, through symlinks; `None` if it cannot be read.
    pub(crate) fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            device: meta.dev(),
            inode: meta.ino(),
        })
    }
}

/// The stamps of every file `tls` reads.
fn tls_stamps(tls: &Tls) -> Vec<Option<Stamp>> {
    let files = tls.files();
    [
        Some(&files.cert),
        Some(&files.key),
        files.client_ca.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|path| Stamp::of(path))
    .collect()
}

/// Watches the files of `state` (its token file) and of `tls` until `stop` turns true;
/// returns at once if there are none. It takes SIGHUP only when it has files to read, so
/// that a server without them keeps the signal's default.
pub(crate) async fn watch(state: AppState, tls: Option<Arc<Tls>>, mut stop: watch::Receiver<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let tokens = state.auth.clone().filter(|tokens| tokens.file().is_some());
    if tokens.is_none() && tls.is_none() {
        return;
    }
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(hangup) => Some(hangup),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take SIGHUP: files are read again only when they change");
            None
        }
    };
    let mut seen = tls.as_deref().map(tls_stamps);
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let hangup_now = tokio::select! {
            _ = poll.tick() => false,
            Some(()) = async {
                match hangup.as_mut() {
                    Some(hangup) => hangup.recv().await,
                    None => std::future::pending().await,
                }
            } => true,
            _ = stop.changed() => return,
        };
        let trigger = if hangup_now {
            "SIGHUP"
        } else {
            "the files changed"
        };
        if let Some(tokens) = &tokens {
            match tokens.reload(hangup_now) {
                Ok(Some(n)) => tracing::info!(
                    trigger,
                    file = %tokens.file().map(|p| p.display().to_string()).unwrap_or_default(),
                    tokens = n,
                    "auth token file read again"
                ),
                Ok(None) => {}
                Err(why) => tracing::error!(
                    trigger,
                    "{why}; the {} tokens read before stay valid",
                    tokens.count()
                ),
            }
        }
        if let (Some(tls), Some(seen)) = (&tls, &mut seen) {
            let now = tls_stamps(tls);
            if !hangup_now && now == *seen {
                continue;
            }
            *seen = now;
            match tls.reload(&state.metrics) {
                Ok(loaded) => {
                    tracing::info!(
                        trigger,
                        subject = %loaded.subject,
                        serial = %loaded.serial,
                        expires = %crate::server::expiry(loaded.not_after),
                        "TLS certificate reloaded"
                    );
                    let now = snowmint::Clock::now_ms(&snowmint::WallClock) / 1000;
                    if loaded.not_after < i64::try_from(now).unwrap_or(i64::MAX) {
                        tracing::warn!(
                            expired = %crate::server::expiry(loaded.not_after),
                            "the TLS certificate read again has expired: clients will refuse it"
                        );
                    }
                }
                Err(e) => tracing::warn!(
                    trigger,
                    error = %e,
                    "cannot reload the TLS certificate: the old one keeps serving"
                ),
            }
        }
    }
}
