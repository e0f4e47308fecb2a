use std::fs;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use snowmint::error::Chain;
use snowmint::{Clock, Generator, Id, Layout, ManualClock};

use super::*;
use crate::Fleet;

fn temp_mark() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twitter-1288834974657-dc0-w0.mark");
    (dir, path)
}

#[test]
fn reserve_records_durably_and_never_lowers() {
    let (_dir, path) = temp_mark();
    let store = FileStore::claim(&path).unwrap();
    assert_eq!(store.load().unwrap(), None);
    store.reserve(100).unwrap();
    assert_eq!(store.load().unwrap(), Some(100));
    store.reserve(50).unwrap();
    assert_eq!(store.load().unwrap(), Some(100));
    store.reserve(200).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "200\n");
    assert!(
        !sibling(&path, ".tmp").exists(),
        "the temporary file is renamed away"
    );
    drop(store);
    // A later process, or a restart, reads what was recorded.
    assert_eq!(FileStore::claim(&path).unwrap().load().unwrap(), Some(200));
}

#[test]
fn release_lowers_only_a_mark_nobody_raised_since() {
    let (_dir, path) = temp_mark();
    let first = FileStore::open(&path).unwrap();
    let second = FileStore::open(&path).unwrap();
    first.reserve(100).unwrap();
    second.reserve(200).unwrap();
    first.release(100, 50).unwrap();
    assert_eq!(
        first.load().unwrap(),
        Some(200),
        "second reserved after first"
    );
    second.release(200, 150).unwrap();
    assert_eq!(first.load().unwrap(), Some(150));
    assert!(
        !second.lower(150, 150).unwrap(),
        "issued not below reserved"
    );
    assert!(!second.lower(150, 170).unwrap(), "never raises");
    assert_eq!(first.load().unwrap(), Some(150));
}

#[test]
fn a_corrupt_mark_is_an_error_naming_the_file_and_what_it_holds() {
    let (_dir, path) = temp_mark();
    let store = FileStore::claim(&path).unwrap();
    let shown = path.display().to_string();
    let cases: [(&[u8], String); 5] = [
        (b"17637801x2345\n", r#""17637801x2345\n""#.to_string()),
        (b"", "an empty file".to_string()),
        (b" \n", r#"only white space " \n""#.to_string()),
        (
            b"99999999999999999999999",
            r#""99999999999999999999999", which does not fit in 64 bits"#.to_string(),
        ),
        (
            &[b'#'; 50],
            format!("{:?} and 10 more bytes", "#".repeat(40)),
        ),
    ];
    for (content, found) in cases {
        fs::write(&path, content).unwrap();
        let expected = format!(
            "mark file {shown} is corrupt: found {found}, expected milliseconds since the Unix epoch"
        );
        assert_eq!(store.mark().unwrap_err().to_string(), expected);
        assert_eq!(store.load().unwrap_err().to_string(), expected);
        // Never taken for zero: a reservation fails and leaves the file as it was.
        assert_eq!(store.reserve(1).unwrap_err().to_string(), expected);
        assert_eq!(fs::read(&path).unwrap(), content);
    }
    // A generator refuses to start on it.
    let err = Generator::builder(Layout::TWITTER)
        .store(Arc::new(store))
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "cannot read the high-water mark");
    let said = Chain(&err).to_string();
    assert!(
        said.starts_with(&format!(
            "cannot read the high-water mark: mark file {shown} is corrupt: found "
        )),
        "{said}"
    );
}

#[test]
fn surrounding_white_space_is_fine() {
    let (_dir, path) = temp_mark();
    fs::write(&path, "  1763780112345\r\n").unwrap();
    assert_eq!(
        FileStore::open(&path).unwrap().mark().unwrap(),
        Some(1_763_780_112_345)
    );
}

#[test]
fn errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/w0.mark");
    let err = FileStore::claim(&missing).unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("cannot open "), "{message}");
    assert!(message.ends_with("no/such/dir/w0.mark.lock"), "{message}");
    assert_eq!(
        Chain(&err).to_string(),
        format!("{message}: No such file or directory (os error 2)")
    );
}

