//! The container image (Dockerfile), built by `scripts/image` and run by Docker: it serves,
//! stops on SIGTERM with exit 0 and its mark persisted, issues larger ids after a restart on
//! the same volume, runs with a read-only root file system and as users other than root
//! (and says so when a volume's files belong to another),
//! and resolves host names from `FROM scratch` (Docker's DNS and /etc/hosts); and the
//! Kubernetes StatefulSet's pods, run as its manifest says, are worker ids 0 and 1.
//!
//! Ignored by a plain `cargo test`: building the image takes minutes.
//! `cargo test --workspace --test cli image:: -- --ignored` runs them; without a Docker engine
//! they skip, but fail when CI=true. With IMAGE_TEST_REUSE set, an image snowmint:VERSION
//! already there is tested as it is, not built again. Containers, volumes, networks and images they make
//! are named `snowmint-test-<pid>-...` and removed at the end of each test.

use crate::support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use support::{http_get, twitter_ms};

/// How long a container may take to answer /readyz with 200.
const READY: Duration = Duration::from_secs(30);
/// The ports the image listens on (its `SNOWMINT_*_ADDR`), as the compose file's servers
/// do: the API, and the admin port where the probes go.
const HTTP_PORT: u16 = 8080;
const ADMIN_PORT: u16 = 8081;

/// `scripts/image` once for the whole file: the image's tag, or None (skipped) when no
/// Docker engine answers and this is not CI.
fn image() -> Option<&'static str> {
    static IMAGE: OnceLock<Option<String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            if !docker(&["info"]).status.success() {
                let ci = std::env::var("CI").as_deref() == Ok("true");
                assert!(!ci, "no Docker engine answers `docker info`: the image tests cannot run in CI without one");
                report("skipping the image tests: no Docker engine answers `docker info`");
                return None;
            }
            let tag = format!("snowmint:{}", env!("CARGO_PKG_VERSION"));
            if std::env::var_os("IMAGE_TEST_REUSE").is_some()
                && docker(&["image", "inspect", &tag]).status.success()
            {
                report(&format!("image: IMAGE_TEST_REUSE: testing {tag} as it is"));
                return Some(tag);
            }
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
            let started = Instant::now();
            let out = Command::new("timeout")
                .args(["1200", "scripts/image"])
                .current_dir(&root)
                .output()
                .expect("run scripts/image");
            let log = support::printed(&out);
            assert!(out.status.success(), "scripts/image failed:\n{log}");
            // The script's own lines: each step's time and the image's size.
            for line in log.lines().filter(|l| l.starts_with("image: ")) {
                report(line);
            }
            report(&format!(
                "image: scripts/image took {:.1} s",
                started.elapsed().as_secs_f64()
            ));
            let size = ok(&["image", "inspect", "-f", "{{.Size}}", &tag]);
            report(&format!("image: {tag} is {} bytes", size.trim()));
            Some(tag)
        })
        .as_deref()
}

/// Says something past the test harness's capture, so that a passing run shows it too.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("run docker")
}

