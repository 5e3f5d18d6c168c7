//! Headless Chromium (Debian's `chromium`) driven over WebDriver by Debian's
//! `chromium-driver`, each session with its own chromedriver on a free loopback port and
//! its own profile directory, the window phone-sized (360×640). For the phone page: the
//! browser a person would use, with its own cookie jar, CSP enforcement and script.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fantoccini::{Client, Locator};
use tokio::process::{Child, Command};

use crate::real_app::capture;
use crate::webdriver::{connect, free_port, signal_group, COMMAND_TIMEOUT, DOM_TIMEOUT};

/// How long chromedriver and Chromium may take to exit when the session ends.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A Chromium session; dropped without [`Chromium::finish`] (a failed test), it kills
/// chromedriver's process group, the browser with it.
pub struct Chromium {
    driver: Child,
    driver_pid: u32,
    client: Option<Client>,
    log: Arc<Mutex<String>>,
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts chromedriver and a headless Chromium with a phone's viewport (360 CSS pixels
    /// wide, `height` tall, two device pixels per CSS pixel, through chromedriver's
    /// mobile emulation: headless windows have a minimum width above 360); `dark` starts
    /// it with the desktop's dark preference (`--force-dark-mode`: pages see
    /// `prefers-color-scheme: dark`, as on a phone set to dark).
    pub async fn start(dark: bool, height: u32) -> Self {
        let port = free_port();
        let mut driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so that the browser it starts goes with it.
            .process_group(0)
            .spawn()
            .expect("chromedriver is missing: run scripts/setup.sh --test");
        let driver_pid = driver.id().expect("chromedriver pid");
        let (log, _) = capture(driver.stdout.take().expect("stdout"));
        let _ = capture(driver.stderr.take().expect("stderr"));
        let profile = tempfile::tempdir().expect("profile dir");
        let mut args = vec![
            "--headless".to_owned(),
            // The tests run as root in a container, where Chromium's sandbox cannot start.
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
            "--window-size=360,640".to_owned(),
            // The page's certificate is self-signed: a person accepts it after comparing
            // its fingerprint. Chromium is told to accept it here ONLY because the same
            // tests check the served certificate against the printed fingerprint with a
            // pinned client (tests/src/phone.rs, tests/tests/web.rs).
            "--ignore-certificate-errors".to_owned(),
        ];
        if dark {
            args.push("--force-dark-mode".to_owned());
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), "chrome".into());
        capabilities.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": "/usr/bin/chromium",
                "args": args,
                "mobileEmulation": {
                    "deviceMetrics": { "width": 360, "height": height, "pixelRatio": 2.0 },
                },
            }),
        );
        let client = connect(&format!("http://127.0.0.1:{port}"), capabilities, &log).await;
        Self {
            driver,
            driver_pid,
            client: Some(client),
            log,
            _profile: profile,
        }
    }

    /// The WebDriver client.
    pub fn client(&self) -> &Client {
        self.client.as_ref().expect("the session is open")
    }

    /// chromedriver's log so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Opens `url`, bounded.
    pub async fn goto(&self, url: &str) {
        bounded(&format!("goto {url}"), self.client().goto(url)).await;
    }

    /// Waits (bounded by [`DOM_TIMEOUT`]) for an element matching `css`.
    pub async fn element(&self, css: &str) -> fantoccini::elements::Element {
        let found = self
            .client()
            .wait()
            .at_most(DOM_TIMEOUT)
            .every(Duration::from_millis(50))
            .for_element(Locator::Css(css))
            .await;
        match found {
            Ok(element) => element,
            Err(e) => panic!("no {css} within {DOM_TIMEOUT:?}: {e}\n{}", self.log()),
        }
    }

    /// Clicks the element matching `css` once it is there.
    pub async fn click(&self, css: &str) {
        let element = self.element(css).await;
        bounded(&format!("click {css}"), element.click()).await;
    }

    /// The page's HTML now.
    pub async fn source(&self) -> String {
        bounded("source", self.client().source()).await
    }

    /// Runs `script` in the page and returns its value.
    pub async fn eval(&self, script: &str) -> serde_json::Value {
        bounded(
            &format!("execute {script}"),
            self.client().execute(script, Vec::new()),
        )
        .await
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Vec<u8> {
        bounded("screenshot", self.client().screenshot()).await
    }

    /// Ends the session and chromedriver.
    pub async fn finish(mut self) {
        if let Some(client) = self.client.take() {
            let _ = tokio::time::timeout(COMMAND_TIMEOUT, client.close()).await;
        }
        signal_group(self.driver_pid, "TERM");
        let _ = tokio::time::timeout(STOP_TIMEOUT, self.driver.wait()).await;
        signal_group(self.driver_pid, "KILL");
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        if self.client.is_some() {
            signal_group(self.driver_pid, "KILL");
        }
    }
}

/// One WebDriver command, bounded by [`COMMAND_TIMEOUT`]; a failure fails the test, naming it.
async fn bounded<T, E: std::fmt::Display>(
    what: &str,
    command: impl std::future::Future<Output = Result<T, E>>,
) -> T {
    match tokio::time::timeout(COMMAND_TIMEOUT, command).await {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => panic!("{what}: {e}"),
        Err(_) => panic!("{what}: no answer within {COMMAND_TIMEOUT:?}"),
    }
}
