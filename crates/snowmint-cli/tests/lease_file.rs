//! A fleet on one host sharing worker ids through `--lease file:DIR`.

mod fleet;
mod support;

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
