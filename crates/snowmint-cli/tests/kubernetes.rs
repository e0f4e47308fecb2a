//! `deploy/kubernetes/`: every manifest is valid against the Kubernetes API's own schemas
//! (kubernetes-validate, strict: an unknown field fails too), and says what the docs say.

use crate::support;

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

/// The env value `name` of `container`.
fn env_of<'a>(container: &'a serde_json::Value, name: &str) -> &'a str {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|var| var["name"] == name)
        .and_then(|var| var["value"].as_str())
        .unwrap_or_else(|| panic!("no {name} in {container}"))
}

/// The port of an address such as `0.0.0.0:8081`.
fn port_in(addr: &str) -> u64 {
    addr.parse::<std::net::SocketAddr>()
        .unwrap_or_else(|e| panic!("{addr}: {e}"))
        .port()
        .into()
}

/// The kubelet's probes and Prometheus' scrapes go to the admin port, whose connections
/// the API's clients cannot take: a flood of them cannot fail a probe and restart the pod.
#[test]
fn the_probes_and_the_scrapes_go_to_the_admin_port() {
    for file in ["deployment.yaml", "statefulset.yaml"] {
        let workload = support::deploy_yaml(&format!("kubernetes/{file}")).swap_remove(0);
        let template = &workload["spec"]["template"];
        let container = &template["spec"]["containers"][0];
        let admin = port_in(env_of(container, "SNOWMINT_ADMIN_ADDR"));
        assert_ne!(
            admin,
            port_in(env_of(container, "SNOWMINT_HTTP_ADDR")),
            "{file}"
        );
        let named = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "admin")
            .unwrap_or_else(|| panic!("{file}: no port named admin"));
        assert_eq!(named["containerPort"].as_u64(), Some(admin), "{file}");
        for probe in ["livenessProbe", "readinessProbe"] {
            assert_eq!(
                container[probe]["httpGet"]["port"], "admin",
                "{file}: {probe}"
            );
        }
        let annotations = &template["metadata"]["annotations"];
        assert_eq!(
            annotations["prometheus.io/port"],
            admin.to_string(),
            "{file}"
        );
        assert_eq!(annotations["prometheus.io/path"], "/metrics", "{file}");
    }
    // Clients reach the API through the Service, never the admin port; the headless
    // Service names it for scrapers that find pods through DNS.
    let services = support::deploy_yaml("kubernetes/service.yaml");
    let targets = |name: &str| -> Vec<String> {
        let service = services
            .iter()
            .find(|doc| doc["kind"] == "Service" && doc["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no Service {name}"));
        service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["targetPort"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(targets("snowmint"), ["http", "grpc"]);
    assert_eq!(targets("snowmint-headless"), ["http", "admin"]);
}
