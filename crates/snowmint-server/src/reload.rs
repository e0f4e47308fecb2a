//! Files the server reads again while it runs, so that secrets rotate without a restart:
//! the bearer tokens of `auth_token_file`. Each is checked every second and read again
//! when it changed, and read again on SIGHUP whether it changed or not.

use std::time::Duration;

use tokio::sync::watch;

use crate::AppState;

/// How often the files are checked for a change.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Watches the state's files until `stop` turns true; nothing to do if it has none.
pub(crate) async fn watch(state: AppState, mut stop: watch::Receiver<bool>) {
    let Some(tokens) = state.auth.clone().filter(|tokens| tokens.file().is_some()) else {
        return;
    };
    let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(err) => {
            tracing::warn!(
                "cannot listen for SIGHUP ({err}); files are still read again when they change"
            );
            None
        }
    };
    let mut every = tokio::time::interval(CHECK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let force = tokio::select! {
            _ = every.tick() => false,
            Some(()) = async { match &mut hangup { Some(h) => h.recv().await, None => None } } => true,
            _ = stop.changed() => return,
        };
        match tokens.reload(force) {
            Ok(Some(n)) => tracing::info!(
                file = %tokens.file().map(|p| p.display().to_string()).unwrap_or_default(),
                tokens = n,
                "auth token file read again"
            ),
            Ok(None) => {}
            Err(why) => tracing::error!(
                "{why}; the {} tokens read before stay valid",
                tokens.count()
            ),
        }
    }
}
