//! What the campaign changes on this machine (mounts, namespaces, links), each undone by
//! [`Cleanup`] when it drops: on a normal end, on an error and on a panic of the thread
//! that owns it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};

/// The most mounts the campaign stacks on one directory.
const STACKED: usize = 4;

/// One thing to undo.
#[derive(Debug)]
pub enum Undo {
    /// Unmount this mount point (lazily, if busy).
    Unmount(PathBuf),
    /// Delete this network namespace (its end of the veth pair goes with it).
    DeleteNetns(String),
    /// Delete this link, if still there.
    DeleteLink(String),
}

/// Everything to undo, in reverse order, when dropped.
#[derive(Debug, Default)]
pub struct Cleanup {
    undo: Mutex<Vec<Undo>>,
}

impl Cleanup {
    /// Remembers `undo` for the end.
    pub fn push(&self, undo: Undo) {
        self.undo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(undo);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let undo = std::mem::take(&mut *self.undo.lock().unwrap_or_else(|e| e.into_inner()));
        for step in undo.into_iter().rev() {
            let done = match &step {
                // Mounts stacked on it (a read-only bind left by a fault) go first.
                Undo::Unmount(path) => {
                    (0..STACKED)
                        .take_while(|_| {
                            Command::new("umount")
                                .arg(path)
                                .stderr(std::process::Stdio::null())
                                .status()
                                .is_ok_and(|s| s.success())
                        })
                        .count()
                        > 0
                        || Command::new("umount")
                            .arg("-l")
                            .arg(path)
                            .status()
                            .is_ok_and(|s| s.success())
                }
                Undo::DeleteNetns(name) => Command::new("ip")
                    .args(["netns", "delete", name])
                    .status()
                    .is_ok_and(|s| s.success()),
                Undo::DeleteLink(name) => {
                    // Gone with its namespace's peer, usually: not an error.
                    let _ = Command::new("ip")
                        .args(["link", "delete", name])
                        .stderr(std::process::Stdio::null())
                        .status();
                    true
                }
            };
            if !done {
                eprintln!("snowmint-chaos: could not undo {step:?}");
            }
        }
    }
}

/// Runs `program args`, and fails with its stderr unless it succeeds.
pub fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Sends `signal` to `pid`, a process this campaign started.
pub fn signal(pid: u32, signal: libc::c_int) -> anyhow::Result<()> {
    let pid = i32::try_from(pid).context("pid out of range")?;
    // SAFETY: kill(2) with a pid the campaign started and still owns.
    if unsafe { libc::kill(pid, signal) } != 0 {
        bail!(
            "cannot send signal {signal} to pid {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Mounts a tmpfs of `size_kb` on `dir` (created), undone by `cleanup`.
pub fn mount_tmpfs(cleanup: &Cleanup, dir: &Path, size_kb: u64) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir_text = dir.to_str().context("a path in UTF-8")?;
    run(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size_kb}k,mode=0700"),
            "snowmint-chaos",
            dir_text,
        ],
    )
    .context("a campaign needs root to mount its state directories")?;
    cleanup.push(Undo::Unmount(dir.to_path_buf()));
    Ok(())
}

/// Makes `dir` read-only for every path lookup from now on, or writable again.
///
/// A remount of the tmpfs itself fails while the server holds a file open for writing
/// ("mount point is busy"), so the directory is bound over itself and the new mount, which
/// nothing has open, is made read-only; unmounting it makes `dir` writable again. Files
/// already open stay writable, as they would on a disk remounted read-only by force. The
/// unmount of the tmpfs beneath, at the end, takes this one first.
pub fn read_only(dir: &Path, on: bool) -> anyhow::Result<()> {
    let text = dir.to_str().context("a path in UTF-8")?;
    if on {
        run("mount", &["--bind", text, text])?;
        run("mount", &["-o", "remount,bind,ro", text])
    } else {
        run("umount", &[text])
    }
}

/// Set by SIGINT or SIGTERM: the campaign stops early, cleans up and reports.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Turns SIGINT and SIGTERM into [`INTERRUPTED`], so that cleanup runs.
pub fn catch_interrupts() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, on_signal as *const () as libc::sighandler_t);
        }
    }
}