/// Runs docker and returns its stdout; panics with its stderr when it fails.
fn ok(args: &[&str]) -> String {
    let out = docker(args);
    assert!(
        out.status.success(),
        "docker {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Everything a test makes in Docker, named `snowmint-test-<pid>-<test>-<what>`, removed
/// when the test ends, passed or failed.
struct Scope {
    prefix: String,
    containers: Vec<String>,
    volumes: Vec<String>,
    networks: Vec<String>,
    images: Vec<String>,
}

impl Scope {
    fn new(test: &str) -> Scope {
        Scope {
            prefix: format!("snowmint-test-{}-{test}", std::process::id()),
            containers: Vec::new(),
            volumes: Vec::new(),
            networks: Vec::new(),
            images: Vec::new(),
        }
    }

    fn name(&self, what: &str) -> String {
        format!("{}-{what}", self.prefix)
    }

    fn volume(&mut self, what: &str) -> String {
        let name = self.name(what);
        ok(&["volume", "create", &name]);
        self.volumes.push(name.clone());
        name
    }

    fn network(&mut self, what: &str) -> String {
        let name = self.name(what);
        ok(&["network", "create", &name]);
        self.networks.push(name.clone());
        name
    }

    /// `docker run -d --name <prefix>-<what> ARGS...`: the container's name.
    fn run(&mut self, what: &str, args: &[&str]) -> String {
        let name = self.name(what);
        let mut all = vec!["run", "-d", "--name", &name];
        all.extend_from_slice(args);
        self.containers.push(name.clone());
        ok(&all);
        name
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        for c in &self.containers {
            docker(&["rm", "-f", "-v", c]);
        }
        for v in &self.volumes {
            docker(&["volume", "rm", "-f", v]);
        }
        for n in &self.networks {
            docker(&["network", "rm", n]);
        }
        for i in &self.images {
            docker(&["image", "rm", "-f", i]);
        }
    }
}

fn inspect(container: &str, format: &str) -> String {
    ok(&["inspect", "-f", format, container]).trim().to_string()
}

fn logs(container: &str) -> String {
    let out = docker(&["logs", container]);
    support::printed(&out)
}

/// The container's address on its first network, port `port`.
fn address(container: &str, port: u16) -> SocketAddr {
    let ip = inspect(
        container,
        "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
    );
    let ip = ip
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("{container} has no address: {}", logs(container)));
    SocketAddr::new(ip.parse().expect("an IP address"), port)
}

/// Waits until the container answers /readyz with 200 on its admin port; returns its HTTP
/// address.
fn ready(container: &str) -> SocketAddr {
    let deadline = Instant::now() + READY;
    loop {
        if inspect(container, "{{.State.Running}}") == "true" {
            let admin = address(container, ADMIN_PORT);
            if TcpStream::connect_timeout(&admin, Duration::from_secs(1)).is_ok()
                && http_get(admin, "/readyz").0 == 200
            {
                return address(container, HTTP_PORT);
            }
        }
        assert!(
            Instant::now() < deadline,
            "{container} not ready in {READY:?}: state {}, logs:\n{}",
            inspect(container, "{{.State.Status}} {{.State.ExitCode}}"),
            logs(container)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn one_id(addr: SocketAddr) -> u64 {
    let (status, body) = http_get(addr, "/v1/id");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    v["id"].as_str().expect("an id").parse().expect("decimal")
}

/// `docker stop` (SIGTERM): the container's exit code, which must come within the grace.
fn stop(container: &str) -> i64 {
    let started = Instant::now();
    ok(&["stop", "-t", "30", container]);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{container} took {:?} to stop on SIGTERM",
        started.elapsed()
    );
    inspect(container, "{{.State.ExitCode}}")
        .parse()
        .expect("an exit code")
}

/// The real user and group ids of the container's process, as the host sees them.
fn process_ids(container: &str) -> (String, String) {
    let pid = inspect(container, "{{.State.Pid}}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .expect("the field")
            .to_string()
    };
    (field("Uid:"), field("Gid:"))
}

/// The mark files in a volume, read from the host: (name, contents, owner uid).
fn marks(volume: &str) -> Vec<(String, String, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dir = ok(&["volume", "inspect", "-f", "{{.Mountpoint}}", volume]);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.trim()).expect("the volume's directory") {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".mark") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            found.push((name, text, entry.metadata().unwrap().uid()));
        }
    }
    found
}

