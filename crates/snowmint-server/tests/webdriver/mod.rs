//! What the browser tests stand on: the real server on a loopback port, Debian's
//! `chromedriver` on another, and a headless `chromium` session, each owned by a guard that
//! stops it on drop.

mod chromedriver;
mod server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, SemaphorePermit};

use chromedriver::{BrowserLog, CHROMEDRIVER, CHROMIUM, Cdp, Chromedriver};
pub use server::Server;

/// The browser's time zone.
pub const TIME_ZONE: &str = "Asia/Tokyo";

/// How long a page may take to show what a test waits for.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// Two browsers at a time: the machines these run on have two cores.
static BROWSERS: Semaphore = Semaphore::const_new(2);

/// A headless Chromium session with a fresh profile, and what it stands on.
pub struct Browser {
    pub client: Client,
    // Fields drop in order: the session's profile outlives the driver that used it.
    driver: Chromedriver,
    _profile: tempfile::TempDir,
    _permit: SemaphorePermit<'static>,
}

impl Browser {
    /// A browser at 1280 x 900, or `None` when the test is skipped (see [`Chromedriver::start`]).
    pub async fn start() -> Option<Browser> {
        let permit = BROWSERS.acquire().await.unwrap();
        let driver = Chromedriver::start()?;
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--disable-client-side-phishing-detection",
            "--disable-domain-reliability",
            "--no-pings",
            "--no-proxy-server",
            "--window-size=1280,900",
            "--lang=en-US",
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
            // Every console message, kept by the driver for `console_errors`.
            "goog:loggingPrefs": { "browser": "ALL" },
            // A bound on a script, not a measure: one decodes hundreds of ids through the
            // page's form, which on a loaded machine takes longer than the default 30 s.
            "timeouts": { "script": 180_000 },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&driver.url)
            .await
            .unwrap_or_else(|e| panic!("chromium did not start through {CHROMEDRIVER}: {e}"));
        let browser = Browser {
            client,
            driver,
            _profile: profile,
            _permit: permit,
        };
        // Nine hours off UTC, whatever the machine's zone: local times are really converted.
        browser
            .cdp(
                "Emulation.setTimezoneOverride",
                json!({ "timezoneId": TIME_ZONE }),
            )
            .await;
        Some(browser)
    }

    /// Ends the session (the browser quits), then the driver.
    pub async fn close(self) {
        let Browser { client, driver, .. } = self;
        client.close().await.unwrap();
        drop(driver);
    }

    /// Opens `url` and waits until the page has read the server's layout.
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.unwrap();
        self.wait_for("#about-stats [data-about='worker']").await;
    }

    /// Waits for an element matching `css`.
    pub async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css} within {PATIENCE:?}: {e}"))
    }

    /// The element matching `css`, now.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
    }

    /// The visible text of the element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// An attribute of the element matching `css`.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.find(css).await.attr(name).await.unwrap()
    }

    /// The first line of that text: a stat's value without what is written beneath it.
    pub async fn first_line(&self, css: &str) -> String {
        let text = self.text(css).await;
        text.lines().next().unwrap_or_default().to_string()
    }

    /// The text content of every element matching `css`, in document order.
    pub async fn texts(&self, css: &str) -> Vec<String> {
        let script = "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)";
        serde_json::from_value(self.run(script, vec![json!(css)]).await).unwrap()
    }

    /// Whether the element matching `css` is shown.
    pub async fn shown(&self, css: &str) -> bool {
        self.find(css).await.is_displayed().await.unwrap()
    }

    /// Clicks the element matching `css`.
    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Presses Enter in the element matching `css`.
    pub async fn press_enter(&self, css: &str) {
        let enter = fantoccini::key::Key::Enter.to_string();
        self.find(css).await.send_keys(&enter).await.unwrap();
    }

    /// Waits until the element matching `css` shows `expected`, and says so if it never does.
    pub async fn wait_text(&self, css: &str, expected: &str) {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let text = self.text(css).await;
            if text == expected {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{css} shows {text:?}, not {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// GETs `path` from the page's own origin, as JSON (the error body for 4xx).
    pub async fn fetch_json(&self, path: &str) -> Value {
        let script = "return fetch(arguments[0]).then(r => r.json())";
        self.run(script, vec![json!(path)]).await
    }

    /// Replaces the text of the input matching `css`, as a person typing it would.
    pub async fn type_into(&self, css: &str, text: &str) {
        let input = self.find(css).await;
        input.clear().await.unwrap();
        if !text.is_empty() {
            input.send_keys(text).await.unwrap();
        }
    }

    /// Chooses `value` in the select matching `css`.
    pub async fn choose(&self, css: &str, value: &str) {
        self.find(css).await.select_by_value(value).await.unwrap();
    }

    /// Runs `script` in the page (a returned promise is awaited) and returns its value.
    pub async fn run(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Every error the browser's console has logged since the last call: uncaught
    /// exceptions, `console.error`, failed loads.
    pub async fn console_errors(&self) -> Vec<String> {
        let entries = self.client.issue_cmd(BrowserLog).await.unwrap();
        entries
            .as_array()
            .expect("log entries")
            .iter()
            .filter(|entry| entry["level"] == "SEVERE")
            .map(|entry| entry["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// A screenshot of the whole page at `width` CSS pixels (a phone's layout below 600),
    /// written as a PNG to `path`.
    pub async fn screenshot(&self, width: u32, path: &Path) {
        let metrics = |height: u64| {
            json!({
                "width": width,
                "height": height,
                "deviceScaleFactor": 1,
                "mobile": width < 600,
            })
        };
        self.cdp("Emulation.setDeviceMetricsOverride", metrics(900))
            .await;
        // Two frames: the page redraws its bit diagram in the frame after a resize.
        let settle = "return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => \
                      done(document.documentElement.scrollHeight))))";
        let height = self.run(settle, vec![]).await.as_u64().unwrap();
        self.cdp("Emulation.setDeviceMetricsOverride", metrics(height))
            .await;
        self.run(settle, vec![]).await;
        let shot = self
            .cdp(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
        self.cdp("Emulation.clearDeviceMetricsOverride", json!({}))
            .await;
    }

    /// The page's width in CSS pixels, and how wide its content is.
    pub async fn widths(&self) -> (u64, u64) {
        let v = self
            .run(
                "return [window.innerWidth, document.documentElement.scrollWidth]",
                vec![],
            )
            .await;
        (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
    }

    /// Emulates `width` CSS pixels, as [`Browser::screenshot`] does, until cleared.
    pub async fn emulate_width(&self, width: u32) {
        self.cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": 800, "deviceScaleFactor": 1, "mobile": width < 600 }),
        )
        .await;
        self.run(
            "return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))",
            vec![],
        )
        .await;
    }

    /// Makes the page see a dark (or light) colour-scheme preference.
    pub async fn prefer_dark(&self, dark: bool) {
        let value = if dark { "dark" } else { "light" };
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": value }] }),
        )
        .await;
    }

    async fn cdp(&self, cmd: &'static str, params: Value) -> Value {
        self.client
            .issue_cmd(Cdp { cmd, params })
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    }
}

/// Where screenshots go: `target/screenshots/`, beside this test's own binary.
pub fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/browser-<hash>
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the test binary lives in target/<profile>/deps");
    target.join("screenshots")
}
