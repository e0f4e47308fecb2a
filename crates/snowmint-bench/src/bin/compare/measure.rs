//! The harness: runs minting closures on threads for a fixed count or a fixed time, times
//! single calls, and reads the process's CPU time.

use std::hint::{black_box, spin_loop};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::peers::Visit;

/// Ids per second with `threads` threads sharing one generator, each minting `per_thread`.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    pub threads: usize,
    pub per_thread: u64,
}

/// What [`Count`] saw.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    pub ids_per_sec: f64,
    /// The largest share of its run any thread spent runnable but waiting for a CPU (the
    /// scheduler's run delay): near 0 when each thread had a core to itself.
    pub waited: f64,
}

impl Visit for Count {
    type Output = Throughput;

    fn visit<M, F>(self, make: M) -> Throughput
    where
        M: Fn() -> F + Sync,
        F: FnMut() -> u64,
    {
        let start = Barrier::new(self.threads);
        let runs = on_threads(self.threads, |_| {
            let mut next = make();
            start.wait();
            Stint::time(|| {
                for _ in 0..self.per_thread {
                    black_box(next());
                }
                self.per_thread
            })
        });
        let (ids, wall, waited) = Stint::combine(&runs);
        Throughput {
            ids_per_sec: ids as f64 / wall.as_secs_f64(),
            waited,
        }
    }
}

/// Ids per second and process CPU with `threads` threads minting for a fixed wall time.
#[derive(Debug, Clone, Copy)]
pub struct ForTime {
    pub threads: usize,
    pub run_for: Duration,
}

/// What [`ForTime`] saw.
#[derive(Debug, Clone, Copy)]
pub struct Sustained {
    pub ids_per_sec: f64,
    /// Process CPU time (user + sys, every thread) over wall time, in % of one core.
    pub cpu_pct: f64,
    /// As [`Throughput::waited`].
    pub waited: f64,
}

impl Visit for ForTime {
    type Output = Sustained;

    fn visit<M, F>(self, make: M) -> Sustained
    where
        M: Fn() -> F + Sync,
        F: FnMut() -> u64,
    {
        let start = Barrier::new(self.threads);
        let stop = AtomicBool::new(false);
        let cpu0 = cpu_time();
        let runs = on_threads(self.threads, |i| {
            let mut next = make();
            start.wait();
            if i == 0 {
                // The first thread stops them all, so the run lasts `run_for` of its time.
                let until = Instant::now() + self.run_for;
                Stint::time(|| {
                    let mut n = 0u64;
                    while Instant::now() < until {
                        for _ in 0..CHECK_EVERY {
                            black_box(next());
                        }
                        n += CHECK_EVERY;
                    }
                    stop.store(true, Relaxed);
                    n
                })
            } else {
                Stint::time(|| {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        black_box(next());
                        n += 1;
                    }
                    n
                })
            }
        });
        let cpu = cpu_time() - cpu0;
        let (ids, wall, waited) = Stint::combine(&runs);
        Sustained {
            ids_per_sec: ids as f64 / wall.as_secs_f64(),
            cpu_pct: 100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
            waited,
        }
    }
}

/// Ids minted between two readings of the clock by the thread that stops a timed run: few
/// enough that the run overshoots by well under a millisecond even at the cap's pace.
const CHECK_EVERY: u64 = 256;

/// Runs `work(i)` on `threads` scoped threads and collects what each returns.
fn on_threads<T: Send>(threads: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = (0..threads).map(|i| s.spawn(move || work(i))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    })
}

/// One thread's part of a run, timed by the thread itself, so a main thread that is slow to
/// be scheduled does not shorten the measured time.
#[derive(Debug, Clone, Copy)]
struct Stint {
    ids: u64,
    start: Instant,
    end: Instant,
    /// Time spent runnable but waiting for a CPU.
    waited: Duration,
}

impl Stint {
    fn time(work: impl FnOnce() -> u64) -> Stint {
        let delay0 = run_delay();
        let start = Instant::now();
        let ids = work();
        let end = Instant::now();
        Stint {
            ids,
            start,
            end,
            waited: run_delay().saturating_sub(delay0),
        }
    }

