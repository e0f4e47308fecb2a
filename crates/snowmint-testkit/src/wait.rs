//! Waiting for what a test cannot make happen at once, and holding a process still.
//!
//! A test waits for another process (a server that becomes ready, a lease that moves) by
//! asking again and again until a deadline: [`eventually`] is that loop, written once, and
//! its failure names what never happened ([`eventually_async`] is the same loop for async
//! tests). [`Frozen`] stops a process with SIGSTOP, as a VM pause or a long
//! garbage-collection pause would, and lets it go on (SIGCONT) when dropped, so a test
//! that fails while a process is frozen does not leave it stopped.

use std::thread;
use std::time::{Duration, Instant};

/// The pause between two questions of [`eventually`]: short next to what tests wait for,
/// long enough not to keep a core busy.
const POLL: Duration = Duration::from_millis(20);

/// Asks `condition` until it answers `Ok`, at most for `within`; returns what it gave.
/// Its `Err` says what it found instead, for the failure's message.
///
/// # Panics
///
/// When `within` passes first: the message names `what`, and what the last answer found.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use snowmint_testkit::eventually;
///
/// let start = Instant::now();
/// let waited = eventually(Duration::from_secs(5), "50 ms to pass", || {
///     let elapsed = start.elapsed();
///     if elapsed >= Duration::from_millis(50) { Ok(elapsed) } else { Err(format!("{elapsed:?}")) }
/// });
/// assert!(waited >= Duration::from_millis(50));
/// ```
#[track_caller]
pub fn eventually<T, E: std::fmt::Display>(
    within: Duration,
    what: &str,
    mut condition: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match condition() {
            Ok(found) => return found,
            Err(last) => assert!(
                Instant::now() < deadline,
                "{what} did not happen within {} ms; the last answer: {last}",
                within.as_millis()
            ),
        }
        thread::sleep(POLL);
    }
}

/// [`eventually`] for async tests: asks `condition` until it answers `Ok`, at most for
/// `within`, pausing on tokio's timer (so the runtime's other tasks go on meanwhile);
/// returns what it gave.
///
/// # Panics
///
/// When `within` passes first: the message names `what`, and what the last answer found.
/// Outside a tokio runtime with its timer enabled.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use snowmint_testkit::eventually_async;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// let start = Instant::now();
/// let waited = eventually_async(Duration::from_secs(5), "50 ms to pass", async || {
///     let elapsed = start.elapsed();
///     if elapsed >= Duration::from_millis(50) { Ok(elapsed) } else { Err(format!("{elapsed:?}")) }
/// })
/// .await;
/// assert!(waited >= Duration::from_millis(50));
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn eventually_async<T, E: std::fmt::Display>(
    within: Duration,
    what: &str,
    mut condition: impl AsyncFnMut() -> Result<T, E>,
) -> impl Future<Output = T> {
    // Taken here, as the future's body would lose the caller's location.
    let caller = std::panic::Location::caller();
    async move {
        let deadline = Instant::now() + within;
        loop {
            match condition().await {
                Ok(found) => return found,
                Err(last) => assert!(
                    Instant::now() < deadline,
                    "{what} did not happen within {} ms (at {caller}); the last answer: {last}",
                    within.as_millis()
                ),
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A process stopped with SIGSTOP until this is dropped, when it gets SIGCONT.
///
/// # Examples
///
/// ```
/// use std::process::Command;
/// use snowmint_testkit::Frozen;
///
/// let mut child = Command::new("sleep").arg("5").spawn()?;
/// let frozen = Frozen::stop(child.id())?;
/// drop(frozen); // it goes on
/// child.kill()?;
/// child.wait()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Frozen {
    pid: u32,
}

impl Frozen {
    /// Stops process `pid` with SIGSTOP.
    ///
    /// # Errors
    ///
    /// The signal could not be sent (no such process, or not ours to stop).
    pub fn stop(pid: u32) -> std::io::Result<Frozen> {
        signal(pid, libc::SIGSTOP)?;
        Ok(Frozen { pid })
    }

    /// The process held still.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Lets the process go on now, rather than when this is dropped.
    pub fn thaw(self) {}
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // A process that has gone meanwhile has nothing left to go on with.
        let _ = signal(self.pid, libc::SIGCONT);
    }
}

/// Sends `sig` to process `pid`.
fn signal(pid: u32, sig: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("no pid {pid}"))
    })?;
    // SAFETY: kill takes plain integers and reports failure through errno.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