/// Root rewriting another user's mark (a container run once with `--user 0` on a volume
/// another user wrote) leaves the file to that user, who would otherwise be locked out.
#[test]
fn root_leaves_a_mark_it_rewrites_to_its_owner() {
    use std::os::unix::fs::MetadataExt;
    if crate::state_dir::uid() != 0 {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI runs the tests as root"
        );
        return;
    }
    let (_dir, path) = temp_mark();
    FileStore::claim(&path).unwrap().raise(1_000).unwrap();
    std::os::unix::fs::chown(&path, Some(12_345), Some(23_456)).unwrap();
    FileStore::claim(&path).unwrap().raise(2_000).unwrap();
    let meta = fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (12_345, 23_456));
    assert_eq!(FileStore::open(&path).unwrap().mark().unwrap(), Some(2_000));
}

/// Two stores on one file, each raising the mark from its own thread: a lost update
/// (both read 10, one writes 12, the other 11) would show as a mark below one already
/// recorded.
#[test]
fn concurrent_reservations_never_lose_the_max() {
    const ROUNDS: u64 = 200;
    let (_dir, path) = temp_mark();
    // One thread climbs steadily, the other jumps about.
    let plans: [Vec<u64>; 2] = [
        (0..ROUNDS).map(|r| r * 2).collect(),
        (0..ROUNDS).map(|r| (r * 7919) % (ROUNDS * 3)).collect(),
    ];
    let expected = plans.iter().flatten().copied().max().unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let store = FileStore::open(&path).unwrap();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                let mut highest = 0;
                for until in plan {
                    let now = store.raise(until).unwrap();
                    assert!(
                        now >= until && now >= highest,
                        "raise({until}) gave {now} after {highest}"
                    );
                    highest = now;
                    let seen = store.mark().unwrap().unwrap();
                    assert!(seen >= highest, "mark fell from {highest} to {seen}");
                }
                highest
            })
        })
        .collect();
    let highest = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap();
    assert_eq!(highest, expected);
    assert_eq!(
        FileStore::open(&path).unwrap().mark().unwrap(),
        Some(highest)
    );
}

#[test]
fn one_owner_at_a_time() {
    let (_dir, path) = temp_mark();
    let owner = FileStore::claim(&path).unwrap();
    let err = FileStore::claim_within(&path, Duration::from_millis(20)).unwrap_err();
    assert!(matches!(err, StateError::Busy { .. }));
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{}.lock is locked by another snowmint generator with this layout, datacenter and worker; gave up after ",
            path.display()
        )),
        "{text}"
    );
    // A shared store's writes wait for the owner too; its reads do not.
    owner.raise(10).unwrap();
    let shared = FileStore::open_within(&path, Duration::from_millis(20)).unwrap();
    assert!(matches!(shared.raise(20), Err(StateError::Busy { .. })));
    assert_eq!(shared.mark().unwrap(), Some(10));
    drop(owner);
    assert_eq!(shared.raise(20).unwrap(), 20);
    assert!(FileStore::claim_within(&path, Duration::ZERO).is_ok());
}

/// Stores that each claim, load, "issue" the ticks after the mark, reserve and release,
/// from several threads at once: the ranges they issue never overlap.
#[test]
fn claimed_ranges_never_overlap() {
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 25;
    let (_dir, path) = temp_mark();
    let issued = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (path, issued) = (path.clone(), Arc::clone(&issued));
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    let store = FileStore::claim(&path).unwrap();
                    let floor = store.load().unwrap().map_or(0, |m| m + 1);
                    let count = 1 + (t + round) % 5;
                    let last = floor + count - 1;
                    store.reserve(last + 100).unwrap();
                    issued.lock().unwrap().push((floor, last));
                    if round % 3 != 0 {
                        store.release(last + 100, last).unwrap();
                    } // else: "crash", leaving the reservation in place
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut ranges = issued.lock().unwrap().clone();
    ranges.sort_unstable();
    assert_eq!(ranges.len() as u64, THREADS * ROUNDS);
    for pair in ranges.windows(2) {
        assert!(
            pair[0].1 < pair[1].0,
            "{:?} overlaps {:?}",
            pair[0],
            pair[1]
        );
    }
}

