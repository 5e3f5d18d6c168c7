//! The prompt dialog of the real app, driven like a person would: the real app binary
//! under tauri-driver (WebKitWebDriver) on the test's X display, real landstrip 0.19.2 runs
//! whose syscalls it holds, clicks and key presses through WebDriver, and the outcome read
//! from disk (the sandboxed program's file, the sandbox.json files) and from the program's
//! exit. Nothing is mocked.
//!
//! The app is a tray app with no window until a prompt arrives, but WebKitWebDriver needs
//! a webview to attach its session to. tauri-driver starts WebKitWebDriver with
//! `TAURI_WEBVIEW_AUTOMATION=true`, and the app it launches inherits that: the app then
//! creates its (hidden) prompt window at start and keeps it (see src-tauri/src/app/dialog.rs),
//! which is the webview the session drives. Each test has its own tauri-driver on its own
//! ports, and its own home, XDG directories and project; tauri-driver's environment carries
//! them to the app.
//!
//! `cargo test -p landstrip-tray-tests --test dialog -- --ignored screenshots` writes the
//! dialog screenshots under docs/ (see scripts/dialog-screenshots.sh).

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use landstrip_tray_core::discovery::{DiscoveryDir, ReadOutcome};
use landstrip_tray_tests::{
    finish, launch_landstrip, Finished, Landstrip, EVENT_TIMEOUT, PYTHON, WRITE,
};
use notify::Watcher;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How long a DOM state may take to appear (a bound for WebDriver waits, not a sleep).
const DOM_TIMEOUT: Duration = Duration::from_secs(20);

