//! The checker fed breaks of every kind, and a clean run: a checker that cannot fail is
//! worthless.

use super::*;

/// A Twitter-layout id at `ms` ticks, worker `worker`, sequence `seq`.
fn id(ms: u64, worker: u64, seq: u64) -> u64 {
    (ms << 22) | (worker << WORKER_SHIFT) | seq
}

fn answer(incarnation: u32, sent: Micros, received: Micros, ids: Vec<u64>) -> Answer {
    Answer {
        incarnation,
        via: Via::HttpMany,
        sent,
        received,
        after: None,
        ids,
    }
}

/// Two processes, pids 100 and 200, holding workers 1 and 2 by the registry's polls
/// every 100 µs from 0 to 10,000 µs, and ready all along.
fn checker(dir: &std::path::Path) -> Checker {
    let mut checker = Checker::new(1_000, dir);
    for (i, pid) in [100, 200].into_iter().enumerate() {
        checker.incarnation(
            i as u32,
            Incarnation {
                slot: i,
                pid,
                started: 0,
            },
        );
    }
    for t in (0..10_000).step_by(100) {
        checker.lease_poll(LeasePoll {
            start: t,
            end: t + 10,
            held: vec![(1, 100), (2, 200)],
        });
        for incarnation in 0..2 {
            checker.ready_poll(ReadyPoll {
                incarnation,
                sent: t,
                received: t + 5,
                state: Readiness::Ready,
            });
        }
    }
    checker
}

fn invariants(found: &Findings) -> Vec<&'static str> {
    found.breaks.iter().map(|b| b.invariant).collect()
}

#[test]
fn the_layout_fields_are_read_as_the_core_decodes_them() {
    let made = snowmint::Layout::TWITTER
        .compose(
            12_345,
            snowmint::Fields {
                datacenter: 3,
                worker: 7,
                sequence: 99,
            },
        )
        .unwrap();
    assert_eq!(worker_of(made.as_u64()), 3 * 32 + 7);
}

