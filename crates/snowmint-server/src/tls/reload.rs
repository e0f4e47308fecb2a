//! Rotation without a restart: the certificate, key and client CA files are looked at every
//! [`POLL`] (their modification time, length and inode, which a rewrite, a rename into
//! place or a swapped symlink all change), and read again when they change or on SIGHUP.
//! New handshakes use what was read; connections already open keep theirs. Files that
//! cannot be used leave the old pair serving: one line in the log, and a count.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;

use super::Tls;
use crate::AppState;

/// How often the files are looked at: a few metadata calls, cheap; cert-manager and Vault
/// renew days ahead, so a second's delay is nothing.
pub const POLL: Duration = Duration::from_secs(1);

/// What tells a file's new version from its old one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        // Through symlinks: Kubernetes swaps a link to a new directory of files.
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode: meta.ino(),
        })
    }
}

/// The stamps of every file `tls` reads.
fn stamps(tls: &Tls) -> Vec<Option<Stamp>> {
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

/// The task that reloads the server's TLS files; dropping it stops it.
#[derive(Debug)]
pub struct Reloader(JoinHandle<()>);

impl Reloader {
    /// Starts watching `tls`'s files, and SIGHUP, counting in `state`'s metrics.
    #[must_use]
    pub fn start(tls: Arc<Tls>, state: AppState) -> Reloader {
        Reloader(tokio::spawn(watch(tls, state)))
    }
}

impl Drop for Reloader {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn watch(tls: Arc<Tls>, state: AppState) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(hangup) => Some(hangup),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take SIGHUP: TLS files are reloaded only when they change");
            None
        }
    };
    let mut seen = stamps(&tls);
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let trigger = tokio::select! {
            _ = poll.tick() => {
                let now = stamps(&tls);
                if now == seen {
                    continue;
                }
                seen = now;
                "the files changed"
            }
            Some(()) = async {
                match hangup.as_mut() {
                    Some(hangup) => hangup.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                seen = stamps(&tls);
                "SIGHUP"
            }
        };
        match tls.reload(&state.metrics) {
            Ok(loaded) => tracing::info!(
                trigger,
                subject = %loaded.subject,
                serial = %loaded.serial,
                expires = %crate::server::expiry(loaded.not_after),
                "TLS certificate reloaded"
            ),
            Err(e) => tracing::warn!(
                trigger,
                error = %e,
                "cannot reload the TLS certificate: the old one keeps serving"
            ),
        }
    }
}
