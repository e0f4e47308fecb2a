//! A fleet on one host sharing worker ids through `--lease file:DIR`.

use crate::fleet;
use crate::support;

/// A directory of lock files has no server to stop: the fleet test's registry restart is a
/// no-op here, and its crash and restart of a member is the part that matters.
struct Directory(tempfile::TempDir);

impl snowmint_testkit::Server for Directory {
    fn url(&self) -> String {
        format!("file:{}", self.0.path().display())
    }

    fn dir(&self) -> &std::path::Path {
        self.0.path()
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn stop(&mut self) {}

    fn restart(&mut self) {}

    fn kill(&mut self) {}
}

#[test]
fn four_servers_on_one_host_share_worker_ids_through_a_directory() {
    let mut registry = Directory(tempfile::tempdir().unwrap());
    fleet::fleet_survives_a_crash_and_a_registry_restart(&mut registry);
}

/// A successor on another state directory, with its wall clock 3 s behind, takes over the
/// worker file of a holder killed with SIGKILL, and repeats none of its ids.
#[test]
fn a_successor_with_an_empty_state_dir_and_its_clock_behind_starts_after_the_dead() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().join("registry").display());
    fleet::successor_with_an_empty_state_dir_and_its_clock_behind(&url);
}

/// A successor stopped while it waits for its clock, 4 s behind, to pass the dead holder's
/// mark gives the worker file back with that mark, so a third process behind too starts
/// after the dead.
#[test]
fn a_successor_stopped_while_it_waits_keeps_the_dead_holders_mark() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().join("registry").display());
    fleet::successor_stopped_while_it_waits_keeps_the_dead_holders_mark(&url);
}

/// The reproduction of a registry directory restored from a backup while its holder
/// issues: every lock file is a new file then, so the holder must stop, and a newcomer on
/// its worker id must start above it. The test holds the other worker ids again after the
/// restore (their old locks are on the old files), so the newcomer can only take the
/// holder's.
#[test]
fn a_newcomer_after_a_directory_restore_starts_above_the_holder_it_replaced() {
    restore_as_new_files(&fleet::Restore::default());
}

/// The attack that found the newcomer counting its own reservation as the holder's: the
/// holder reserves 5 s ahead, the newcomer 1 s (the default), and the backup is taken while
/// the holder issues. The holder issues nothing past its fence, 1 s after its last check
/// of its lock file, whatever it reserved, and the newcomer starts past that.
#[test]
fn a_newcomer_after_a_restore_starts_above_a_holder_that_reserves_further() {
    restore_as_new_files(&fleet::Restore {
        holder_flags: &["--reserve-ahead-ms", "5000"],
        newcomer_clock: None,
        back_up_while_it_issues: true,
        ..fleet::Restore::default()
    });
}

/// The attack that found a directory swapped in whole taken for an old one: the backup
/// is staged as a copy of the directory while the holder issues, 2.5 s before the restore
/// renames the registry away and the staged copy over its path. The copy's lock files keep
/// the change times of the staging, so only the directory's own record tells a newcomer
/// that it vouches for nothing before the swap; the holder stops at its fence.
#[test]
fn a_newcomer_after_a_directory_swapped_in_whole_starts_above_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, staged) = (dir.path().join("registry"), dir.path().join("staged"));
    let url = format!("file:{}", registry.display());
    let mut blockers_again = None;
    fleet::a_restore_while_these_issue(
        &url,
        fence_ms(),
        &fleet::Restore {
            back_up_while_it_issues: true,
            // Past the reach (1 s and the margin): the staged files' change times are old.
            restored_after: std::time::Duration::from_millis(2_500),
            ..fleet::Restore::default()
        },
        &mut || copy_files(&registry, &staged),
        &mut || {
            std::fs::rename(&registry, dir.path().join("old")).unwrap();
            std::fs::rename(&staged, &registry).unwrap();
            blockers_again = Some(fleet::Blockers::hold_all_but_one(&url));
        },
    );
}