#[test]
fn a_clean_run_breaks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    checker
        .answer(&answer(0, 1_000, 1_200, vec![id(5, 1, 0), id(5, 1, 1)]))
        .unwrap();
    checker
        .answer(&answer(0, 1_300, 1_500, vec![id(6, 1, 0)]))
        .unwrap();
    checker
        .answer(&answer(1, 1_000, 1_200, vec![id(5, 2, 0)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert!(found.breaks.is_empty(), "{:?}", found.breaks);
    assert_eq!(found.uniqueness.total, 4);
}

#[test]
fn a_repeated_id_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    checker
        .answer(&answer(0, 1_000, 1_200, vec![id(5, 1, 0)]))
        .unwrap();
    // Asked before the first answer came: no order between the two, but the same id.
    checker
        .answer(&answer(0, 1_100, 1_300, vec![id(5, 1, 0)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["repeated"], "{:?}", found.breaks);
    assert_eq!(found.breaks[0].ids, [id(5, 1, 0)]);
}

#[test]
fn an_out_of_order_pair_is_reported_across_holders() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    // Worker 1 moves to process #1 (pid 200) at 5,000 µs, by the registry.
    for poll in &mut checker.leases {
        if poll.start >= 5_000 {
            poll.held = vec![(1, 200)];
        }
    }
    checker
        .answer(&answer(0, 1_000, 1_200, vec![id(9, 1, 0)]))
        .unwrap();
    checker
        .answer(&answer(1, 6_000, 6_200, vec![id(8, 1, 0)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["order"], "{:?}", found.breaks);
    assert_eq!(found.breaks[0].ids, [id(9, 1, 0), id(8, 1, 0)]);
}

#[test]
fn ids_going_back_within_one_answer_or_one_stream_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    checker
        .answer(&answer(0, 1_000, 1_200, vec![id(9, 1, 0), id(8, 1, 0)]))
        .unwrap();
    let mut message = answer(0, 1_000, 1_400, vec![id(3, 1, 0)]);
    message.via = Via::GrpcStream;
    message.after = Some(id(4, 1, 0));
    checker.answer(&message).unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["order", "order"], "{:?}", found.breaks);
}

#[test]
fn a_worker_the_registry_never_gave_the_process_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    // Process #0 holds worker 1, not 2.
    checker
        .answer(&answer(0, 3_000, 3_200, vec![id(5, 2, 7)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["not-held"], "{:?}", found.breaks);
    assert!(
        found.breaks[0].detail.contains("pid 200"),
        "{:?}",
        found.breaks
    );
}

#[test]
fn a_lease_lost_before_the_request_is_reported_and_one_lost_during_it_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    for poll in &mut checker.leases {
        if poll.start >= 5_000 {
            poll.held = vec![(2, 200)];
        }
    }
    // Lost at 5,000 µs: an answer asked at 4,950 may have been issued before.
    checker
        .answer(&answer(0, 4_950, 5_150, vec![id(5, 1, 0)]))
        .unwrap();
    checker
        .answer(&answer(0, 5_300, 5_350, vec![id(6, 1, 0)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["not-held"], "{:?}", found.breaks);
    assert_eq!(found.breaks[0].ids, [id(6, 1, 0), id(6, 1, 0)]);
}

#[test]
fn an_answer_between_polls_too_far_apart_is_not_placed_rather_than_broken() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    // The registry could not be read from 3,000 µs until past MAX_BRACKET later, and
    // said nobody held worker 1 on either side.
    checker.leases.retain(|p| p.start < 3_000);
    checker.leases.push(LeasePoll {
        start: 3_000 + MAX_BRACKET,
        end: 3_010 + MAX_BRACKET,
        held: Vec::new(),
    });
    for poll in &mut checker.leases {
        poll.held = vec![(2, 200)];
    }
    checker
        .answer(&answer(0, 3_500, 3_600, vec![id(5, 1, 0)]))
        .unwrap();
    let found = checker.finish(10_000_000).unwrap();
    assert!(found.breaks.is_empty(), "{:?}", found.breaks);
    assert_eq!((found.placed_held, found.unchecked_held), (0, 1));
}

#[test]
fn a_restore_supersedes_the_records_before_it_within_its_reach_and_no_further() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    // Restored at 5,000 µs from a backup that never saw process #0 (pid 100) take worker 1;
    // its holders must have stopped by 7,000 µs. A newcomer, pid 300, takes worker 1 later.
    for poll in &mut checker.leases {
        if poll.start >= 5_000 {
            poll.held = vec![(2, 200)];
        }
        if poll.start >= 6_000 {
            poll.held.push((1, 300));
        }
    }
    checker.rollback(Rollback {
        from: 5_000,
        until: 7_000,
        from_unix_ms: 0,
        floor_unix_ms: 0,
        forgotten: vec![(1, 100)],
    });
    checker.incarnation(
        2,
        Incarnation {
            slot: 2,
            pid: 300,
            started: 5_200,
        },
    );
    // Within the reach, by the holder the restore forgot: held before the restore.
    checker
        .answer(&answer(0, 5_500, 5_600, vec![id(5, 1, 0)]))
        .unwrap();
    // Within the reach, a worker id no record ever gave it: the restore hid who held it.
    checker
        .answer(&answer(0, 5_500, 5_600, vec![id(5, 3, 0)]))
        .unwrap();
    // Past the reach, the forgotten holder must have stopped.
    checker
        .answer(&answer(0, 7_500, 7_600, vec![id(6, 1, 0)]))
        .unwrap();
    // A newcomer started after the restore is judged by the restored records alone.
    checker
        .answer(&answer(2, 5_500, 5_600, vec![id(5, 1, 9)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(
        invariants(&found),
        ["not-held", "not-held"],
        "{:?}",
        found.breaks
    );
    assert_eq!(found.breaks[0].ids, [id(6, 1, 0), id(6, 1, 0)]);
    assert_eq!(found.breaks[1].ids, [id(5, 1, 9), id(5, 1, 9)]);
    assert_eq!((found.held_before_restore, found.hidden_by_restore), (1, 1));
    assert_eq!(found.restores.len(), 1);
    assert_eq!(found.restores[0].holders, [(1, 100)]);
    assert_eq!(found.restores[0].retaken, [1]);
}

#[test]
fn a_newcomer_on_a_forgotten_worker_below_the_floor_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    for poll in &mut checker.leases {
        if poll.start >= 5_000 {
            poll.held = vec![(2, 200), (1, 300)];
        }
    }
    // The restore at 5,000 µs forgot pid 100 on worker 1; nothing may be issued there by
    // another process up to 10 ms past the layout's epoch.
    let epoch_ms = snowmint::Layout::TWITTER.epoch_ms();
    checker.rollback(Rollback {
        from: 5_000,
        until: 7_000,
        from_unix_ms: epoch_ms,
        floor_unix_ms: epoch_ms + 10,
        forgotten: vec![(1, 100)],
    });
    checker.incarnation(
        2,
        Incarnation {
            slot: 2,
            pid: 300,
            started: 5_100,
        },
    );
    // The forgotten holder itself, and a newcomer past the floor: fine.
    checker
        .answer(&answer(0, 5_200, 5_300, vec![id(9, 1, 0)]))
        .unwrap();
    checker
        .answer(&answer(2, 6_000, 6_100, vec![id(11, 1, 0)]))
        .unwrap();
    // A newcomer at the floor: broken.
    checker
        .answer(&answer(2, 5_600, 5_700, vec![id(10, 1, 5)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["within-reach"], "{:?}", found.breaks);
    assert_eq!(found.breaks[0].ids, [id(10, 1, 5), id(10, 1, 5)]);
    assert_eq!(found.restores[0].retaken, [1]);
    assert_eq!(found.restores[0].earliest, Some((10, 0)));
}

#[test]
fn an_answer_while_readyz_said_not_confirmed_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut checker = checker(dir.path());
    for poll in &mut checker.ready {
        if poll.incarnation == 0 && (3_000..=4_000).contains(&poll.sent) {
            poll.state = Readiness::NotConfirmed;
        }
    }
    // Inside the stretch: broken. Straddling its end: the lease may have come back.
    checker
        .answer(&answer(0, 3_220, 3_280, vec![id(5, 1, 0)]))
        .unwrap();
    checker
        .answer(&answer(0, 3_950, 4_050, vec![id(6, 1, 0)]))
        .unwrap();
    let found = checker.finish(10_000).unwrap();
    assert_eq!(invariants(&found), ["not-ready"], "{:?}", found.breaks);
}

#[test]
fn the_longest_silence_is_measured() {
    assert_eq!(longest_gap(&[10, 20, 70, 80], 100), (50, 20));
    assert_eq!(longest_gap(&[10], 100), (90, 10));
}