    /// All ids, the time from the first start to the last end, and the largest share of its
    /// own stint any thread waited for a CPU.
    fn combine(runs: &[Stint]) -> (u64, Duration, f64) {
        let first = runs.iter().map(|r| r.start).min().expect("a thread");
        let last = runs.iter().map(|r| r.end).max().expect("a thread");
        let waited = runs
            .iter()
            .map(|r| r.waited.as_secs_f64() / (r.end - r.start).as_secs_f64())
            .fold(0.0, f64::max)
            .min(1.0);
        (runs.iter().map(|r| r.ids).sum(), last - first, waited)
    }
}

/// How long the calling thread has been runnable but not running (waiting for a CPU), from
/// `/proc/thread-self/schedstat`; zero where the kernel does not report it.
fn run_delay() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// The process's CPU use while it does nothing but sleep: the clock threads of snowmint
/// and ferroid, which run for the whole process.
pub fn idle_cpu_pct(run_for: Duration) -> f64 {
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    std::thread::sleep(run_for);
    let wall = t0.elapsed().as_secs_f64();
    100.0 * (cpu_time() - cpu0).as_secs_f64() / wall
}

/// The timer of every single-call figure: the CPU's time-stamp counter on x86_64 (`rdtsc`
/// after an `lfence`, `rdtscp` then an `lfence` at the end, so the call is neither started
/// early nor left running), scaled to ns by one calibration against `Instant`; elsewhere,
/// `Instant`. A pair of readings costs less than a pair of `Instant::now` calls, which the
/// latency table shows side by side.
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    ns_per_tick: f64,
    /// What `Instant` readings count from, where `Instant` is the timer.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    origin: Instant,
}

impl Timer {
    /// Counts the ticks of 50 ms of `Instant` time.
    pub fn calibrate() -> Timer {
        let origin = Instant::now();
        let probe = Timer {
            ns_per_tick: 1.0,
            origin,
        };
        let (t0, c0) = (Instant::now(), probe.start());
        std::thread::sleep(Duration::from_millis(50));
        let (c1, t1) = (probe.end(), Instant::now());
        let ns_per_tick = if cfg!(target_arch = "x86_64") {
            (t1 - t0).as_nanos() as f64 / c1.saturating_sub(c0).max(1) as f64
        } else {
            1.0
        };
        Timer {
            ns_per_tick,
            origin,
        }
    }

    /// A reading before the timed call.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `lfence` and `rdtsc` exist on every x86_64 CPU and touch no memory.
        unsafe {
            use std::arch::x86_64::{_mm_lfence, _rdtsc};
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.origin.elapsed().as_nanos() as u64
        }
    }

    /// A reading after the timed call.
    #[inline(always)]
    pub fn end(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `rdtscp` (every x86_64 CPU this runs on has it; /proc/cpuinfo says so) and
        // `lfence` write only the local they are given.
        unsafe {
            use std::arch::x86_64::{__rdtscp, _mm_lfence};
            let mut aux = 0;
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.origin.elapsed().as_nanos() as u64
        }
    }

    /// Ticks in ns.
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// Ns in ticks.
    pub fn ticks(&self, ns: f64) -> u64 {
        (ns / self.ns_per_tick) as u64
    }
}

/// Percentiles of single calls, and the slowest, in ns.
#[derive(Debug, Clone, Copy)]
pub struct Percentiles {
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub max_ns: f64,
}

/// Times `samples` single calls on the calling thread, each followed by a pause (spun, so
/// the thread stays on its core), after a tenth as many untimed calls to warm up.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub samples: usize,
    pub pause: Duration,
    pub timer: Timer,
}

impl Visit for Latency {
    type Output = Percentiles;

    fn visit<M, F>(self, make: M) -> Percentiles
    where
        M: Fn() -> F + Sync,
        F: FnMut() -> u64,
    {
        self.of(make())
    }
}