#[test]
#[ignore = "builds the container image (minutes): run with --ignored"]
fn image_serves_stops_on_sigterm_and_resumes_on_its_volume() {
    let Some(image) = image() else { return };
    // The image names the commit it was built from (the build has no .git to ask).
    let version = ok(&["run", "--rm", image, "--version"]);
    assert!(
        version.starts_with("snowmint ") && !version.contains("unknown"),
        "{version}"
    );
    let mut scope = Scope::new("restart");
    let volume = scope.volume("state");
    let mount = format!("{volume}:/var/lib/snowmint");
    let args = ["--read-only", "-v", &mount, image];

    let first = scope.run("first", &args);
    let addr = ready(&first);
    let before = one_id(addr);
    let (status, body) = http_get(addr, "/v1/ids?count=100");
    assert_eq!(status, 200, "{body}");
    let last = support::ids(&body).into_iter().max().expect("ids");
    assert!(last > before);
    // gRPC listens on 50051 on every interface too.
    TcpStream::connect_timeout(&address(&first, 50051), Duration::from_secs(5))
        .expect("the gRPC port answers");

    // Not root: the image's user, 65532.
    assert_eq!(inspect(&first, "{{.Config.User}}"), "65532:65532");
    assert_eq!(
        process_ids(&first),
        ("65532".to_string(), "65532".to_string())
    );

    assert_eq!(
        stop(&first),
        0,
        "exit code on SIGTERM; logs:\n{}",
        logs(&first)
    );
    let log = logs(&first);
    assert!(
        log.contains("stopped; high-water mark persisted"),
        "logs:\n{log}"
    );
    let marks = marks(&volume);
    assert_eq!(marks.len(), 1, "{marks:?}");
    let mark: u64 = marks[0].1.trim().parse().expect("ms in the mark file");
    assert!(
        mark >= twitter_ms(last),
        "mark {mark} before the last id's time {}",
        twitter_ms(last)
    );

    let second = scope.run("second", &args);
    let addr = ready(&second);
    let after = one_id(addr);
    assert!(
        after > last,
        "after a restart on the same volume: {after} <= {last}"
    );
    assert_eq!(stop(&second), 0, "logs:\n{}", logs(&second));
}

#[test]
#[ignore = "builds the container image (minutes): run with --ignored"]
fn image_runs_as_any_user_on_a_fresh_volume() {
    let Some(image) = image() else { return };
    let mut scope = Scope::new("user");
    let volume = scope.volume("state");
    let mount = format!("{volume}:/var/lib/snowmint");
    let c = scope.run(
        "server",
        &["--read-only", "--user", "12345:12345", "-v", &mount, image],
    );
    let addr = ready(&c);
    one_id(addr);
    assert_eq!(process_ids(&c), ("12345".to_string(), "12345".to_string()));
    assert_eq!(stop(&c), 0, "logs:\n{}", logs(&c));
    let marks = marks(&volume);
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0].2, 12345, "the mark's owner");

    // Another user on the same volume is refused the files, and told whose they are and
    // the two ways out; it issues nothing.
    let other = scope.run("other", &["--user", "4242:4242", "-v", &mount, image]);
    let waited = Command::new("timeout")
        .args(["30", "docker", "wait", &other])
        .output()
        .expect("docker wait");
    let said = logs(&other);
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout).trim(),
        "1",
        "{said}"
    );
    assert!(
        said.contains("belongs to uid 12345 and this process runs as uid 4242; run as uid 12345, or give the state directory to uid 4242 (chown -R 4242 /var/lib/snowmint)"),
        "{said}"
    );

    // Root on that volume issues, and leaves the files to their user, who issues again.
    for user in ["0:0", "12345:12345"] {
        let c = scope.run(
            &format!("again-{}", &user[..1]),
            &["--read-only", "--user", user, "-v", &mount, image],
        );
        one_id(ready(&c));
        assert_eq!(stop(&c), 0, "{user}: {}", logs(&c));
        let after = self::marks(&volume);
        assert_eq!(
            after[0].2, 12345,
            "the mark's owner after {user}: {after:?}"
        );
    }

    // The binary is the entrypoint: other subcommands run in place of `serve`.
    let out = ok(&["run", "--rm", image, "gen", "-n", "2"]);
    assert_eq!(out.lines().count(), 2, "{out}");
}

