//! Backups of the registry's data, and restores that put one back while the fleet runs, as
//! an operator does who restores a registry from an older copy, or restarts a Redis that
//! keeps nothing. A restore loses every write made since its backup: leases taken, marks
//! raised, worker ids given to new identities.
//!
//! ```text
//! registry    backup                                        restore
//! Redis       its append-only files copied as it runs       killed, the copy put in place of its data, started
//! etcd        `etcdctl snapshot save` as it runs            killed, `etcdctl snapshot restore` into a new data directory, started
//! PostgreSQL  stopped, its data directory copied, started   killed, the copy put in place, started
//! ZooKeeper   its data directory (snapshots and transaction logs) copied as it runs
//!                                                           killed, the copy put in place, started
//! file        the directory's files copied                  each file replaced by its copy: new files, new inodes
//! ```
//!
//! PostgreSQL's copy is cold, as its manual asks of a file-level backup: a copy taken as it
//! runs may not start. The others' copies are what their own tools make of a live server.
//! A Redis "without persistence" is restarted from nothing: killed, its data emptied.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use snowmint_testkit::Server;

use super::{Kind, Registry};
use crate::campaign::sys::run;

/// The file an etcd backup holds.
const ETCD_SNAPSHOT: &str = "snapshot.db";

/// A copy of the registry's data.
pub struct Backup {
    dir: PathBuf,
    /// For etcd: the member's name and peer URL, which a restored member is given again.
    member: Option<(String, String)>,
}

impl Backup {
    /// Copies the registry's data into `dir`, which must not exist yet.
    pub fn take(registry: &mut Registry, dir: &Path) -> anyhow::Result<Backup> {
        let mut member = None;
        match registry {
            Registry::Dir(files) => {
                std::fs::create_dir_all(dir)?;
                for (name, path) in files_in(files)? {
                    std::fs::copy(&path, dir.join(name))
                        .with_context(|| format!("cannot copy {}", path.display()))?;
                }
            }
            Registry::Process(Kind::Etcd, server) => {
                std::fs::create_dir_all(dir)?;
                let endpoint = etcd_endpoint(server.as_ref())?;
                let snapshot = dir.join(ETCD_SNAPSHOT);
                etcdctl(&[
                    "--endpoints",
                    &endpoint,
                    "snapshot",
                    "save",
                    path_text(&snapshot)?,
                ])?;
                member = Some(etcd_member(&endpoint)?);
            }
            Registry::Process(Kind::Postgres, server) => {
                server.stop();
                let copied = copy_tree(&data_of(server.as_ref()), dir);
                server.restart();
                copied?;
            }
            Registry::Process(_, server) => copy_tree(&data_of(server.as_ref()), dir)?,
            Registry::Cluster(..) => anyhow::bail!("a cluster is not backed up"),
        }
        Ok(Backup {
            dir: dir.to_path_buf(),
            member,
        })
    }

    /// Puts this backup in place of the registry's data: a process is killed first and
    /// started again after, and `meanwhile` runs while it is down; the `file` registry's
    /// files are replaced one by one, as a restore tool writes them, while its holders
    /// run, and `meanwhile` runs after.
    pub fn restore(
        &self,
        registry: &mut Registry,
        meanwhile: impl FnOnce() -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        match registry {
            Registry::Dir(files) => {
                replace_files(files, &self.dir)?;
                meanwhile()
            }
            Registry::Cluster(..) => anyhow::bail!("a cluster is not restored"),
            Registry::Process(kind, server) => {
                let data = data_of(server.as_ref());
                server.kill();
                let done = meanwhile();
                std::fs::remove_dir_all(&data)
                    .with_context(|| format!("cannot remove {}", data.display()))?;
                if *kind == Kind::Etcd {
                    let (name, peer) = self.member.as_ref().context("no etcd member recorded")?;
                    etcdctl(&[
                        "snapshot",
                        "restore",
                        path_text(&self.dir.join(ETCD_SNAPSHOT))?,
                        "--name",
                        name,
                        "--initial-cluster",
                        &format!("{name}={peer}"),
                        "--initial-advertise-peer-urls",
                        peer,
                        "--data-dir",
                        path_text(&data)?,
                    ])?;
                } else {
                    copy_tree(&self.dir, &data)?;
                }
                server.restart();
                done
            }
        }
    }
}

/// Kills the registry, empties its data, and starts it again: a Redis that keeps nothing
/// across a restart.
pub fn restart_empty(registry: &mut Registry) -> anyhow::Result<()> {
    let Registry::Process(_, server) = registry else {
        bail!("the file registry has no process to restart");
    };
    let data = data_of(server.as_ref());
    server.kill();
    std::fs::remove_dir_all(&data).with_context(|| format!("cannot remove {}", data.display()))?;
    std::fs::create_dir(&data).with_context(|| format!("cannot create {}", data.display()))?;
    server.restart();
    Ok(())
}

/// Where every server of the test kit keeps its data.
fn data_of(server: &dyn Server) -> PathBuf {
    server.dir().join("data")
}

fn path_text(path: &Path) -> anyhow::Result<&str> {
    path.to_str().context("a path in UTF-8")
}

/// Copies the directory `from` to `to` with its files' owners and modes (PostgreSQL's run
/// as its own user): new files, as every backup tool writes.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    run("cp", &["-a", "-T", path_text(from)?, path_text(to)?])
}

/// The regular files of `dir`, by name.
fn files_in(dir: &Path) -> anyhow::Result<Vec<(std::ffi::OsString, PathBuf)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            files.push((entry.file_name(), entry.path()));
        }
    }
    Ok(files)
}

/// Puts every file of `backup` in `dir` (each copied beside it, then renamed over its
/// name: a new inode, never a rewrite of the one a holder has locked), and removes the
/// files the backup did not have.
fn replace_files(dir: &Path, backup: &Path) -> anyhow::Result<()> {
    let kept = files_in(backup)?;
    for (name, path) in &kept {
        let mut staged = name.clone();
        staged.push(".restoring");
        let staged = dir.join(staged);
        std::fs::copy(path, &staged).with_context(|| format!("cannot copy {}", path.display()))?;
        std::fs::rename(&staged, dir.join(name))?;
    }
    for (name, path) in files_in(dir)? {
        if !kept.iter().any(|(kept, _)| *kept == name) {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// etcd's client endpoint, for `etcdctl`.
fn etcd_endpoint(server: &dyn Server) -> anyhow::Result<String> {
    let url = server.url();
    let address = url.strip_prefix("etcd://").context("an etcd URL")?;
    Ok(format!("http://{}", address.trim_end_matches('/')))
}

/// Runs `etcdctl` (Debian's `etcd-client`, which `scripts/setup` installs) with the v3 API.
fn etcdctl(args: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new("etcdctl")
        .args(args)
        .env("ETCDCTL_API", "3")
        .output()
        .context("cannot run etcdctl: run scripts/setup")?;
    if !out.status.success() {
        bail!(
            "etcdctl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The lone member's name and peer URL: `ID, started, NAME, PEER, CLIENT, LEARNER`.
fn etcd_member(endpoint: &str) -> anyhow::Result<(String, String)> {
    let listed = etcdctl(&["--endpoints", endpoint, "member", "list"])?;
    let line = listed.lines().next().context("etcd lists no member")?;
    let fields: Vec<&str> = line.split(", ").collect();
    match fields.as_slice() {
        [_, _, name, peer, ..] => Ok(((*name).to_string(), (*peer).to_string())),
        _ => bail!("cannot read etcd's member from {line:?}"),
    }
}