/// Real generators, each with its own claimed store on one file, from two threads.
#[test]
fn generators_sharing_a_worker_id_take_turns() {
    const IDS: usize = 20_000;
    let (_dir, path) = temp_mark();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let path = path.clone();
            thread::spawn(move || {
                let store = FileStore::claim(&path).unwrap();
                let generator = Generator::builder(Layout::TWITTER)
                    .store(Arc::new(store))
                    .reserve_ahead(Duration::from_millis(5))
                    .build()
                    .unwrap();
                let ids: Vec<Id> = (0..IDS).map(|_| generator.next_id().unwrap()).collect();
                generator.shutdown().unwrap();
                ids
            })
        })
        .collect();
    let mut all: Vec<Id> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 2 * IDS);
}

#[test]
fn a_clean_shutdown_releases_to_the_last_tick_issued() {
    let (_dir, path) = temp_mark();
    let layout = Layout::TWITTER;
    let clock = ManualClock::new(layout.epoch_ms() + 1_000_000);
    let generator = Generator::builder(layout)
        .clock(&clock)
        .store(Arc::new(FileStore::claim(&path).unwrap()))
        .build()
        .unwrap();
    let id = generator.next_id().unwrap();
    let reserved = FileStore::open(&path).unwrap().mark().unwrap().unwrap();
    assert_eq!(
        reserved,
        clock.now_ms() + 1_000,
        "the default reservation is 1 s ahead"
    );
    generator.shutdown().unwrap();
    let mark = FileStore::open(&path).unwrap().mark().unwrap().unwrap();
    assert_eq!(mark, layout.decode(id).unwrap().unix_ms);
}

#[test]
fn a_restart_after_a_crash_issues_only_after_the_mark() {
    let (_dir, path) = temp_mark();
    let layout = Layout::TWITTER;
    let now = layout.epoch_ms() + 1_000_000;
    // The crashed run reserved 3 s ahead and never released.
    FileStore::open(&path).unwrap().raise(now + 3_000).unwrap();
    let clock = ManualClock::new(now);
    let generator = Generator::builder(layout)
        .clock(&clock)
        .store(Arc::new(FileStore::claim(&path).unwrap()))
        .build()
        .unwrap();
    let id = generator.next_id().unwrap();
    assert_eq!(layout.decode(id).unwrap().unix_ms, now + 3_001);
    assert_eq!(clock.sleeps(), [now + 3_001], "waited for the mark to pass");
}

#[test]
fn file_names_carry_the_fleet_datacenter_and_worker() {
    let dir = Path::new("/state");
    let fleet = FileStore::path_in(dir, &Fleet::default(), 1, 31);
    assert_eq!(fleet, Path::new("/state/fleet.default-dc1-w31.mark"));
    let payments = Fleet::new("payments").unwrap();
    assert_eq!(
        FileStore::file_name(&payments, 1, 31),
        "fleet.payments-dc1-w31.mark"
    );
}

/// A state directory written by an earlier release, whose files carry the layout's name and
/// epoch: the marks of every spelling of the layout count, and a generator of that release
/// still running holds its worker id.
#[test]
fn marks_left_under_the_layouts_old_names_count_and_their_owners_keep_out() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("twitter-1288834974657-dc1-w3.mark"),
        "5000\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("custom-1288834974657-dc1-w3.mark"),
        "7000\n",
    )
    .unwrap();
    // Another layout's old file is no concern of this one.
    std::fs::write(
        dir.path().join("discord-1420070400000-dc1-w3.mark"),
        "9000\n",
    )
    .unwrap();
    let fleet = Fleet::default();
    let store = FileStore::for_generator(dir.path(), &fleet, &Layout::TWITTER, 1, 3).unwrap();
    assert_eq!(store.load().unwrap(), Some(7_000));
    store.reserve(8_000).unwrap();
    assert_eq!(store.mark().unwrap(), Some(8_000));
    drop(store);

    let old = FileStore::claim(dir.path().join("custom-1288834974657-dc1-w4.mark")).unwrap();
    old.reserve(1_000).unwrap();
    let err = FileStore::for_generator(dir.path(), &fleet, &Layout::TWITTER, 1, 4);
    assert!(matches!(err, Err(StateError::Busy { .. })), "{err:?}");
}