/// An image of this machine's redis-server, made here (there is no registry to pull one
/// from): the binary and the libraries it loads, nothing else.
fn redis_image(scope: &mut Scope) -> String {
    // By the name on PATH, not the file it links to: Debian's redis-server is a link to
    // redis-check-rdb, which picks its part by the name it is run as.
    let binary = std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("redis-server"))
                .find(|f| f.is_file())
        })
        .expect("redis-server installed (scripts/setup)");
    let ldd = Command::new("ldd").arg(&binary).output().expect("ldd");
    let mut files = vec![binary.to_string_lossy().into_owned()];
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        if let Some(path) = line.split_whitespace().find(|w| w.starts_with('/')) {
            files.push(path.to_string());
        }
    }
    let files: Vec<String> = files
        .iter()
        .map(|f| f.trim_start_matches('/').to_string())
        .collect();
    let tag = format!("{}-redis:test", scope.prefix);
    let script = format!(
        "tar -C / -ch {} | docker import -c 'ENTRYPOINT [\"/{}\"]' - {tag}",
        files.join(" "),
        files[0]
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    scope.images.push(tag.clone());
    tag
}

#[test]
#[ignore = "builds the container image (minutes): run with --ignored"]
fn image_resolves_host_names_for_its_lease() {
    let Some(image) = image() else { return };
    let mut scope = Scope::new("names");
    let redis_image = redis_image(&mut scope);
    let network = scope.network("net");
    let redis = scope.run(
        "redis",
        &[
            "--network",
            &network,
            &redis_image,
            "--port",
            "6379",
            "--protected-mode",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
    );

    // The registry by its container name, through Docker's DNS on a user-defined network.
    let by_name = format!("redis://{redis}:6379");
    let named = scope.run(
        "by-name",
        &[
            "--network",
            &network,
            "--read-only",
            image,
            "serve",
            "--lease",
            &by_name,
        ],
    );
    let addr = ready(&named);
    one_id(addr);
    let log = logs(&named);
    assert!(log.contains("issuing ids"), "logs:\n{log}");

    // `localhost`, from the /etc/hosts Docker writes, in the registry's network namespace.
    let local = scope.run(
        "localhost",
        &[
            "--network",
            &format!("container:{redis}"),
            "--read-only",
            image,
            "serve",
            "--lease",
            "redis://localhost:6379",
            "--http-addr",
            "0.0.0.0:8082",
            "--grpc-addr",
            "off",
            "--admin-addr",
            "off",
        ],
    );
    let addr = address(&redis, 8082);
    answers(addr, "/readyz", 200, READY, || {
        format!("not ready through localhost: logs:\n{}", logs(&local))
    });
    let a = one_id(addr);
    let b = one_id(address(&named, HTTP_PORT));
    let worker = |id: u64| (id >> 12) & 0x3ff;
    assert_ne!(
        worker(a),
        worker(b),
        "two servers leased one worker id from one Redis"
    );
    assert_eq!(stop(&local), 0, "logs:\n{}", logs(&local));
    assert_eq!(stop(&named), 0, "logs:\n{}", logs(&named));
}

/// The image and the compose fleet listen on the admin port ([`ADMIN_PORT`]), where the
/// tests above send their probes: read from the files, without building the image.
#[test]
fn the_image_and_the_compose_fleet_serve_the_admin_port() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    assert!(
        dockerfile.contains(&format!("SNOWMINT_ADMIN_ADDR=0.0.0.0:{ADMIN_PORT}")),
        "{dockerfile}"
    );
    assert!(
        dockerfile.contains(&format!("SNOWMINT_HTTP_ADDR=0.0.0.0:{HTTP_PORT}")),
        "{dockerfile}"
    );
    let exposed = dockerfile
        .lines()
        .find_map(|line| line.strip_prefix("EXPOSE "))
        .expect("an EXPOSE line");
    let exposed: Vec<&str> = exposed.split_whitespace().collect();
    assert!(
        exposed.contains(&ADMIN_PORT.to_string().as_str()),
        "{exposed:?}"
    );

    let compose = support::deploy_yaml("compose/docker-compose.yml").swap_remove(0);
    let command: Vec<&str> = compose["x-snowmint"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    let admin = command
        .windows(2)
        .find_map(|pair| (pair[0] == "--admin-addr").then_some(pair[1]))
        .unwrap_or_else(|| panic!("no --admin-addr in {command:?}"));
    assert_eq!(admin, format!("0.0.0.0:{ADMIN_PORT}"));
}

/// The first document of a Kubernetes manifest, as JSON ([`support::deploy_yaml`]).
fn manifest(file: &str) -> serde_json::Value {
    support::deploy_yaml(&format!("kubernetes/{file}")).swap_remove(0)
}

/// The StatefulSet's pods, run by Docker as the kubelet would from the manifest: its args,
/// its environment, its user, read-only root file system and dropped capabilities, its
/// resource limits, its state volume, and its probes. Pod `snowmint-N` (its host name) is worker id N through
/// the `hostname` lease.
#[test]
#[ignore = "builds the container image (minutes): run with --ignored"]
fn the_statefulsets_pods_serve_as_their_manifest_says_with_their_ordinal_as_worker_id_and_outlive_a_flood()
 {
    let Some(image) = image() else { return };
    let statefulset = manifest("statefulset.yaml");
    let name = statefulset["metadata"]["name"].as_str().unwrap();
    let pod = &statefulset["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let mut run: Vec<String> = Vec::new();
    for var in container["env"].as_array().unwrap() {
        run.push("--env".into());
        run.push(format!(
            "{}={}",
            var["name"].as_str().unwrap(),
            var["value"].as_str().unwrap()
        ));
    }
    let security = &pod["securityContext"];
    run.push("--user".into());
    run.push(format!(
        "{}:{}",
        security["runAsUser"], security["runAsGroup"]
    ));
    let own = &container["securityContext"];
    if own["readOnlyRootFilesystem"] == true {
        run.push("--read-only".into());
    }
    if own["allowPrivilegeEscalation"] == false {
        run.push("--security-opt".into());
        run.push("no-new-privileges".into());
    }
    for cap in strings(&own["capabilities"]["drop"]) {
        run.push(format!("--cap-drop={cap}"));
    }
    let limits = &container["resources"]["limits"];
    let memory = docker_memory(limits["memory"].as_str().expect("a memory limit"));
    run.extend([
        "--memory".into(),
        memory.clone(),
        "--memory-swap".into(),
        memory,
    ]);
    run.extend([
        "--cpus".into(),
        docker_cpus(limits["cpu"].as_str().expect("a CPU limit")),
    ]);
    let port_named = |name: &serde_json::Value| -> u16 {
        let port = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == *name)
            .and_then(|p| p["containerPort"].as_u64())
            .expect("the port is one of the container's");
        port as u16
    };
    let port_of = |probe: &serde_json::Value| -> (String, u16) {
        let get = &probe["httpGet"];
        let port = port_named(&get["port"]);
        (get["path"].as_str().unwrap().to_string(), port)
    };
    let http_port = port_named(&"http".into());
    let liveness = port_of(&container["livenessProbe"]);
    let readiness = port_of(&container["readinessProbe"]);
    let mount = container["volumeMounts"][0]["mountPath"]
        .as_str()
        .unwrap()
        .to_string();
    let args = strings(&container["args"]);

    let mut scope = Scope::new("statefulset");
    let mut pods = Vec::new();
    for ordinal in 0..2 {
        let host = format!("{name}-{ordinal}");
        let volume = scope.volume(&format!("state-{ordinal}"));
        let mut all: Vec<String> = vec![
            "--hostname".into(),
            host.clone(),
            "-v".into(),
            format!("{volume}:{mount}"),
        ];
        all.extend(run.iter().cloned());
        all.push(image.to_string());
        all.extend(args.iter().cloned());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        pods.push((ordinal, host.clone(), scope.run(&host, &all)));
    }
    // The readiness probe, as the kubelet asks it, until it passes; then the liveness one.
    // The pod's API address.
    let probes_pass = |host: &str, pod: &str, when: &str| {
        answers(address(pod, readiness.1), &readiness.0, 200, READY, || {
            format!("{host}{when}: {}", logs(pod))
        });
        assert_eq!(
            http_get(address(pod, liveness.1), &liveness.0).0,
            200,
            "{host}{when}: liveness"
        );
        address(pod, http_port)
    };
    for (ordinal, host, pod) in &pods {
        let addr = probes_pass(host, pod, "");
        let (status, layout) = http_get(addr, "/v1/layout");
        assert_eq!(status, 200, "{layout}");
        let layout: serde_json::Value = serde_json::from_str(&layout).unwrap();
        assert_eq!(
            layout["worker"].as_u64(),
            Some(*ordinal),
            "{host}: {layout}"
        );
        let id = one_id(addr);
        assert_eq!((id >> 12) & 0x1f, *ordinal, "{host}: id {id}");
        report(&format!(
            "image: {host} serves as worker id {ordinal} (id {id})"
        ));
    }

    // Within its memory limit, a pod outlives the floods its own caps allow: nearly
    // max_connections connections each holding most of a request head, beside clients that
    // ask big batches and read nothing. The probes pass meanwhile; nothing is OOM-killed.
    let (_, host, pod) = &pods[0];
    let addr = address(pod, http_port);
    raise_open_file_limit(12_000);
    let mut flood = Vec::new();
    let head = format!(
        "GET /v1/id HTTP/1.1\r\nHost: {host}\r\nX-Pad: {}",
        "a".repeat(15_000)
    );
    let connect = || {
        TcpStream::connect(addr).unwrap_or_else(|err| {
            let state = inspect(
                pod,
                "OOMKilled={{.State.OOMKilled}} running={{.State.Running}}",
            );
            panic!("{host} refused a connection in the flood ({err}): {state}")
        })
    };
    for _ in 0..9_400 {
        let mut stream = connect();
        let _ = stream.write_all(head.as_bytes());
        flood.push(stream);
    }
    let batches = "GET /v1/ids?count=100000 HTTP/1.1\r\nHost: x\r\n\r\n".repeat(4);
    for _ in 0..400 {
        let mut stream = connect();
        let _ = stream.write_all(batches.as_bytes());
        flood.push(stream);
    }
    let mut peak = String::new();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_secs(2));
        peak = ok(&["stats", "--no-stream", "--format", "{{.MemUsage}}", pod]);
        probes_pass(host, pod, " in the flood");
        one_id(addr);
    }
    drop(flood);
    assert_eq!(
        inspect(pod, "{{.State.OOMKilled}} {{.State.Running}}"),
        "false true"
    );
    report(&format!(
        "image: {host} held 9,800 flooding connections within its {} limit ({} at the end)",
        limits["memory"].as_str().unwrap(),
        peak.trim()
    ));
}

