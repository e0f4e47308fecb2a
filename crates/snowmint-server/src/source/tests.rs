//! The fence of a lease that does not expire, seen from the issuing side: a `file:` holder
//! whose keeper cannot run (a pause, starvation) issues nothing past what its last renewal
//! vouched for, whatever it reserved, and issues again once a renewal confirms its hold.

use std::time::{Duration, Instant};

use crate::{Config, IdSource, Settings};

/// Longer than a `file:` renewal vouches for (1 s): the starvation the test stages.
const STARVED: Duration = Duration::from_millis(1_500);

fn file_config(dir: &std::path::Path) -> Config {
    let toml = format!(
        "state_dir = {:?}\nlease = \"file:{}\"\nreserve_ahead_ms = 60000\n",
        dir.join("state"),
        dir.join("registry").display()
    );
    Config::try_from(Settings::from_toml(&toml, "test.toml".as_ref()).unwrap()).unwrap()
}

/// Found by pausing a `file:` holder while its directory was restored: queued requests
/// were served from a 60 s reservation before its keeper ran again. Here the keeper's
/// runtime (one thread) is not driven for 1.5 s while a request, on another thread, goes
/// on issuing from the same source.
#[test]
fn a_file_holder_whose_keeper_cannot_run_stops_at_its_fence_and_resumes_once_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let source = runtime
        .block_on(IdSource::start(&file_config(dir.path())))
        .unwrap();
    // A lock file new to the registry waits out the reach once, as after a restore.
    let ready = ready_within(&runtime, &source, Duration::from_secs(10));
    let mut ids = Vec::new();
    ready
        .fill(1_000, &mut ids)
        .expect("ids under a confirmed hold");

    // Nothing runs on the runtime between two `block_on`s: the keeper is starved.
    let starved = Instant::now();
    std::thread::sleep(STARVED);
    let err = ready.fill(1_000, &mut ids).unwrap_err();
    assert!(
        err.to_string().contains("no ids until it is renewed"),
        "{err}"
    );
    let probe = source.readiness().unwrap_err();
    assert!(probe.contains("is not confirmed for now"), "{probe}");
    assert_eq!(ids.len(), 1_000, "ids issued past the fence");

    // Driven again, the keeper renews at once, the fence moves, and ids come again.
    let renewed = ready_within(&runtime, &source, Duration::from_secs(5));
    renewed.fill(1_000, &mut ids).expect("ids once confirmed");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids went back");
    assert!(starved.elapsed() >= STARVED);
    runtime.block_on(source.shutdown(Duration::ZERO)).unwrap();
}

/// Drives the runtime until `source` is ready to issue, for at most `limit`.
fn ready_within(
    runtime: &tokio::runtime::Runtime,
    source: &IdSource,
    limit: Duration,
) -> crate::Ready {
    runtime.block_on(async {
        let deadline = Instant::now() + limit;
        loop {
            match source.ready_to_issue() {
                Ok(ready) => return ready,
                Err(err) if Instant::now() > deadline => {
                    panic!("not ready within {limit:?}: {err}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    })
}
