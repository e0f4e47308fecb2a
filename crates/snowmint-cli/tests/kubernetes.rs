//! `deploy/kubernetes/`: every manifest is valid against the Kubernetes API's own schemas
//! (kubernetes-validate, strict: an unknown field fails too), and says what the docs say.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifests() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The kubernetes-validate of `scripts/setup`.
fn validator() -> PathBuf {
    support::setup_tool("kubernetes-venv/bin/kubernetes-validate")
}

#[test]
fn every_manifest_is_valid_against_the_kubernetes_schemas() {
    let files = manifests();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["deployment.yaml", "service.yaml", "statefulset.yaml"]
    );
    let out = Command::new(validator())
        .arg("--strict")
        .args(&files)
        .output()
        .expect("kubernetes-validate runs");
    let said = support::printed(&out);
    assert!(out.status.success(), "{said}");
    for resource in [
        "deployment/snowmint",
        "service/snowmint",
        "service/snowmint-headless",
        "poddisruptionbudget/snowmint",
        "statefulset/snowmint",
    ] {
        assert!(
            said.contains(&format!("passed for resource {resource} ")),
            "{resource}: {said}"
        );
    }
}

#[test]
fn the_validator_refuses_what_kubernetes_would() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let statefulset = std::fs::read_to_string(&manifests()[2]).unwrap();
    // A field in the wrong place, as a hand edit might leave it.
    std::fs::write(
        &bad,
        statefulset.replace("  replicas: 3\n", "  replicas: 3\n  replica: 3\n"),
    )
    .unwrap();
    let out = Command::new(validator())
        .arg("--strict")
        .arg(&bad)
        .output()
        .expect("kubernetes-validate runs");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("'replica' was unexpected"), "{said}");
}
