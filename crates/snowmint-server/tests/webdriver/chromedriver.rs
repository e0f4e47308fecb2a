//! Debian's `chromedriver` as a child process, and the commands it understands beyond
//! W3C WebDriver.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use axum::http::Method;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};

/// Debian's browser and its driver (`scripts/setup` installs both); no test downloads one.
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// `chromedriver`, started on a free port in a process group of its own, so that dropping
/// the guard ends it and every browser process it started, even when a test panics.
pub struct Chromedriver {
    child: Child,
    /// Where the driver listens.
    pub url: String,
}

impl Chromedriver {
    /// Starts the driver. Without the browser installed, a run outside CI is skipped with the
    /// reason printed; in CI (`CI=true`) a missing browser is a failure.
    pub fn start() -> Option<Chromedriver> {
        let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
            .into_iter()
            .filter(|path| !Path::new(path).exists())
            .collect();
        if !missing.is_empty() {
            let reason = format!(
                "{} not installed: run scripts/setup (Debian packages chromium and chromium-driver)",
                missing.join(" and ")
            );
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "browser tests cannot run in CI: {reason}"
            );
            eprintln!("skipping browser test: {reason}");
            return None;
        }
        let mut child = Command::new(CHROMEDRIVER)
            // Port 0: the driver picks a free port and says which on its first lines.
            .args(["--port=0", "--allowed-ips=127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Read every line, so the driver never blocks on a full pipe.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line
                    .strip_prefix("ChromeDriver was started successfully on port ")
                    .and_then(|rest| rest.trim_end_matches('.').parse::<u16>().ok())
                {
                    let _ = tx.send(port);
                }
            }
        });
        let mut driver = Chromedriver {
            child,
            url: String::new(),
        };
        let port = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{CHROMEDRIVER} did not say which port it listens on"));
        driver.url = format!("http://127.0.0.1:{port}/");
        Some(driver)
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        // The group's id is the driver's pid: it leads the group it was started in.
        let group = self.child.id() as libc::pid_t;
        // SAFETY: killpg only sends a signal; the group is the one this guard started.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// chromedriver's console log of the session (a Chromium extension of WebDriver).
#[derive(Debug)]
pub struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (Method, Option<String>) {
        (Method::POST, Some(json!({ "type": "browser" }).to_string()))
    }
}

/// A Chrome DevTools Protocol command, through chromedriver.
#[derive(Debug)]
pub struct Cdp {
    pub cmd: &'static str,
    pub params: Value,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (Method::POST, Some(body.to_string()))
    }
}
