//! The buffer on a fake clock: installs, waits, staleness, the monotonic floor, the batch
//! size, and what staleness costs at each rate.

use super::*;

const AGE: Duration = Duration::from_millis(1000);

fn buffer(monotonic: bool, t0: Instant) -> Buffer {
    let sizing = Sizing {
        max_age: AGE,
        min_batch: 4,
        max_batch: 64,
        monotonic,
    };
    Buffer::new(sizing, t0)
}

fn batch(ids: impl IntoIterator<Item = u64>, sent: Instant, endpoint: usize) -> Segment {
    Segment::new(ids.into_iter().collect(), sent, AGE, 0.9, endpoint)
}

/// Takes one id as a caller would, stepping through the slow path, or says why not.
fn take(b: &Buffer, now: Instant) -> Result<u64, Step> {
    let mut waited = None;
    loop {
        if let Some(id) = b.try_take(now) {
            return Ok(id);
        }
        match b.step(now, waited) {
            Step::Retry => {}
            Step::Wait(round) if waited.is_none() => waited = Some(round),
            other => return Err(other),
        }
    }
}

#[test]
fn a_batch_delivered_behind_an_empty_buffer_is_installed_by_the_next_take() {
    let t0 = Instant::now();
    let b = buffer(false, t0);
    assert!(matches!(take(&b, t0), Err(Step::Wait(0))));
    assert_eq!(b.wanted_batch(t0), Some(4), "the smallest batch first");
    b.deliver(Ok(batch(100..104, t0, 0)), t0);
    // Put in place at once, so the next is wanted without waiting for a take.
    assert_eq!(b.wanted_batch(t0), Some(4), "the slot behind is free");
    let got: Vec<u64> = (0..4).map(|_| take(&b, t0).unwrap()).collect();
    assert_eq!(got, vec![100, 101, 102, 103]);
    let stats = b.stats(&["a".into()]);
    assert_eq!((stats.refills, stats.buffered), (1, 0));
    assert_eq!(stats.endpoint.as_deref(), Some("a"));
}

#[test]
fn a_waiting_take_gets_the_failure_of_the_round_it_waited_for() {
    let t0 = Instant::now();
    let b = buffer(false, t0);
    let Err(Step::Wait(round)) = take(&b, t0) else {
        panic!("nothing buffered")
    };
    b.deliver(Err(Error::NoEndpoints), t0);
    match b.step(t0, Some(round)) {
        Step::Failed(Error::NoEndpoints) => {}
        _ => panic!("the round's failure"),
    }
    // A take arriving afterwards asks for a round of its own instead.
    assert!(matches!(b.step(t0, None), Step::Wait(1)));
}

#[test]
fn stale_ids_are_thrown_away_and_counted_never_handed_out() {
    let t0 = Instant::now();
    let b = buffer(false, t0);
    b.deliver(Ok(batch(0..10, t0, 0)), t0);
    assert_eq!(take(&b, t0).ok(), Some(0));
    b.deliver(Ok(batch(10..20, t0 + AGE / 2, 0)), t0 + AGE / 2);
    // At the max age of the first batch: its 9 ids left go, the second batch serves.
    assert_eq!(take(&b, t0 + AGE).ok(), Some(10));
    assert_eq!(b.stats(&[]).discarded_stale, 9);
    // At the max age of the second: nothing fresh is left, and a round is asked for.
    assert!(matches!(take(&b, t0 + AGE * 2), Err(Step::Wait(_))));
    assert_eq!(b.stats(&[]).discarded_stale, 18);
}

#[test]
fn a_batch_gone_stale_while_waiting_behind_is_thrown_away_whole() {
    let t0 = Instant::now();
    let b = buffer(false, t0);
    b.deliver(Ok(batch(0..10, t0, 0)), t0);
    assert!(matches!(take(&b, t0 + AGE), Err(Step::Wait(_))));
    assert_eq!(b.stats(&[]).discarded_stale, 10);
}

#[test]
fn monotonic_skips_a_later_batch_at_or_below_the_last_id_taken() {
    let t0 = Instant::now();
    let b = buffer(true, t0);
    b.deliver(Ok(batch([100, 101, 102, 103], t0, 0)), t0);
    for want in 100..104 {
        assert_eq!(take(&b, t0).ok(), Some(want));
    }
    // A failover to a server whose clock is behind: its first ids are lower.
    b.deliver(Ok(batch([98, 99, 103, 104, 105], t0, 1)), t0);
    assert_eq!(take(&b, t0).ok(), Some(104));
    assert_eq!(b.stats(&[]).discarded_out_of_order, 3);

    let plain = buffer(false, t0);
    plain.deliver(Ok(batch([100], t0, 0)), t0);
    assert_eq!(take(&plain, t0).ok(), Some(100));
    plain.deliver(Ok(batch([98], t0, 1)), t0);
    assert_eq!(
        take(&plain, t0).ok(),
        Some(98),
        "without the option, lower ids pass"
    );
}

