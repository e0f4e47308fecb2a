//! Every committed input of every fuzz target, replayed on stable: the files of
//! `fuzz/corpus/<target>/` (what libFuzzer kept, minimized) and `fuzz/regressions/<target>/`
//! (inputs that once failed). New inputs come only from libFuzzer runs, `scripts/fuzz-smoke`
//! and longer (docs/RELIABILITY.md, "Fuzzing").

use std::fs;
use std::io::Write;
use std::panic;
use std::path::{Path, PathBuf};

use snowmint_fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none if it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_committed_input_passes_its_target() {
    let fuzz = fuzz_dir();
    let mut failed = Vec::new();
    let mut without_corpus = Vec::new();
    let mut report = String::new();
    for target in TARGETS {
        let corpus = files(&fuzz.join("corpus").join(target.name));
        let regressions = files(&fuzz.join("regressions").join(target.name));
        if corpus.is_empty() {
            without_corpus.push(target.name);
        }
        for file in corpus.iter().chain(&regressions) {
            let data = fs::read(file).unwrap();
            // The hook has printed the panic's message: name the input right after it.
            if panic::catch_unwind(|| (target.check)(&data)).is_err() {
                let name = file
                    .strip_prefix(&fuzz)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                eprintln!("replay: {} panicked on fuzz/{name}", target.name);
                failed.push(name);
            }
        }
        report += &format!(
            "replay: {} {} corpus + {} regression inputs\n",
            target.name,
            corpus.len(),
            regressions.len()
        );
    }
    // Written past the harness's capture, so that each run shows what it replayed.
    std::io::stderr().write_all(report.as_bytes()).unwrap();
    assert!(
        failed.is_empty(),
        "inputs that fail, under fuzz/: {failed:#?}"
    );
    assert!(
        without_corpus.is_empty(),
        "targets without a corpus in fuzz/corpus/<target>/ (docs/RELIABILITY.md, \
         \"Fuzzing\", says how to grow one): {without_corpus:?}"
    );
}

/// The targets in `fuzz/`: its `fuzz_targets/*.rs` and the `[[bin]]` names of its
/// `Cargo.toml`, which `cargo fuzz list` gives.
fn targets_in_fuzz() -> (Vec<String>, Vec<String>) {
    let fuzz = fuzz_dir();
    let mut sources: Vec<String> = files(&fuzz.join("fuzz_targets"))
        .iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    sources.sort();
    let manifest = fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    let mut bins: Vec<String> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|bin| {
            let line = bin.lines().find(|l| l.trim_start().starts_with("name"))?;
            Some(line.split('"').nth(1)?.to_string())
        })
        .collect();
    bins.sort();
    (sources, bins)
}

#[test]
fn every_fuzz_target_is_replayed() {
    let listed: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(listed, sorted, "TARGETS is kept in name order");
    let (sources, bins) = targets_in_fuzz();
    assert_eq!(sources, listed, "fuzz/fuzz_targets/*.rs against TARGETS");
    assert_eq!(
        bins, listed,
        "the [[bin]]s of fuzz/Cargo.toml against TARGETS"
    );
}
