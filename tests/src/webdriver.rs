//! The real app under tauri-driver (WebKitWebDriver) and a WebDriver session on its prompt
//! dialog. tauri-driver starts WebKitWebDriver with `TAURI_WEBVIEW_AUTOMATION=true`, and
//! the app it launches inherits that: the app then creates its (hidden) prompt window at
//! start and keeps it (src-tauri/src/app/dialog/), which is the webview the session
//! drives. Each session has its own tauri-driver on its own ports; tauri-driver's
//! environment (the world's, see [`AppWorld::apply_env`]) carries the private directories
//! to the app. Every WebDriver command is bounded: a hung one fails the test, naming itself.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::{Client, ClientBuilder, Locator};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::real_app::{app_binary, capture, AppWorld};

/// How long a DOM state may take to appear (a bound for WebDriver waits, not a sleep).
pub const DOM_TIMEOUT: Duration = Duration::from_secs(20);

/// How long one WebDriver command may take (a hung command fails the test, naming itself).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a wait for an element asks again (fantoccini's default is 250 ms, longer
/// than some states last: the prompt's input delay is 500 ms).
const POLL: Duration = Duration::from_millis(50);

/// How long the WebDriver session may take to start (tauri-driver listening, the app up).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(40);

/// How long the app and tauri-driver may take to exit when stopped.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a session is started, each on fresh ports, when a driver finds its port
/// taken (by another process, between [`free_port`] and the driver's bind).
pub const START_ATTEMPTS: usize = 4;

/// A start that failed because a driver's port was taken: which one.
struct PortTaken(String);

/// tauri-driver from PATH or `~/.cargo/bin` (scripts/setup.sh --test installs it).
pub fn tauri_driver() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    let cargo_bin = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo/bin"));
    on_path
        .into_iter()
        .chain(cargo_bin)
        .map(|dir| dir.join("tauri-driver"))
        .find(|bin| bin.is_file())
        .expect("tauri-driver is missing: run scripts/setup.sh --test")
}

/// A free TCP port on 127.0.0.1 for a listener another process opens later (tauri-driver,
/// WebKitWebDriver), from below the kernel's ephemeral range (32768–60999 here). A port
/// the kernel handed out (`bind(:0)`) and that was released is in that range, and any
/// outgoing connection (this suite's own HTTP clients) may take it as its local port
/// before WebKitWebDriver listens on it: one CI run failed with "Unable to listen for
/// HTTP server at port 34891". Each call takes the next port of a per-process sequence
/// (the test threads of one binary never share one), starting at a pid-derived point,
/// and passes over any port that cannot be bound now.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(389) % COUNT;
    for _ in 0..COUNT {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(FIRST + (start + step) % COUNT).expect("below 32000");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {FIRST} and {}", FIRST + COUNT)
}

/// The real app under tauri-driver, and a WebDriver session on its dialog page. Dropped
/// without [`Session::finish`] (a failed test), it kills what it started.
pub struct Session {
    driver: Child,
    driver_pid: u32,
    client: Option<Client>,
    log: Arc<Mutex<String>>,
    /// The app's pid (from its discovery record).
    pub app_pid: Option<u32>,
}

impl Session {
    /// Starts tauri-driver with the world's environment (plus `extra_env`) and a session
    /// running the app on the world's project; returns once the page is up and empty.
    pub async fn start(world: &AppWorld, extra_env: &[(&str, &str)]) -> Self {
        Self::start_in(world, &world.base, extra_env).await
    }

    /// Like [`Session::start`], the app started from `cwd` (tauri-driver's directory,
    /// which WebKitWebDriver and the app inherit).
    pub async fn start_in(world: &AppWorld, cwd: &Path, extra_env: &[(&str, &str)]) -> Self {
        Self::start_on(world, cwd, extra_env, (free_port(), free_port())).await
    }

    /// Like [`Session::start_in`], first trying `ports` (tauri-driver's, WebKitWebDriver's).
    /// A port [`free_port`] found free can be taken by another process before the driver
    /// listens on it (tauri-driver and WebKitWebDriver bind their own sockets: none can be
    /// handed over), so a start that fails because a port is taken is tried again on fresh
    /// ports, [`START_ATTEMPTS`] times in all; each retry is printed.
    pub async fn start_on(
        world: &AppWorld,
        cwd: &Path,
        extra_env: &[(&str, &str)],
        mut ports: (u16, u16),
    ) -> Self {
        for attempt in 1..=START_ATTEMPTS {
            match Self::launch(world, cwd, extra_env, ports).await {
                Ok(session) => return session.ready(world).await,
                Err(PortTaken(what)) => {
                    eprintln!("WebDriver start {attempt} of {START_ATTEMPTS}: {what}");
                    ports = (free_port(), free_port());
                }
            }
        }
        panic!("no WebDriver session in {START_ATTEMPTS} starts: a port was taken each time")
    }