#[test]
fn the_batch_size_doubles_while_batches_go_fast_and_halves_when_they_go_stale() {
    let t0 = Instant::now();
    let b = buffer(false, t0);
    let mut now = t0;
    let mut sizes = Vec::new();
    let mut next_id = 0;
    for _ in 0..6 {
        let size = b.wanted_batch(now).unwrap();
        sizes.push(size);
        b.deliver(Ok(batch(next_id..next_id + size as u64, now, 0)), now);
        next_id += size as u64;
        while take(&b, now).is_ok() {}
        now += Duration::from_millis(1);
    }
    assert_eq!(sizes, vec![4, 8, 16, 32, 64, 64], "up to max_batch");
    // A batch left to go stale: half the size next time.
    b.deliver(Ok(batch(next_id..next_id + 64, now, 0)), now);
    assert!(take(&b, now).is_ok());
    assert!(take(&b, now + AGE).is_err());
    assert_eq!(b.wanted_batch(now + AGE), Some(32));
}

#[test]
fn a_fresh_batch_behind_is_kept_and_a_stale_one_fetched_again() {
    let t0 = Instant::now();
    let b = buffer(false, t0);
    b.deliver(Ok(batch(0..10, t0, 0)), t0);
    assert_eq!(take(&b, t0).ok(), Some(0));
    assert_eq!(b.wanted_batch(t0), Some(4), "nothing behind");
    b.deliver(Ok(batch(10..20, t0, 0)), t0);
    assert_eq!(b.wanted_batch(t0 + AGE / 2), None, "a fresh batch behind");
    assert_eq!(b.wanted_batch(t0 + AGE), Some(4), "a stale batch behind");
    b.deliver(Ok(batch(20..30, t0 + AGE, 0)), t0 + AGE);
    assert_eq!(
        b.stats(&[]).discarded_stale,
        19,
        "the stale batch behind, replaced, and the 9 ids left of the current one"
    );
    assert_eq!(take(&b, t0 + AGE).ok(), Some(20));
}

/// Draws `rate` ids a second for `secs` seconds of fake time with the default sizes,
/// the refill task answering at once when asked: (ids handed out, thrown away as
/// stale, batches fetched).
fn simulate(rate: u64, secs: u64) -> (u64, u64, u64) {
    use std::future::Future;
    use std::task::{Context, Waker};

    let t0 = Instant::now();
    let sizing = Sizing {
        max_age: AGE,
        min_batch: crate::DEFAULT_MIN_BATCH,
        max_batch: crate::DEFAULT_MAX_BATCH,
        monotonic: false,
    };
    let b = Buffer::new(sizing, t0);
    let mut next_id = 0;
    let refill = |now: Instant, next_id: &mut u64| {
        while let Some(n) = b.wanted_batch(now) {
            b.deliver(Ok(batch(*next_id..*next_id + n as u64, now, 0)), now);
            *next_id += n as u64;
        }
    };
    let asked = || {
        let wanted = b.wanted.notified();
        std::pin::pin!(wanted)
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
    };
    let mut taken = 0;
    for k in 0..rate * secs {
        let now = t0 + Duration::from_nanos(k * 1_000_000_000 / rate);
        while b.try_take(now).is_none() {
            match b.step(now, None) {
                Step::Retry => {}
                Step::Wait(_) => refill(now, &mut next_id),
                Step::Failed(e) => panic!("{e}"),
            }
        }
        taken += 1;
        if asked() {
            refill(now, &mut next_id);
        }
    }
    let stats = b.stats(&[]);
    (taken, stats.discarded_stale, stats.refills)
}

/// The costs the crate's docs give, with the defaults (max age 1 s, smallest batch 64):
/// below 128 ids/s, 2 calls a second and about 128 - rate ids thrown away a second; at
/// 128 ids/s and above, none.
#[test]
fn staleness_costs_what_the_docs_say() {
    for (rate, secs) in [(10, 20), (100, 20), (128, 20), (1_000, 20), (100_000, 10)] {
        let (taken, stale, refills) = simulate(rate, secs);
        eprintln!(
            "{rate} ids/s for {secs} s: {taken} handed out, {stale} stale, {refills} batches"
        );
        assert_eq!(taken, rate * secs);
        if rate < 128 {
            let expected = (128 - rate) * secs;
            assert!(
                stale.abs_diff(expected) <= expected / 10,
                "{rate} ids/s: {stale} stale, about {expected} expected"
            );
            assert!(
                refills.abs_diff(2 * secs) <= 2,
                "{rate} ids/s: {refills} batches"
            );
        } else {
            assert_eq!(stale, 0, "{rate} ids/s");
        }
    }
}
