//! Serials from a real generator: unique, in issue order as strings for each thread, and
//! parsing back to the ids that made them.

use std::fmt;
use std::time::Instant;

use snowmint::serial::{BizCode, Template, Zone};
use snowmint::{Generator, Layout};

/// Room for any serial these tests write (the longest is 38 characters).
const CAP: usize = 40;

/// A serial on the stack, so a million of them cost a million copies, not allocations.
/// Unused bytes stay zero; serials of one template and code have one length, so comparing
/// the arrays compares the strings.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Buf {
    bytes: [u8; CAP],
    len: usize,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            bytes: [0; CAP],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap()
    }
}

impl fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Issues `per_thread` serials on each of `threads` threads sharing `generator`, checking
/// on the way that every 997th parses back to its id, datacenter and worker. Returns each
/// thread's serials in the order it got them.
fn issue(
    generator: &Generator,
    template: &Template,
    biz: &BizCode,
    zone: &Zone,
    threads: usize,
    per_thread: usize,
) -> Vec<Vec<Buf>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut serials = Vec::with_capacity(per_thread);
                    while serials.len() < per_thread {
                        // A batch is one tick's worth at most: 4,096 ids on Twitter's layout.
                        let batch = generator.next_batch((per_thread - serials.len()) as u64);
                        for id in batch.expect("next_batch").iter() {
                            let mut buf = Buf::new();
                            template.write_to(&mut buf, biz, id, zone).unwrap();
                            if serials.len() % 997 == 0 {
                                let parsed = template.parse_serial(buf.as_str(), zone).unwrap();
                                assert_eq!(parsed.id, id);
                                assert_eq!(parsed.biz, template.has_biz().then_some(*biz));
                                assert_eq!(
                                    (parsed.datacenter, parsed.worker),
                                    (generator.datacenter(), generator.worker())
                                );
                            }
                            serials.push(buf);
                        }
                    }
                    serials
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Each thread's serials strictly increase as strings; returns them all, sorted.
fn check_each_thread_increases(results: Vec<Vec<Buf>>) -> Vec<Buf> {
    let mut all = Vec::with_capacity(results.iter().map(Vec::len).sum());
    for serials in results {
        if let Some(w) = serials.windows(2).find(|w| w[0] >= w[1]) {
            panic!(
                "a thread's serials went back: {} then {}",
                w[0].as_str(),
                w[1].as_str()
            );
        }
        all.extend(serials);
    }
    all.sort_unstable();
    all
}

fn assert_distinct(sorted: &[Buf]) {
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        panic!("serial {} issued twice", w[0].as_str());
    }
}

#[test]
fn a_million_serials_from_four_threads_are_unique_and_in_order() {
    let started = Instant::now();
    let generator = Generator::builder(Layout::TWITTER)
        .datacenter(3)
        .worker(17)
        .build()
        .unwrap();
    let template = Template::new(generator.layout());
    let biz = BizCode::new("PAY").unwrap();
    let results = issue(&generator, &template, &biz, &Zone::UTC, 4, 250_000);
    let issued = started.elapsed();
    let first = results[0][0];
    assert_eq!(first.len, 28);
    assert!(first.as_str().starts_with("PAY"));
    assert_eq!(&first.as_str()[20..24], "0113"); // node 3 << 5 | 17
    let all = check_each_thread_increases(results);
    assert_eq!(all.len(), 1_000_000);
    assert_distinct(&all);
    eprintln!(
        "1,000,000 serials: issued and formatted in {issued:?}, checked in {:?} (e.g. {})",
        started.elapsed() - issued,
        first.as_str()
    );
}

#[test]
fn two_nodes_with_check_digits_in_a_fixed_offset_never_collide() {
    let started = Instant::now();
    let template =
        Template::parse("{biz}-{time}-{node}-{seq}-{check:mod97}", &Layout::TWITTER).unwrap();
    let biz = BizCode::new("ORD").unwrap();
    let zone = Zone::parse("+08:00").unwrap();
    let mut all = Vec::new();
    for worker in [1, 2] {
        let generator = Generator::builder(Layout::TWITTER)
            .worker(worker)
            .build()
            .unwrap();
        let results = issue(&generator, &template, &biz, &zone, 2, 100_000);
        all.extend(check_each_thread_increases(results));
    }
    all.sort_unstable();
    assert_eq!(all.len(), 400_000);
    assert_distinct(&all);
    eprintln!(
        "400,000 serials on two nodes in {:?} (e.g. {})",
        started.elapsed(),
        all[0].as_str()
    );
}