    /// Starts tauri-driver on `ports` and a session through it; `PortTaken` (with the
    /// driver and what it started killed) when a driver could not listen on its port.
    async fn launch(
        world: &AppWorld,
        cwd: &Path,
        extra_env: &[(&str, &str)],
        (port, native_port): (u16, u16),
    ) -> Result<Self, PortTaken> {
        let mut cmd = Command::new(tauri_driver());
        world.apply_env(&mut cmd);
        cmd.current_dir(cwd);
        cmd.arg("--port")
            .arg(port.to_string())
            .arg("--native-port")
            .arg(native_port.to_string())
            // Its own group: a failed start is ended whole, WebKitWebDriver included
            // (tauri-driver leaves it running when it cannot listen itself).
            .process_group(0)
            // tauri-driver says on stdout that it cannot listen; WebKitWebDriver (whose
            // stderr is tauri-driver's) on stderr.
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in extra_env {
            cmd.env(key, value);
        }
        let mut driver = cmd.spawn().expect("spawn tauri-driver");
        let driver_pid = driver.id().expect("tauri-driver pid");
        let (log, log_lines) = capture(driver.stderr.take().expect("stderr"));
        let said = capture(driver.stdout.take().expect("stdout"));

        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "tauri:options".into(),
            serde_json::json!({
                "application": app_binary(),
                "args": ["--project", world.project],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        // Whatever holds a taken port may accept the connection and never answer: the
        // drivers' own words decide, raced against the connecting.
        let failed = start_failure(
            &mut driver,
            said,
            (log.clone(), log_lines),
            (port, native_port),
        );
        let client = tokio::select! {
            client = connect(&url, capabilities, &log) => client,
            failure = failed => match failure {
                StartFailure::Taken(what) => {
                    signal_group(driver_pid, "KILL");
                    let _ = tokio::time::timeout(STOP_TIMEOUT, driver.wait()).await;
                    return Err(PortTaken(what));
                }
                StartFailure::Exited(status) => {
                    panic!("tauri-driver exited ({status}) before the session started\n{}", locked(&log))
                }
            },
        };
        Ok(Self {
            driver,
            driver_pid,
            client: Some(client),
            log,
            app_pid: None,
        })
    }

    /// Waits until the session's dialog page is up and empty, and takes the app's pid.
    async fn ready(mut self, world: &AppWorld) -> Self {
        // The first run opens the welcome window too, which WebKitWebDriver may hand the
        // session first: the dialog is found by its page.
        self.switch_to_page("prompt.html").await;
        // The page has loaded and has nothing to show: the app is up and (the dialog starts
        // after the project is served) its discovery file is published.
        self.wait_css("body[data-state='empty']").await;
        self.app_pid = world.record(&world.project).map(|r| r.pid);
        assert!(
            self.app_pid.is_some(),
            "no discovery record once the page is up; log:\n{}",
            self.log()
        );
        self
    }

    /// Switches through the open windows, giving each one's page (URL path) to `stop`,
    /// until it says stop (the session then stays on that window); whether it did.
    async fn visit_pages(&self, mut stop: impl FnMut(&str) -> bool) -> bool {
        let handles = self
            .bounded("window handles", self.client().windows())
            .await;
        for handle in handles {
            // A handle of a window just destroyed cannot be switched to: passed over.
            if self.client().switch_to_window(handle).await.is_err() {
                continue;
            }
            let url = self
                .bounded("the window's page", self.client().current_url())
                .await;
            if stop(url.path()) {
                return true;
            }
        }
        false
    }

    /// The pages (URL paths) of the open windows, leaving the session on the last one.
    pub async fn pages(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.visit_pages(|page| {
            out.push(page.to_owned());
            false
        })
        .await;
        out
    }

    /// Switches the session to the window whose page is `page` (`prompt.html`), waiting
    /// (bounded) for it to appear.
    pub async fn switch_to_page(&self, page: &str) {
        let deadline = Instant::now() + DOM_TIMEOUT;
        while !self.visit_pages(|path| path.ends_with(page)).await {
            assert!(
                Instant::now() < deadline,
                "no {page} window within {DOM_TIMEOUT:?}; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The port the app serves the world's project on.
    pub fn port(&self, world: &AppWorld) -> u16 {
        world
            .record(&world.project)
            .filter(|r| Some(r.pid) == self.app_pid)
            .unwrap_or_else(|| panic!("the app's discovery record is gone; log:\n{}", self.log()))
            .port
    }

    pub fn client(&self) -> &Client {
        self.client.as_ref().expect("session open")
    }

    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits (bounded) until an element matches `css`. An element found just as the page
    /// replaced it (a re-render between finding it and handing it over: WebKitWebDriver's
    /// "stale element") counts as not there yet, like no element at all.
    pub async fn wait_css(&self, css: &str) -> fantoccini::elements::Element {
        eprintln!("webdriver: wait for {css}");
        let deadline = Instant::now() + DOM_TIMEOUT;
        loop {
            let found =
                tokio::time::timeout(COMMAND_TIMEOUT, self.client().find(Locator::Css(css))).await;
            let Ok(found) = found else {
                panic!(
                    "waiting for {css:?}: WebDriver stopped answering\nlog:\n{}",
                    self.log()
                )
            };
            match found {
                Ok(element) => return element,
                Err(e)
                    if (e.is_no_such_element() || e.is_stale_element_reference())
                        && Instant::now() < deadline =>
                {
                    tokio::time::sleep(POLL).await;
                }
                Err(e) => {
                    let body = self.attributes().await;
                    panic!(
                        "no element matches {css:?} within {DOM_TIMEOUT:?}: {e}\nbody: {body}\nlog:\n{}",
                        self.log()
                    )
                }
            }
        }
    }

    /// The body's data attributes, for failure messages.
    pub async fn attributes(&self) -> String {
        let script = "return JSON.stringify(Object.assign({}, document.body.dataset))";
        match tokio::time::timeout(COMMAND_TIMEOUT, self.client().execute(script, vec![])).await {
            Ok(Ok(value)) => value.as_str().unwrap_or_default().to_owned(),
            Ok(Err(e)) => format!("(unavailable: {e})"),
            Err(_) => "(unavailable: no answer)".to_owned(),
        }
    }

    /// Waits for a prompt other than `previous` to be on screen and accepting input;
    /// returns its id.
    pub async fn wait_prompt(&self, previous: Option<&str>) -> String {
        let not = previous
            .map(|id| format!(":not([data-prompt-id='{id}'])"))
            .unwrap_or_default();
        let body = self
            .wait_css(&format!(
                "body[data-state='prompt'][data-armed='true']{not}"
            ))
            .await;
        self.bounded("read data-prompt-id", body.attr("data-prompt-id"))
            .await
            .expect("a prompt id")
    }

    /// Runs `script` (one that returns a value) every 20 ms until `done` holds for what it
    /// returned or `within` has passed, and returns the last value either way: for page
    /// state with no event to await (the caller asserts on the value, saying what it
    /// wanted).
    pub async fn script_until(
        &self,
        what: &str,
        script: &str,
        within: Duration,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + within;
        loop {
            let value = self
                .bounded(what, self.client().execute(script, vec![]))
                .await;
            if done(&value) || Instant::now() >= deadline {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops the page's clock for its timers of exactly `delay`: from now on such a timer
    /// (`setTimeout`) is held, not run, until [`Session::release_timers`], so a state that
    /// lasts a set time (the prompt's input delay) lasts until the test ends it, however
    /// slow the machine. Other timers run as usual (WebKitWebDriver's own, such as an async
    /// script's 30 s timeout, among them). The script runs in the page's own world, so the
    /// page's modules see the replaced functions.
    pub async fn hold_timers(&self, delay: Duration) {
        let script = "const delay = arguments[0]; \
            if (window.__heldTimers) throw new Error('timers already held'); \
            const realSet = window.setTimeout, realClear = window.clearTimeout; \
            const h = { realSet, realClear, timers: new Map(), next: 0, waiting: [] }; \
            window.setTimeout = function (callback, ms, ...args) { \
              if (typeof callback !== 'function' || Number(ms) !== delay) \
                return realSet.call(window, callback, ms, ...args); \
              h.next -= 1; \
              h.timers.set(h.next, { callback, args }); \
              for (const wake of h.waiting.splice(0)) wake(); \
              return h.next; \
            }; \
            window.clearTimeout = function (id) { \
              if (!h.timers.delete(id)) realClear.call(window, id); \
            }; \
            window.__heldTimers = h; \
            return true;";
        let ms = u64::try_from(delay.as_millis()).expect("a delay in ms");
        self.bounded(
            &format!("hold the page's {ms} ms timers"),
            self.client().execute(script, vec![serde_json::json!(ms)]),
        )
        .await;
    }

    /// Waits (bounded by the session's script timeout) until the page has started a timer
    /// that [`Session::hold_timers`] holds and not cleared it; returns how many are held.
    pub async fn held_timers(&self) -> usize {
        let script = "const done = arguments[arguments.length - 1]; \
            const h = window.__heldTimers; \
            if (!h) return done(null); \
            const report = () => done(h.timers.size); \
            if (h.timers.size > 0) report(); else h.waiting.push(report);";
        let value = self
            .bounded(
                "wait for the page to start a held timer",
                self.client().execute_async(script, vec![]),
            )
            .await;
        serde_json::from_value(value).expect("the page's timers are held (hold_timers)")
    }

    /// Gives the page its clock back and runs every held timer's callback now (the time
    /// it waited for is over); returns how many ran.
    pub async fn release_timers(&self) -> usize {
        let script = "const h = window.__heldTimers; \
            if (!h) return null; \
            window.setTimeout = h.realSet; \
            window.clearTimeout = h.realClear; \
            delete window.__heldTimers; \
            const timers = Array.from(h.timers.values()); \
            for (const t of timers) t.callback(...t.args); \
            return timers.length;";
        let value = self
            .bounded(
                "release the page's held timers",
                self.client().execute(script, vec![]),
            )
            .await;
        serde_json::from_value(value).expect("the page's timers are held (hold_timers)")
    }

    /// Runs one WebDriver command within [`COMMAND_TIMEOUT`].
    pub async fn bounded<T, E: std::fmt::Debug>(
        &self,
        what: &str,
        command: impl std::future::Future<Output = Result<T, E>>,
    ) -> T {
        eprintln!("webdriver: {what}");
        match tokio::time::timeout(COMMAND_TIMEOUT, command).await {
            Ok(Ok(value)) => value,
            Ok(Err(e)) => panic!("{what}: {e:?}\nlog:\n{}", self.log()),
            Err(_) => panic!(
                "{what}: no answer within {COMMAND_TIMEOUT:?}\nlog:\n{}",
                self.log()
            ),
        }
    }

    /// Runs `read` on the element matching `css`, bounded; when the page re-rendered it
    /// in between (a policy file's change echoes back and redraws a list), the element
    /// is found again rather than failing on a stale reference.
    async fn on_fresh<T, Fut>(
        &self,
        css: &str,
        what: &str,
        read: impl Fn(fantoccini::elements::Element) -> Fut,
    ) -> T
    where
        Fut: std::future::Future<Output = Result<T, fantoccini::error::CmdError>>,
    {
        use fantoccini::error::{CmdError, ErrorStatus};
        for _ in 0..5 {
            let element = self.wait_css(css).await;
            eprintln!("webdriver: {what}");
            match tokio::time::timeout(COMMAND_TIMEOUT, read(element)).await {
                Ok(Ok(value)) => return value,
                Ok(Err(CmdError::Standard(e))) if e.error == ErrorStatus::StaleElementReference => {
                    eprintln!("webdriver: {css} was re-rendered; finding it again");
                }
                Ok(Err(e)) => panic!("{what}: {e:?}\nlog:\n{}", self.log()),
                Err(_) => panic!(
                    "{what}: no answer within {COMMAND_TIMEOUT:?}\nlog:\n{}",
                    self.log()
                ),
            }
        }
        panic!("{what}: {css} kept being re-rendered\nlog:\n{}", self.log())
    }

    /// Empties the input `css` names, scrolled into view first: WebKitWebDriver refuses to
    /// clear an input a scrolled pane hides ("element not interactable"), where typing
    /// into it works.
    pub async fn clear(&self, css: &str) {
        let element = self.wait_css(css).await;
        let arg = serde_json::to_value(&element).expect("an element as JSON");
        self.bounded(
            &format!("scroll {css} into view"),
            self.client()
                .execute("arguments[0].scrollIntoView({block: 'center'})", vec![arg]),
        )
        .await;
        self.bounded(&format!("clear {css}"), element.clear()).await;
    }

    pub async fn text(&self, css: &str) -> String {
        self.on_fresh(
            css,
            &format!("text of {css}"),
            |e| async move { e.text().await },
        )
        .await
    }

    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.on_fresh(css, &format!("{name} of {css}"), |e| async move {
            e.attr(name).await
        })
        .await
    }

    /// A DOM property (`value`, `checked`) of the element `css` finds, read on a fresh
    /// reference (a re-render between finding and reading is retried).
    pub async fn prop(&self, css: &str, name: &str) -> Option<String> {
        self.on_fresh(css, &format!("{name} property of {css}"), |e| async move {
            e.prop(name).await
        })
        .await
    }

    /// Clicks the element `css` finds, on a fresh reference (a view that re-rendered
    /// between finding and clicking is found again; a stale click never happened).
    pub async fn click(&self, css: &str) {
        self.on_fresh(
            css,
            &format!("click {css}"),
            |e| async move { e.click().await },
        )
        .await
    }

    pub async fn enabled(&self, css: &str) -> bool {
        self.on_fresh(css, &format!("{css} enabled"), |e| async move {
            e.is_enabled().await
        })
        .await
    }

    pub async fn displayed(&self, css: &str) -> bool {
        self.on_fresh(css, &format!("{css} displayed"), |e| async move {
            e.is_displayed().await
        })
        .await
    }

    /// The prompt on screen is marked sensitive, its warning names `what`, and Deny (the
    /// default) has the focus.
    pub async fn assert_sensitive_deny_first(&self, what: &str) {
        self.wait_css("body[data-sensitive='true']").await;
        let warning = self.text("#sensitive").await;
        assert!(warning.contains(what), "{warning:?}");
        assert_eq!(
            self.focused("data-choice").await.as_deref(),
            Some("deny"),
            "Deny is the default"
        );
    }

    /// An attribute of the element that has the keyboard focus.
    /// Read in one script, so a re-render between finding the element and reading it
    /// cannot leave a stale reference.
    pub async fn focused(&self, name: &str) -> Option<String> {
        let script = "const el = document.activeElement; \
                      return el ? el.getAttribute(arguments[0]) : null;";
        let value = self
            .bounded(
                &format!("{name} of the active element"),
                self.client().execute(script, vec![serde_json::json!(name)]),
            )
            .await;
        value.as_str().map(str::to_owned)
    }

    pub async fn choose(&self, choice: &str) {
        self.click(&format!("#actions-main button[data-choice='{choice}']"))
            .await;
    }

    /// The choices the main step shows: each shown button's `data-choice`, in page order.
    /// Read in one script (a re-render cannot leave a stale reference in between).
    pub async fn offered(&self) -> Vec<String> {
        let script =
            "return Array.from(document.querySelectorAll('#actions-main button[data-choice]')) \
                      .filter((b) => b.getClientRects().length > 0).map((b) => b.dataset.choice);";
        let value = self
            .bounded("the choices shown", self.client().execute(script, vec![]))
            .await;
        serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("the choices shown: {value}: {e}"))
    }

    /// Presses and releases one key (a character or a `Key` code point).
    pub async fn press(&self, key: char) {
        self.press_all(&[key]).await;
    }

    /// Presses and releases each of `keys` in turn, in one WebDriver command (one round
    /// trip, for keys that must land within a short time).
    pub async fn press_all(&self, keys: &[char]) {
        let mut actions = KeyActions::new("keyboard".into());
        for &key in keys {
            actions = actions
                .then(KeyAction::Down { value: key })
                .then(KeyAction::Up { value: key });
        }
        self.bounded(
            &format!("press {keys:?}"),
            self.client().perform_actions(actions),
        )
        .await;
    }

    /// Screenshots show painted frames, which trail the DOM a little (software rendering
    /// under Xvfb): wait for two frames and for the CSS transitions (≤ 200 ms) to end.
    pub async fn settle_paint(&self) {
        let script = "const done = arguments[arguments.length - 1]; \
            requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 250)));";
        self.bounded("paint", self.client().execute_async(script, vec![]))
            .await;
    }

    pub async fn screenshot(&self, file: &Path) {
        self.settle_paint().await;
        let png = self.bounded("screenshot", self.client().screenshot()).await;
        std::fs::write(file, png).expect("write screenshot");
    }

    /// Ends the session (WebKitWebDriver stops the app), then stops the app and
    /// tauri-driver with SIGTERM and a bounded wait, SIGKILL for what is left.
    pub async fn finish(mut self) {
        if let Some(client) = self.client.take() {
            // Bounded: whatever happens to the session, the processes are stopped below.
            let _ = tokio::time::timeout(STOP_TIMEOUT, client.close()).await;
        }
        signal(self.app_pid, "TERM");
        signal(Some(self.driver_pid), "TERM");
        if tokio::time::timeout(STOP_TIMEOUT, self.driver.wait())
            .await
            .is_err()
        {
            eprintln!("tauri-driver did not exit within {STOP_TIMEOUT:?} of SIGTERM: killed");
        }
        signal(self.app_pid.take(), "KILL");
        signal(Some(self.driver_pid), "KILL");
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A failed test never reaches finish(): kill what it started (tauri-driver's
        // group: WebKitWebDriver too, which a killed tauri-driver would leave running).
        signal(self.app_pid.take(), "KILL");
        signal_group(self.driver_pid, "KILL");
    }
}

/// Why a driver start ended before its session started.
enum StartFailure {
    /// A driver could not listen on its port: which.
    Taken(String),
    /// tauri-driver exited for another reason.
    Exited(std::process::ExitStatus),
}

/// The text of a captured log.
fn locked(log: &Arc<Mutex<String>>) -> String {
    log.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Waits until a driver says it cannot listen on its port (tauri-driver on its stdout,
/// `said`, then exits; WebKitWebDriver on the shared stderr, `log`, and exits while
/// tauri-driver stays) or tauri-driver exits; pending while the start goes on.
async fn start_failure(
    driver: &mut Child,
    (said, mut said_lines): crate::real_app::CapturedLog,
    (log, mut log_lines): crate::real_app::CapturedLog,
    (port, native_port): (u16, u16),
) -> StartFailure {
    let taken = || {
        if locked(&said).contains("can not listen to address") {
            Some(format!("tauri-driver could not listen on port {port}"))
        } else if locked(&log).contains("Unable to listen for HTTP server") {
            Some(format!(
                "WebKitWebDriver could not listen on port {native_port}"
            ))
        } else {
            None
        }
    };
    let mut log_open = true;
    loop {
        if let Some(what) = taken() {
            return StartFailure::Taken(what);
        }
        tokio::select! {
            status = driver.wait() => {
                // Its last words are read before they are looked at: to the end of its
                // stdout (the capture then drops its sender), bounded.
                let _ = tokio::time::timeout(STOP_TIMEOUT, async {
                    while said_lines.changed().await.is_ok() {}
                })
                .await;
                return match (taken(), status) {
                    (Some(what), _) => StartFailure::Taken(what),
                    (None, Ok(status)) => StartFailure::Exited(status),
                    (None, Err(e)) => panic!("waiting for tauri-driver: {e}"),
                };
            }
            line = log_lines.changed(), if log_open => log_open = line.is_ok(),
        }
    }
}

/// A WebDriver session through the driver at `url` (tauri-driver, chromedriver). The first connect races
/// tauri-driver's start (it has no ready signal): retried, each attempt and the whole
/// within [`CONNECT_TIMEOUT`]; `log` is for the failure message.
pub(crate) async fn connect(
    url: &str,
    capabilities: serde_json::Map<String, serde_json::Value>,
    log: &Arc<Mutex<String>>,
) -> Client {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let attempt = tokio::time::timeout_at(
            deadline,
            ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(url),
        )
        .await;
        match attempt {
            Ok(Ok(client)) => return client,
            Ok(Err(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => panic!(
                "no WebDriver session within {CONNECT_TIMEOUT:?}: {e}\n{}",
                locked(log)
            ),
            Err(_) => panic!(
                "WebDriver session start: no answer within {CONNECT_TIMEOUT:?}\n{}",
                locked(log)
            ),
        }
    }
}

/// Sends `name` to the process group `pgid` (a tauri-driver started in its own group, and
/// what it started).
pub(crate) fn signal_group(pgid: u32, name: &str) {
    signal(Some(pgid), name);
    let _ = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg("--")
        .arg(format!("-{pgid}"))
        .stderr(Stdio::null())
        .status();
}

/// Sends `name` to a process this test started (directly or through tauri-driver).
fn signal(pid: Option<u32>, name: &str) {
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .stderr(Stdio::null())
            .status();
    }
}