/// The reproduction of a holder paused (SIGSTOP) while its directory is restored from a
/// backup that a short-lived server left: a newcomer takes its worker id once its floor
/// has passed, and the holder, resumed with requests queued, issues nothing from the 60 s
/// it reserved in the replaced file. A check of its lock file vouches for 1 s: its fence.
#[test]
fn a_holder_paused_past_its_fence_issues_nothing_after_a_restore_gave_its_worker_id_away() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, backup) = (dir.path().join("registry"), dir.path().join("backup"));
    let url = format!("file:{}", registry.display());
    let mut short_lived = fleet::serve(&dir.path().join("short-lived"), &url, "short-lived");
    short_lived.wait_ready(std::time::Duration::from_secs(15));
    assert!(
        short_lived.terminate().success(),
        "{}",
        short_lived.logged()
    );
    copy_files(&registry, &backup);

    let mut blockers_again = None;
    fleet::paused::a_paused_holder_resumed_under_load(&url, fence_ms(), &mut || {
        for entry in std::fs::read_dir(&registry).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        copy_files(&backup, &registry);
        blockers_again = Some(fleet::Blockers::hold_all_but_one(&url));
    });
}

/// [`fleet::a_restore_while_these_issue`] on a directory restored as new files (removed,
/// then copied back), with the other worker ids held again after the restore: their old
/// locks are on the old files.
fn restore_as_new_files(how: &fleet::Restore) {
    let dir = tempfile::tempdir().unwrap();
    let (registry, backup) = (dir.path().join("registry"), dir.path().join("backup"));
    let url = format!("file:{}", registry.display());
    let mut blockers_again = None;
    fleet::a_restore_while_these_issue(
        &url,
        fence_ms(),
        how,
        &mut || copy_files(&registry, &backup),
        &mut || {
            for entry in std::fs::read_dir(&registry).unwrap() {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
            copy_files(&backup, &registry);
            blockers_again = Some(fleet::Blockers::hold_all_but_one(&url));
        },
    );
}

/// How long past its last check of its lock file a holder issues: its fence.
fn fence_ms() -> u64 {
    snowmint::whole_ms(snowmint_lease::FileRegistry::CONFIRMS_FOR)
}

/// Copies every file of `from` into `to` (made if missing): new files, as a backup and a
/// restore write.
fn copy_files(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// One registry, three servers: the Twitter layout, the same layout spelled as a custom one,
/// and a custom layout whose ids can collide with it (the same fields, one bit moved from
/// the worker to the sequence). The first two share the fleet's pool of worker ids; the
/// third is refused at start, naming both layouts and the setting that separates fleets,
/// and starts once it names a fleet of its own.
#[test]
fn a_server_of_another_layout_is_refused_until_it_names_a_fleet_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().join("registry").display());
    let serve = |state: &str, extra: &[&str]| {
        let mut args = vec!["--grpc-addr", "off", "--lease", &url];
        args.extend(extra);
        support::serve_command(&dir.path().join(state), &args)
    };
    let twitter = support::spawn_logged(serve("a", &[]));
    twitter.wait_ready(std::time::Duration::from_secs(20));
    let spelled = support::spawn_logged(serve("b", &["--layout", "custom:41/5/5/12"]));
    spelled.wait_ready(std::time::Duration::from_secs(20));
    let worker = |server: &support::Serve| {
        let (_, body) = server.get("/v1/layout");
        let layout: serde_json::Value = serde_json::from_str(&body).unwrap();
        layout["worker"].as_u64().expect("a worker id")
    };
    assert_ne!(
        worker(&twitter),
        worker(&spelled),
        "one pool for one layout"
    );

    let refused = serve("c", &["--layout", "custom:41/5/4/13"])
        .output()
        .expect("run snowmint serve");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "fleet \"default\" issues ids of layout timestamp@22:41,datacenter@17:5,worker@12:5,sequence@0:12;tick=1ms;epoch=1288834974657, and this generator's layout is timestamp@22:41,datacenter@17:5,worker@13:4,sequence@0:13;tick=1ms;epoch=1288834974657: a generator of another layout needs a fleet of its own (--fleet NAME)"
        ),
        "{stderr}"
    );
    let own = support::spawn_logged(serve(
        "c",
        &["--layout", "custom:41/5/4/13", "--fleet", "narrow"],
    ));
    own.wait_ready(std::time::Duration::from_secs(20));
    // Its own pool; the worker ids that every custom layout shared in earlier releases'
    // one `custom-<epoch>` namespace are still passed over while others hold them there.
    assert!(worker(&own) < 32);
    assert_eq!(own.get("/v1/id").0, 200);
}