/// A Kubernetes memory quantity (`512Mi`, `1Gi`) as `docker run --memory` takes it.
fn docker_memory(quantity: &str) -> String {
    for (suffix, unit) in [("Ki", "k"), ("Mi", "m"), ("Gi", "g")] {
        if let Some(n) = quantity.strip_suffix(suffix) {
            return format!("{n}{unit}");
        }
    }
    panic!("memory quantity {quantity}: not in Ki, Mi or Gi");
}

/// A Kubernetes CPU quantity (`2`, `250m`) as `docker run --cpus` takes it.
fn docker_cpus(quantity: &str) -> String {
    match quantity.strip_suffix('m') {
        Some(milli) => format!("{}", milli.parse::<f64>().expect("millicores") / 1000.0),
        None => quantity.to_string(),
    }
}

/// Raises this process's soft limit on open files to `want` (within the hard limit), for
/// a test that holds thousands of connections.
fn raise_open_file_limit(want: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < want {
            limit.rlim_cur = want.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(
        limit.rlim_cur >= want,
        "the open-file limit is {} (hard {}): {want} needed",
        limit.rlim_cur,
        limit.rlim_max
    );
}

/// `docker-compose` (Debian's 1.29) on `deploy/compose/docker-compose.yml` as project
/// `project`, with the images `env` names.
fn compose_command<'a>(
    project: &str,
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Command {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/compose/docker-compose.yml");
    let mut command = Command::new("docker-compose");
    command.arg("-f").arg(&file).args(["-p", project]).envs(env);
    command
}

/// [`compose_command`] with `args`: its output, or a panic with it.
fn compose(project: &str, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = compose_command(project, env.iter().copied())
        .args(args)
        .output()
        .expect("docker-compose runs (scripts/setup installs it)");
    assert!(
        out.status.success(),
        "docker-compose {args:?}: {}",
        support::printed(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The compose project, taken down with its volumes when the test ends.
struct Fleet {
    project: String,
    env: Vec<(&'static str, String)>,
}

impl Fleet {
    fn env(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
    fn run(&self, args: &[&str]) -> String {
        compose(&self.project, &self.env(), args)
    }
    /// The container of `service`.
    fn container(&self, service: &str) -> String {
        self.run(&["ps", "-q", service]).trim().to_string()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = compose_command(&self.project, self.env())
            .args(["down", "-v", "--timeout", "15"])
            .output();
    }
}

/// The address of `container` on the fleet's `front` network: where clients reach it.
fn front(container: &str) -> SocketAddr {
    let ip = inspect(
        container,
        "{{range $name, $net := .NetworkSettings.Networks}}{{$name}}={{$net.IPAddress}} {{end}}",
    );
    let ip = ip
        .split_whitespace()
        .find_map(|pair| pair.split_once("_front=").map(|(_, ip)| ip.to_string()))
        .unwrap_or_else(|| panic!("{container} is not on the front network: {ip}"));
    SocketAddr::new(ip.parse().unwrap(), HTTP_PORT)
}

/// Polls `path` at `addr` until it answers `want`, for at most `within`; how long that
/// took. Past `within` it panics, with `context()` (a container's logs) in the message.
fn answers(
    addr: SocketAddr,
    path: &str,
    want: u16,
    within: Duration,
    context: impl Fn() -> String,
) -> Duration {
    let started = Instant::now();
    loop {
        let status = TcpStream::connect_timeout(&addr, Duration::from_secs(1))
            .ok()
            .map(|_| http_get(addr, path).0);
        if status == Some(want) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{addr}{path} is {status:?}, not {want}, after {within:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// [`answers`] for `/readyz` on the admin port of the server whose API is at `addr`.
fn readyz_becomes(addr: SocketAddr, want: u16, within: Duration) -> Duration {
    let admin = SocketAddr::new(addr.ip(), ADMIN_PORT);
    answers(admin, "/readyz", want, within, String::new)
}

/// `count` ids from each server, in batches: added to `seen`, which must not hold any yet.
fn draw(servers: &[SocketAddr], seen: &mut std::collections::HashSet<u64>, count: usize) {
    for addr in servers {
        let mut drawn = 0;
        while drawn < count {
            let (status, body) = http_get(*addr, "/v1/ids?count=1000");
            assert_eq!(status, 200, "{addr}: {body}");
            for id in support::ids(&body) {
                assert!(seen.insert(id), "{addr} issued {id} again");
                drawn += 1;
            }
        }
    }
}

fn worker_of(addr: SocketAddr) -> u64 {
    let (status, layout) = http_get(addr, "/v1/layout");
    assert_eq!(status, 200, "{layout}");
    let layout: serde_json::Value = serde_json::from_str(&layout).unwrap();
    layout["worker"]
        .as_u64()
        .unwrap_or_else(|| panic!("{layout}"))
}

/// The compose fleet: three servers and a Redis on two networks. Their ids are unique and
/// their worker ids distinct; each gets its worker id back after `restart`; a server
/// killed and started again issues no id twice; one cut off the registry's network is not
/// ready within its TTL and ready again once reconnected. No id is ever issued twice.
#[test]
#[ignore = "builds the container image (minutes): run with --ignored"]
fn the_compose_fleet_keeps_ids_unique_through_restarts_kills_and_a_cut() {
    let Some(image) = image() else { return };
    let mut scope = Scope::new("compose");
    let redis = redis_image(&mut scope);
    let fleet = Fleet {
        project: scope.name("fleet"),
        env: vec![
            ("SNOWMINT_IMAGE", image.to_string()),
            ("REDIS_IMAGE", redis),
        ],
    };
    // `down` first: Debian's docker-compose 1.29 may fail to recreate containers.
    fleet.run(&["down", "-v"]);
    let started = Instant::now();
    fleet.run(&["up", "-d"]);
    let services = ["snowmint-1", "snowmint-2", "snowmint-3"];
    let containers: Vec<String> = services.iter().map(|s| fleet.container(s)).collect();
    let servers: Vec<SocketAddr> = containers.iter().map(|c| front(c)).collect();
    for addr in &servers {
        readyz_becomes(*addr, 200, READY);
    }
    report(&format!(
        "image: compose fleet ready in {:?}",
        started.elapsed()
    ));
    let mut seen = std::collections::HashSet::new();
    draw(&servers, &mut seen, 20_000);
    let workers: Vec<u64> = servers.iter().map(|a| worker_of(*a)).collect();
    let distinct: std::collections::HashSet<&u64> = workers.iter().collect();
    assert_eq!(distinct.len(), 3, "worker ids {workers:?}");

    // A restart of the whole fleet: each server is named by its host name and gets its
    // worker id back.
    fleet.run(&["restart"]);
    for addr in &servers {
        readyz_becomes(*addr, 200, READY);
    }
    let again: Vec<u64> = servers.iter().map(|a| worker_of(*a)).collect();
    assert_eq!(
        again,
        workers,
        "worker ids after docker-compose restart; the fleet's logs:\n{}",
        fleet.run(&["logs", "--no-color", "--timestamps"])
    );
    draw(&servers, &mut seen, 20_000);

    // A kill (no drain, no release), then a start.
    ok(&["kill", &containers[0]]);
    ok(&["start", &containers[0]]);
    readyz_becomes(servers[0], 200, READY);
    draw(&servers, &mut seen, 20_000);

    // Cut snowmint-2 off the registry's network: not ready within the TTL (10 s by
    // default), while the others issue; back, it is ready again.
    let networks = inspect(
        &containers[1],
        "{{range $name, $net := .NetworkSettings.Networks}}{{$name}} {{end}}",
    );
    let back = networks
        .split_whitespace()
        .find(|n| n.ends_with("_back"))
        .unwrap_or_else(|| panic!("no back network in {networks}"))
        .to_string();
    ok(&["network", "disconnect", &back, &containers[1]]);
    let stopped = readyz_becomes(servers[1], 503, Duration::from_secs(12));
    report(&format!(
        "image: cut off the registry, not ready after {stopped:?}"
    ));
    draw(&[servers[0], servers[2]], &mut seen, 20_000);
    ok(&[
        "network",
        "connect",
        "--ip",
        "172.28.2.12",
        &back,
        &containers[1],
    ]);
    let resumed = readyz_becomes(servers[1], 200, READY);
    report(&format!("image: reconnected, ready after {resumed:?}"));
    draw(&servers, &mut seen, 20_000);
    report(&format!(
        "image: compose fleet issued {} ids, none twice",
        seen.len()
    ));
}
