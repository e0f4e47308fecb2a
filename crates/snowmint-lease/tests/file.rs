//! The `file` registry: worker ids shared by processes on one host through a directory of
//! locked files. It takes the conformance test that every shared registry must pass: a
//! successor on another state directory, with its clock behind, starts after the dead.

use crate::conformance;

/// A registry directory that lives as long as the guard.
fn directory() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().join("registry").display());
    (dir, url)
}

conformance::takeover!(directory());

/// The release rule, which the network registries take with the whole suite.
#[tokio::test]
async fn conformance_release_never_lowers_the_acquired_mark() {
    let (_dir, url) = directory();
    conformance::release_never_lowers_the_acquired_mark(
        snowmint_lease::registry_from_url(&url).unwrap(),
        "floor",
    )
    .await;
}

#[tokio::test]
async fn conformance_a_fleet_refuses_another_layout() {
    let (_dir, url) = directory();
    conformance::a_fleet_refuses_another_layout(
        snowmint_lease::registry_from_url(&url).unwrap(),
        "layouts",
    )
    .await;
}

#[tokio::test]
async fn conformance_an_upgrade_inherits_old_marks_and_respects_old_holders() {
    let (_dir, url) = directory();
    conformance::an_upgrade_inherits_old_marks_and_respects_old_holders(&url, "upgrade").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_an_upgrade_starts_after_ids_of_a_layout_at_another_epoch() {
    let (_dir, url) = directory();
    conformance::an_upgrade_starts_after_ids_of_a_layout_at_another_epoch(&url, "epochs").await;
}

/// A worker whose mark a counter left is passed over by a clock, and the other way round;
/// with no other worker free, the refusal names both modes.
#[tokio::test]
async fn a_worker_keeps_to_the_clock_mode_of_its_mark() {
    use snowmint::ClockMode;
    use snowmint_lease::{FileRegistry, Registry};

    let dir = tempfile::tempdir().unwrap();
    let registry = FileRegistry::new(dir.path().join("registry"));
    let counter = conformance::claim("modes", "a", 2).with_clock(ClockMode::Counter);
    let lease = registry.acquire(&counter).await.unwrap();
    assert_eq!(lease.worker, 0);
    registry.reserve_now(&lease, 5_000).unwrap().unwrap();
    registry.release(&counter, &lease, 4_000).await.unwrap();

    // A clock passes worker 0 over and takes worker 1.
    let clock = conformance::claim("modes", "b", 2).with_clock(ClockMode::Wall);
    let lease = registry.acquire(&clock).await.unwrap();
    // No mark: only the floor of its lock file, made just now.
    assert_eq!(lease.worker, 1);
    // With worker 1 held, none is left that a clock may take: the refusal says why.
    let again = conformance::claim("modes", "c", 2);
    let err = registry.acquire(&again).await.unwrap_err();
    let text = snowmint::error::Chain(&err).to_string();
    assert!(
        text.contains("dc1-w0.worker was left by a generator with clock counter, which this one's clock monotonic cannot follow"),
        "{text}"
    );
    // The counter gets its worker back, after its mark.
    let lease = registry.acquire(&counter).await.unwrap();
    assert_eq!((lease.worker, lease.high_water_ms), (0, Some(4_000)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_a_fleet_keeps_its_longest_reach() {
    let (_dir, url) = directory();
    let registry = snowmint_lease::registry_from_url(&url).unwrap();
    conformance::a_fleet_keeps_its_longest_reach(registry, "reach").await;
}