/// How long one WebDriver command may take (a hung command fails the test, naming itself).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the first connection to tauri-driver is retried while it starts listening.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// `<target dir>/debug/landstrip-tray`, as tests/tests/app.rs finds it.
fn app_binary() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => workspace.join(dir),
        None => workspace.join("target"),
    };
    let bin = target.join("debug").join("landstrip-tray");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build -p landstrip-tray` first (these tests run the real app)",
        bin.display()
    );
    std::fs::canonicalize(&bin).expect("canonical app path")
}

/// tauri-driver from PATH or `~/.cargo/bin` (scripts/setup.sh --test installs it).
fn tauri_driver() -> PathBuf {
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

/// A free TCP port on 127.0.0.1 (bound and released; each test takes its own).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

/// One test's private directories.
struct World {
    root: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
    project: PathBuf,
    /// Outside home and project: writes there need approval.
    outside: PathBuf,
    runtime: PathBuf,
}

impl World {
    fn new() -> Self {
        Self::with_project("project")
    }

    /// A world whose project is `base/<project>` (`home/src/app` puts it in the home).
    fn with_project(project: &str) -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical tempdir");
        let runtime = base.join("runtime");
        DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .expect("mkdir runtime");
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700))
            .expect("chmod runtime");
        for dir in [
            "home", "project", "outside", "config", "data", "cache", "state",
        ] {
            std::fs::create_dir(base.join(dir)).expect("mkdir");
        }
        std::fs::create_dir_all(base.join(project)).expect("mkdir project");
        Self {
            home: base.join("home"),
            project: base.join(project),
            outside: base.join("outside"),
            runtime,
            base,
            root,
        }
    }

    /// The app's discovered port for the project.
    fn port(&self) -> u16 {
        match DiscoveryDir::new(self.runtime.clone()).read(&self.project) {
            ReadOutcome::Record(record) => record.port,
            other => panic!("the app published no discovery record: {other:?}"),
        }
    }

    fn app_pid(&self) -> Option<u32> {
        match DiscoveryDir::new(self.runtime.clone()).read(&self.project) {
            ReadOutcome::Record(record) => Some(record.pid),
            _ => None,
        }
    }

    /// Runs the Python WRITE program on `target` under landstrip 0.19.2.
    fn write(&self, target: &Path) -> Child {
        launch_landstrip(
            Landstrip::V0_19,
            self.root.path(),
            &self.project,
            &self.home,
            self.port(),
            None,
            &[PYTHON, "-c", WRITE, path_str(target)],
        )
    }

    /// Runs a Python program under landstrip 0.19.2 with an opencode session hello.
    fn run(&self, session: Option<&str>, program: &str, arg: &str) -> Child {
        launch_landstrip(
            Landstrip::V0_19,
            self.root.path(),
            &self.project,
            &self.home,
            self.port(),
            session,
            &[PYTHON, "-c", program, arg],
        )
    }

    /// The first activity log line matching `wanted`, once the app has written it (the
    /// log is written off the hot path, a moment after the answer).
    async fn activity_line(&self, wanted: impl Fn(&str) -> bool) -> String {
        let dir = self.base.join("data/landstrip-tray");
        let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = tx.send(());
        })
        .expect("inotify watcher");
        watcher
            .watch(&dir, notify::RecursiveMode::NonRecursive)
            .expect("watch the data dir");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            // Watch first, then look: a write in between is seen by the look.
            let log = std::fs::read_to_string(dir.join("activity.jsonl")).unwrap_or_default();
            if let Some(line) = log.lines().find(|l| wanted(l)) {
                return line.to_owned();
            }
            match tokio::time::timeout_at(deadline, changes.recv()).await {
                Ok(Some(())) => {}
                _ => panic!("no such activity line within {EVENT_TIMEOUT:?}:\n{log}"),
            }
        }
    }

    fn global_policy(&self) -> PathBuf {
        self.home.join(".config/opencode/sandbox.json")
    }

    fn project_policy(&self) -> PathBuf {
        self.project.join(".opencode/sandbox.json")
    }
}

/// The entries of `filesystem.allowWrite` in a sandbox.json file (empty if it is missing).
fn allow_write(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let json: serde_json::Value = serde_json::from_str(&text).expect("sandbox.json parses");
    json["filesystem"]["allowWrite"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|v| v.as_str().expect("string entry").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The real app under tauri-driver, and a WebDriver session on its dialog page.
struct Session {
    driver: Child,
    driver_pid: u32,
    client: Option<Client>,
    log: Arc<Mutex<String>>,
    app_pid: Option<u32>,
}

impl Session {
    /// Starts tauri-driver with the world's environment and a session running the app.
    async fn start(world: &World, extra_env: &[(&str, &str)]) -> Self {
        let (port, native_port) = (free_port(), free_port());
        let base = &world.base;
        let mut cmd = Command::new(tauri_driver());
        cmd.arg("--port")
            .arg(port.to_string())
            .arg("--native-port")
            .arg(native_port.to_string())
            .env("HOME", &world.home)
            .env("XDG_CONFIG_HOME", base.join("config"))
            .env("XDG_DATA_HOME", base.join("data"))
            .env("XDG_CACHE_HOME", base.join("cache"))
            .env("XDG_STATE_HOME", base.join("state"))
            .env("XDG_RUNTIME_DIR", &world.runtime)
            .env("RUST_LOG", "info,landstrip_tray=debug")
            .env("NO_COLOR", "1")
            .current_dir(&world.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (key, value) in extra_env {
            cmd.env(key, value);
        }
        let mut driver = cmd.spawn().expect("spawn tauri-driver");
        let driver_pid = driver.id().expect("tauri-driver pid");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = driver.stderr.take().expect("stderr");
        let sink = log.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut log = sink.lock().unwrap_or_else(PoisonError::into_inner);
                log.push_str(&line);
                log.push('\n');
            }
        });

        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "tauri:options".into(),
            serde_json::json!({
                "application": app_binary(),
                "args": ["--project", world.project],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        // The first connect races tauri-driver's start: retried, within a bound.
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = driver.try_wait() {
                        panic!("tauri-driver exited ({status}): {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!(
                    "no WebDriver session within {CONNECT_TIMEOUT:?}: {e}\n{}",
                    log.lock().unwrap_or_else(PoisonError::into_inner)
                ),
            }
        };
        let mut session = Self {
            driver,
            driver_pid,
            client: Some(client),
            log,
            app_pid: None,
        };
        // The page has loaded and has nothing to show: the app is up and (the dialog starts
        // after the project is served) its discovery file is published.
        session.wait_css("body[data-state='empty']").await;
        session.app_pid = world.app_pid();
        assert!(
            session.app_pid.is_some(),
            "no discovery record once the page is up; log:\n{}",
            session.log()
        );
        session
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("session open")
    }

    fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits (bounded) until an element matches `css`.
    async fn wait_css(&self, css: &str) -> fantoccini::elements::Element {
        eprintln!("webdriver: wait for {css}");
        let waited = tokio::time::timeout(
            DOM_TIMEOUT + COMMAND_TIMEOUT,
            self.client()
                .wait()
                .at_most(DOM_TIMEOUT)
                .for_element(Locator::Css(css)),
        )
        .await;
        let Ok(found) = waited else {
            panic!(
                "waiting for {css:?}: WebDriver stopped answering\nlog:\n{}",
                self.log()
            )
        };
        match found {
            Ok(element) => element,
            Err(e) => {
                let body = self.attributes().await;
                panic!(
                    "no element matches {css:?} within {DOM_TIMEOUT:?}: {e}\nbody: {body}\nlog:\n{}",
                    self.log()
                )
            }
        }
    }

    /// The body's data attributes, for failure messages.
    async fn attributes(&self) -> String {
        let script = "return JSON.stringify(Object.assign({}, document.body.dataset))";
        match tokio::time::timeout(COMMAND_TIMEOUT, self.client().execute(script, vec![])).await {
            Ok(Ok(value)) => value.as_str().unwrap_or_default().to_owned(),
            Ok(Err(e)) => format!("(unavailable: {e})"),
            Err(_) => "(unavailable: no answer)".to_owned(),
        }
    }

    /// Waits for a prompt other than `previous` to be on screen and accepting input;
    /// returns its id.
    async fn wait_prompt(&self, previous: Option<&str>) -> String {
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

    /// Runs one WebDriver command within [`COMMAND_TIMEOUT`].
    async fn bounded<T, E: std::fmt::Debug>(
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

    async fn text(&self, css: &str) -> String {
        let element = self.wait_css(css).await;
        self.bounded(&format!("text of {css}"), element.text())
            .await
    }

    async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.wait_css(css).await;
        self.bounded(&format!("{name} of {css}"), element.attr(name))
            .await
    }

    async fn enabled(&self, css: &str) -> bool {
        let element = self.wait_css(css).await;
        self.bounded(&format!("{css} enabled"), element.is_enabled())
            .await
    }

    async fn displayed(&self, css: &str) -> bool {
        let element = self.wait_css(css).await;
        self.bounded(&format!("{css} displayed"), element.is_displayed())
            .await
    }

    /// An attribute of the element that has the keyboard focus.
    async fn focused(&self, name: &str) -> Option<String> {
        let element = self
            .bounded("active element", self.client().active_element())
            .await;
        self.bounded(&format!("{name} of the active element"), element.attr(name))
            .await
    }

    async fn click(&self, css: &str) {
        let element = self.wait_css(css).await;
        self.bounded(&format!("click {css}"), element.click()).await;
    }

    async fn choose(&self, choice: &str) {
        self.click(&format!("#actions-main button[data-choice='{choice}']"))
            .await;
    }

    /// Presses and releases one key (a character or a `Key` code point).
    async fn press(&self, key: char) {
        let actions = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
        self.bounded(
            &format!("press {:?}", key),
            self.client().perform_actions(actions),
        )
        .await;
    }

    /// Screenshots show painted frames, which trail the DOM a little (software rendering
    /// under Xvfb): wait for two frames and for the CSS transitions (≤ 200 ms) to end.
    async fn settle_paint(&self) {
        let script = "const done = arguments[arguments.length - 1]; \
            requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 250)));";
        self.bounded("paint", self.client().execute_async(script, vec![]))
            .await;
    }

    async fn screenshot(&self, file: &Path) {
        self.settle_paint().await;
        let png = self.bounded("screenshot", self.client().screenshot()).await;
        std::fs::write(file, png).expect("write screenshot");
    }

    /// Ends the session (WebKitWebDriver stops the app) and stops tauri-driver with SIGTERM.
    async fn finish(mut self) {
        if let Some(client) = self.client.take() {
            // Bounded: whatever happens to the session, the processes are stopped below.
            let _ = tokio::time::timeout(Duration::from_secs(10), client.close()).await;
        }
        self.stop().await;
    }

    async fn stop(&mut self) {
        terminate(self.app_pid.take());
        terminate(Some(self.driver_pid));
        let _ = tokio::time::timeout(Duration::from_secs(10), self.driver.wait()).await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A failed test never reaches finish(): stop what it started.
        terminate(self.app_pid.take());
        terminate(Some(self.driver_pid));
    }
}

/// SIGTERM to a process this test started (directly or through tauri-driver).
fn terminate(pid: Option<u32>) {
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether a launched program is still held (has not exited).
fn held(child: &mut Child) -> bool {
    child.try_wait().expect("try_wait").is_none()
}

fn assert_allowed(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(std::fs::read_to_string(target).expect("written"), "hello");
}

fn assert_denied(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "the denied write went through");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_writes_the_file_and_the_dialog_shows_the_request() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("once.txt");
    let mut child = world.write(&target);
    session.wait_prompt(None).await;
    assert_eq!(session.text("#subject-text").await, path_str(&target));
    assert_eq!(session.text("#title").await, "Allow write access?");
    assert_eq!(session.text("#reason").await, "not in allowWrite");
    assert!(session.text("#program").await.contains("python3"));
    assert!(held(&mut child), "answered before anyone clicked");

    session.choose("once").await;
    assert_allowed(&finish(child).await, &target);
    // Nothing else waits: the page goes back to empty.
    session.wait_css("body[data-state='empty']").await;
    // The strict CSP in tauri.conf.json holds: nothing on the page was refused.
    assert_eq!(session.attr("body", "data-csp-violations").await, None);
    assert!(allow_write(&world.project_policy()).is_empty());
    assert!(allow_write(&world.global_policy()).is_empty());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_fails_the_write_with_eacces() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("denied.txt");
    let child = world.write(&target);
    session.wait_prompt(None).await;
    session.choose("deny").await;
    assert_denied(&finish(child).await, &target);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_denies() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("escaped.txt");
    let child = world.write(&target);
    session.wait_prompt(None).await;
    session.press(Key::Escape.into()).await;
    assert_denied(&finish(child).await, &target);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_session_lets_a_later_write_under_the_scope_through_without_a_prompt() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("first.txt");
    let child = world.write(&first);
    session.wait_prompt(None).await;
    session.choose("session").await;
    assert_allowed(&finish(child).await, &first);

    // Under the same scope (the outside directory): nobody answers, yet it goes through.
    let second = world.outside.join("second.txt");
    assert_allowed(&finish(world.write(&second)).await, &second);
    let line = world.activity_line(|l| l.contains(path_str(&second))).await;
    assert!(
        line.contains("\"by\":\"session_grant\""),
        "the second write was not settled by the session grant: {line}"
    );
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_project_adds_the_previewed_entry_to_the_project_file() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("project.txt");
    let mut child = world.write(&target);
    session.wait_prompt(None).await;
    session.choose("project").await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    assert_eq!(
        session.attr("#preview-file", "title").await.as_deref(),
        Some(path_str(&world.project_policy()))
    );
    let added = session.text("#preview-diff .add").await;
    let entry: String = serde_json::from_str(added.trim().trim_start_matches('+').trim())
        .unwrap_or_else(|e| panic!("the previewed entry {added:?}: {e}"));
    // The suggested scope outside home and project is the containing directory.
    assert_eq!(entry, path_str(&world.outside));
    assert_eq!(
        session.text("#preview-diff .key").await,
        "filesystem.allowWrite"
    );
    assert!(held(&mut child), "the preview must not answer");
    assert!(
        !world.project_policy().exists(),
        "the preview must not write"
    );

    session.click("#confirm").await;
    assert_allowed(&finish(child).await, &target);
    assert_eq!(allow_write(&world.project_policy()), vec![entry]);
    assert!(allow_write(&world.global_policy()).is_empty());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_globally_adds_the_chosen_scope_to_the_global_file() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("global.txt");
    let child = world.write(&target);
    session.wait_prompt(None).await;
    session.press('g').await;
    session
        .wait_css("body[data-step='scope'][data-armed='true']")
        .await;
    // Pick the exact path instead of the suggested directory.
    session.click("#scope-exact").await;
    let added = session.text("#preview-diff .add").await;
    assert!(added.contains(path_str(&target)), "{added:?}");
    assert_eq!(
        session.attr("#preview-file", "title").await.as_deref(),
        Some(path_str(&world.global_policy()))
    );

    session.press(Key::Enter.into()).await;
    assert_allowed(&finish(child).await, &target);
    assert_eq!(
        allow_write(&world.global_policy()),
        vec![path_str(&target).to_owned()]
    );
    assert!(!world.project_policy().exists());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_pressed_as_the_dialog_appears_is_ignored_and_a_later_one_works() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("delayed.txt");
    let mut child = world.write(&target);
    // As soon as the prompt is on screen, while the input delay runs.
    session
        .wait_css("body[data-state='prompt'][data-armed='false']")
        .await;
    session.press('o').await;
    session.press(Key::Enter.into()).await;
    let count: u32 = session
        .attr("body[data-swallowed]", "data-swallowed")
        .await
        .expect("count")
        .parse()
        .expect("a number");
    assert!(count >= 2, "{count} keys swallowed");
    // The delay ends; the prompt is still there, still held.
    session.wait_prompt(None).await;
    assert!(
        held(&mut child),
        "a key pressed during the input delay answered"
    );
    assert!(!target.exists());

    session.press('o').await;
    assert_allowed(&finish(child).await, &target);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_shows_1_of_2_and_moves_on_to_the_second() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("a/first.txt");
    let second = world.outside.join("b/second.txt");
    for dir in [&first, &second] {
        std::fs::create_dir_all(dir.parent().expect("parent")).expect("mkdir");
    }
    let first_child = world.write(&first);
    let first_id = session.wait_prompt(None).await;
    let mut second_child = world.write(&second);
    // The second one waits behind the first, which stays on screen.
    assert_eq!(session.text("#queue:not([hidden])").await, "1 of 2");
    assert_eq!(session.text("#subject-text").await, path_str(&first));
    // Different directories: no offer to answer both at once.
    assert!(!session.displayed("#bulk").await);

    session.choose("once").await;
    assert_allowed(&finish(first_child).await, &first);
    let second_id = session.wait_prompt(Some(&first_id)).await;
    assert_ne!(first_id, second_id);
    assert_eq!(session.text("#subject-text").await, path_str(&second));
    session.wait_css("#queue[hidden]").await;
    assert!(held(&mut second_child));
    session.choose("once").await;
    assert_allowed(&finish(second_child).await, &second);
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_under_one_scope_are_answered_at_once() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let first = world.outside.join("one.txt");
    let second = world.outside.join("two.txt");
    let first_child = world.write(&first);
    session.wait_prompt(None).await;
    let second_child = world.write(&second);
    let label = session.text("#bulk:not([hidden]) .label").await;
    let outside = path_str(&world.outside);
    assert_eq!(
        label,
        format!("Allow all 2 pending under {outside} for this session")
    );
    session.click("#bulk").await;
    assert_allowed(&finish(first_child).await, &first);
    assert_allowed(&finish(second_child).await, &second);
    session.wait_css("body[data-state='empty']").await;
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_whose_run_ends_disappears_with_a_note() {
    let world = World::new();
    let session = Session::start(&world, &[]).await;
    let target = world.outside.join("withdrawn.txt");
    let mut child = world.write(&target);
    session.wait_prompt(None).await;
    child.kill().await.expect("kill the run");
    let notice = session.text("#notice:not([hidden])").await;
    assert!(notice.contains("withdrawn"), "{notice:?}");
    session.wait_css("body[data-state='empty']").await;
    assert!(!target.exists());
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_path_defaults_to_deny_and_needs_a_second_confirmation() {
    let world = World::new();
    std::fs::create_dir_all(world.home.join(".ssh")).expect("mkdir .ssh");
    let session = Session::start(&world, &[]).await;
    let target = world.home.join(".ssh/config");

    // Enter answers the default, which is Deny.
    let child = world.write(&target);
    session.wait_prompt(None).await;
    session.wait_css("body[data-sensitive='true']").await;
    let warning = session.text("#sensitive").await;
    assert!(warning.contains("SSH keys"), "{warning:?}");
    assert_eq!(
        session.focused("data-choice").await.as_deref(),
        Some("deny")
    );
    session.press(Key::Enter.into()).await;
    assert_denied(&finish(child).await, &target);

    // "For session" asks again; only the explicit confirmation allows.
    let mut child = world.write(&target);
    let id = session.wait_prompt(None).await;
    session.choose("session").await;
    assert!(
        !session
            .enabled("body[data-step='confirm'][data-armed='true'] #confirm")
            .await,
        "confirmable before the box is ticked"
    );
    assert_eq!(
        session.focused("id").await.as_deref(),
        Some("back"),
        "the safe choice has the focus"
    );
    assert!(held(&mut child), "answered before the confirmation");
    assert_eq!(session.attr("body", "data-prompt-id").await, Some(id));
    session.click("#confirm-check").await;
    session.click("#confirm").await;
    assert_allowed(&finish(child).await, &target);
    session.finish().await;
}

/// Not a test of behaviour: regenerates docs/dialog-*.png (scripts/dialog-screenshots.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots; run by scripts/dialog-screenshots.sh"]
async fn screenshots() {
    let out = std::env::var_os("LANDSTRIP_TRAY_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    std::fs::create_dir_all(&out).expect("mkdir screenshots");
    for (theme, env) in [("light", None), ("dark", Some("Adwaita:dark"))] {
        let env: Vec<(&str, &str)> = env.map(|t| ("GTK_THEME", t)).into_iter().collect();
        // The project in the home directory, as it usually is: paths read as ~/….
        let world = World::with_project("home/src/webapp");
        std::fs::create_dir_all(world.home.join(".ssh")).expect("mkdir .ssh");
        std::fs::create_dir_all(world.home.join("notes")).expect("mkdir notes");
        std::fs::create_dir_all(world.home.join(".cache/pip")).expect("mkdir");
        std::fs::write(world.home.join(".cache/pip/selfcheck.json"), "{}").expect("write");
        std::fs::create_dir_all(world.home.join(".config/opencode")).expect("mkdir");
        // Reads of the home directory ask (the plugin's defaults deny /home; this home is
        // elsewhere).
        std::fs::write(
            world.global_policy(),
            "{\n  \"filesystem\": {\n    \"denyRead\": [\"~\"],\n    \"allowWrite\": [\"~/.cache/opencode\"]\n  }\n}\n",
        )
        .expect("global policy");
        let session = Session::start(&world, &env).await;
        let session_id = Some("ses_4f2a9c1e7b");
        let shots: [(&str, &str, PathBuf); 4] = [
            ("write", WRITE, world.home.join("notes/todo.txt")),
            ("read", READ, world.home.join(".cache/pip/selfcheck.json")),
            ("network", CONNECT, PathBuf::from("127.0.0.1")),
            ("sensitive", WRITE, world.home.join(".ssh/config")),
        ];
        let mut previous = None;
        for (name, program, arg) in shots {
            let child = world.run(session_id, program, path_str(&arg));
            let id = session.wait_prompt(previous.as_deref()).await;
            session
                .screenshot(&out.join(format!("dialog-{name}-{theme}.png")))
                .await;
            // The second steps: the preview of a project grant, the sensitive confirmation.
            let second = match name {
                "write" => Some(("project", "scope", "project")),
                "sensitive" => Some(("session", "confirm", "sensitive-confirm")),
                _ => None,
            };
            if let Some((choice, step, file)) = second {
                session.choose(choice).await;
                session
                    .wait_css(&format!("body[data-step='{step}'][data-armed='true']"))
                    .await;
                session
                    .screenshot(&out.join(format!("dialog-{file}-{theme}.png")))
                    .await;
                session.click("#back").await;
            }
            session.choose("deny").await;
            finish(child).await;
            previous = Some(id);
        }
        session.finish().await;
    }
}

/// Reads argv[1]; prints ok, or EACCES and exits 13.
const READ: &str = r#"
import sys
try:
    open(sys.argv[1]).read()
    print("ok")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
"#;

/// Connects to argv[1]:9 (discard); prints ok, or EACCES and exits 13.
const CONNECT: &str = r#"
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), timeout=5).close()
    print("ok")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
except OSError as e:
    print(repr(e))
"#;
