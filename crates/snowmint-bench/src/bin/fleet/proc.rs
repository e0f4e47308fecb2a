//! What `/proc` says about a registry's processes: CPU time and memory, summed over the
//! process and its descendants (PostgreSQL serves each connection from a child process).

use std::fs;

/// The pids of `root` and every process below it.
pub fn tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            if let Some(fields) = stat_fields(pid) {
                // Field 4 of stat is the parent pid; `fields` starts at field 3.
                if let Some(ppid) = fields.get(1).and_then(|s| s.parse().ok()) {
                    parents.push((pid, ppid));
                }
            }
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found
}

/// The fields of `/proc/PID/stat` after the command name (which may hold spaces), from
/// field 3 (the state) on.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// User plus system CPU time of `root` and its descendants, in ms.
pub fn cpu_ms(root: u32) -> u64 {
    ticks_to_ms(tree(root).into_iter().map(ticks).sum())
}

/// User plus system CPU time of this process alone (not the registry it started), in ms.
pub fn own_cpu_ms() -> u64 {
    ticks_to_ms(ticks(std::process::id()))
}

/// utime + stime of one process, in clock ticks.
fn ticks(pid: u32) -> u64 {
    stat_fields(pid).map_or(0, |f| {
        // utime and stime are fields 14 and 15: 11 and 12 from field 3.
        let at = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        at(11) + at(12)
    })
}

fn ticks_to_ms(ticks: u64) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .unwrap_or(100)
        .max(1);
    ticks * 1_000 / ticks_per_s
}

/// The proportional set size of `root` and its descendants, in KiB: memory shared between
/// them (PostgreSQL's shared buffers) counted once.
pub fn pss_kib(root: u32) -> u64 {
    tree(root)
        .into_iter()
        .filter_map(|pid| fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .filter_map(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("Pss:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .sum()
}

/// The 1-minute load average.
pub fn load_average() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Raises this process's open-file limit as far as it may go (a registry started from
/// here inherits it: Redis lowers `maxclients` to it), and answers the soft limit.
pub fn raise_open_files(wanted: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: the pointer is to a valid rlimit.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) };
    if limit.rlim_cur >= wanted {
        return limit.rlim_cur;
    }
    // Root may raise the hard limit too; anyone may raise the soft one to the hard one.
    let raised = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: limit.rlim_max.max(wanted),
    };
    // SAFETY: the pointer is to a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) } == 0 {
        return wanted;
    }
    let soft = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: as above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const soft) };
    limit.rlim_max
}