impl Latency {
    /// Single calls of `f`, as a generator's are timed.
    pub fn of(self, mut f: impl FnMut() -> u64) -> Percentiles {
        let timer = self.timer;
        self.sample(|| {
            let t0 = timer.start();
            black_box(f());
            let t1 = timer.end();
            timer.ns(t1.saturating_sub(t0))
        })
    }

    /// Two readings of the timer with nothing between: what every sample above includes on
    /// top of the call itself.
    pub fn timer(self) -> Percentiles {
        let timer = self.timer;
        self.sample(|| {
            let t0 = timer.start();
            let t1 = timer.end();
            timer.ns(t1.saturating_sub(t0))
        })
    }

    /// Two back-to-back `Instant::now`, the timer these figures were once taken with.
    pub fn instant_pair(self) -> Percentiles {
        self.sample(|| {
            let t0 = Instant::now();
            let t1 = Instant::now();
            (t1 - t0).as_nanos() as f64
        })
    }

    fn sample(self, mut once: impl FnMut() -> f64) -> Percentiles {
        let warm_up = self.samples / 10;
        let mut ns = Vec::with_capacity(self.samples);
        for i in 0..warm_up + self.samples {
            let took = once();
            if i >= warm_up {
                ns.push(took);
            }
            let until = Instant::now() + self.pause;
            while Instant::now() < until {
                spin_loop();
            }
        }
        ns.sort_unstable_by(f64::total_cmp);
        Percentiles {
            p50_ns: percentile(&ns, 50.0),
            p99_ns: percentile(&ns, 99.0),
            p999_ns: percentile(&ns, 99.9),
            max_ns: ns.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Every call timed, `threads` threads minting as fast as they can for `run_for` (at the
/// cap, so most calls that wait, wait for the next tick): the slowest single call.
#[derive(Debug, Clone, Copy)]
pub struct Worst {
    pub threads: usize,
    pub run_for: Duration,
    pub timer: Timer,
}

/// What [`Worst`] saw.
#[derive(Debug, Clone, Copy)]
pub struct WorstCall {
    /// The slowest call of any thread, in ns.
    pub max_ns: f64,
    /// Calls that took longer than 1 ms.
    pub over_1ms: u64,
    pub calls: u64,
}

impl Visit for Worst {
    type Output = WorstCall;

    fn visit<M, F>(self, make: M) -> WorstCall
    where
        M: Fn() -> F + Sync,
        F: FnMut() -> u64,
    {
        let start = Barrier::new(self.threads);
        let stop = AtomicBool::new(false);
        let timer = self.timer;
        let one_ms = timer.ticks(1e6);
        let runs = on_threads(self.threads, |i| {
            let mut next = make();
            start.wait();
            let until = timer.start() + timer.ticks(self.run_for.as_nanos() as f64);
            let (mut max, mut over, mut calls) = (0, 0, 0u64);
            while !stop.load(Relaxed) {
                let t0 = timer.start();
                black_box(next());
                let t1 = timer.end();
                let took = t1.saturating_sub(t0);
                max = max.max(took);
                over += u64::from(took > one_ms);
                calls += 1;
                if i == 0 && t1 >= until {
                    stop.store(true, Relaxed);
                }
            }
            (max, over, calls)
        });
        WorstCall {
            max_ns: timer.ns(runs.iter().map(|r| r.0).max().unwrap_or(0)),
            over_1ms: runs.iter().map(|r| r.1).sum(),
            calls: runs.iter().map(|r| r.2).sum(),
        }
    }
}

/// The floor of every design that takes one locked instruction per id: `fetch_add` on one
/// shared counter and nothing else, with the harness of [`Count`].
pub fn fetch_add_floor(count: Count) -> Throughput {
    let counter = std::sync::atomic::AtomicU64::new(0);
    let counter = &counter;
    count.visit(move || move || counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
}

/// User plus system CPU time of the whole process, every thread.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given, which is plain old data.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        assert_eq!(rc, 0, "getrusage failed");
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
