//! The real app binary (`landstrip-tray`, built by `cargo build -p landstrip-tray`) under
//! the test's X display, each test with its own home, config, data and runtime
//! directories: it publishes and withdraws its discovery file, holds what a real landstrip
//! run asks while nobody answers, denies it all when told to quit by a signal, and behaves
//! around stale and live foreign discovery files. Nothing here is mocked.

use std::fs::DirBuilder;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use landstrip_tray_core::discovery::{DiscoveryDir, DiscoveryRecord, ReadOutcome};
use landstrip_tray_tests::{finish, launch_landstrip, Landstrip, EVENT_TIMEOUT, PYTHON, WRITE};
use notify::Watcher;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// How long the app may take to exit once signalled.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the app may take to put its file back once a conflicting owner is gone.
const REPUBLISH_TIMEOUT: Duration = Duration::from_secs(5);

/// `<target dir>/debug/landstrip-tray`, the target dir being `$CARGO_TARGET_DIR` or the
/// workspace's `target`.
fn app_binary() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => workspace.join(dir), // an absolute dir replaces the workspace prefix
        None => workspace.join("target"),
    };
    let bin = target.join("debug").join("landstrip-tray");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build -p landstrip-tray` first (these tests run the real app)",
        bin.display()
    );
    bin
}

fn display() -> std::ffi::OsString {
    std::env::var_os("DISPLAY")
        .filter(|d| !d.is_empty())
        .expect(
            "DISPLAY is not set: the app needs an X display; run these tests under \
             `xvfb-run -a dbus-run-session -- cargo test -p landstrip-tray-tests --test app`",
        )
}

/// One test's private directories.
struct World {
    /// Holds everything below; removed at the end.
    root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    /// Outside home and project: writes there need approval.
    outside: PathBuf,
    /// `XDG_RUNTIME_DIR` (mode 0700).
    runtime: PathBuf,
    discovery: DiscoveryDir,
}

impl World {
    fn new() -> Self {
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
        Self {
            home: base.join("home"),
            project: base.join("project"),
            outside: base.join("outside"),
            discovery: DiscoveryDir::new(runtime.clone()),
            runtime,
            root,
        }
    }

    fn base(&self) -> PathBuf {
        self.runtime.parent().expect("base").to_path_buf()
    }

    /// The project's discovery file.
    fn discovery_file(&self) -> PathBuf {
        self.discovery.file_for(&self.project)
    }

    /// The project's discovery record, if there is a valid one.
    fn record(&self) -> Option<DiscoveryRecord> {
        match self.discovery.read(&self.project) {
            ReadOutcome::Record(record) => Some(record),
            ReadOutcome::Missing | ReadOutcome::Malformed => None,
        }
    }

    /// Plants a discovery file for the project, as another presenter would have written it.
    fn plant(&self, record: DiscoveryRecord) -> Vec<u8> {
        DirBuilder::new()
            .mode(0o700)
            .create(self.discovery.path())
            .expect("mkdir discovery");
        let bytes = record.to_json().into_bytes();
        std::fs::write(self.discovery_file(), &bytes).expect("plant discovery file");
        bytes
    }

    /// Watches the runtime directory (and the discovery directory once it exists).
    fn watch(&self) -> DirWatch {
        DirWatch::new(&self.runtime, self.discovery.path())
    }

    /// Starts the real app with `--project` and this world's environment.
    fn start_app(&self) -> App {
        let base = self.base();
        let mut child = Command::new(app_binary())
            .arg("--project")
            .arg(&self.project)
            .env("DISPLAY", display())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", base.join("config"))
            .env("XDG_DATA_HOME", base.join("data"))
            .env("XDG_CACHE_HOME", base.join("cache"))
            .env("XDG_STATE_HOME", base.join("state"))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn landstrip-tray");
        let pid = child.id().expect("pid");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (lines_tx, lines) = watch::channel(0usize);
        let sink = log.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let mut log = sink.lock().unwrap_or_else(PoisonError::into_inner);
                log.push_str(&line);
                log.push('\n');
                drop(log);
                lines_tx.send_modify(|n| *n += 1);
            }
        });
        App {
            child,
            pid,
            log,
            lines,
        }
    }
}

/// The running app: its process (killed if the test ends early) and its stderr so far.
struct App {
    child: Child,
    pid: u32,
    log: Arc<Mutex<String>>,
    lines: watch::Receiver<usize>,
}

impl App {
    fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Fails the test if the app has exited.
    fn assert_running(&mut self) {
        let status = self.child.try_wait().expect("try_wait");
        assert!(
            status.is_none(),
            "the app exited ({status:?}); its log:\n{}",
            self.log()
        );
    }

    /// Waits until the app's stderr contains `needle`.
    async fn wait_for_log(&mut self, needle: &str) {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            if self.log().contains(needle) {
                return;
            }
            match tokio::time::timeout_at(deadline, self.lines.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => panic!(
                    "the app closed stderr without logging {needle:?}; its log:\n{}",
                    self.log()
                ),
                Err(_) => panic!(
                    "the app did not log {needle:?} within {EVENT_TIMEOUT:?}; its log:\n{}",
                    self.log()
                ),
            }
        }
    }

    /// Sends `signal` (TERM, INT) and waits for the app to exit; returns its exit code.
    async fn signal_and_wait(&mut self, signal: &str) -> Option<i32> {
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid.to_string())
            .status()
            .await
            .expect("run kill");
        assert!(sent.success(), "kill -{signal} {} failed", self.pid);
        let status = tokio::time::timeout(EXIT_TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the app did not exit within {EXIT_TIMEOUT:?} of SIG{signal}; its log:\n{}",
                    self.log()
                )
            })
            .expect("wait");
        status.code()
    }
}

/// inotify on the runtime directory and, once it exists, the discovery directory: each
/// event re-evaluates a condition, so the tests await changes instead of polling.
struct DirWatch {
    watcher: notify::RecommendedWatcher,
    events: mpsc::UnboundedReceiver<()>,
    discovery: PathBuf,
    watching_discovery: bool,
}

impl DirWatch {
    fn new(runtime: &Path, discovery: &Path) -> Self {
        let (tx, events) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = tx.send(());
        })
        .expect("inotify watcher");
        watcher
            .watch(runtime, notify::RecursiveMode::NonRecursive)
            .expect("watch the runtime dir");
        Self {
            watcher,
            events,
            discovery: discovery.to_path_buf(),
            watching_discovery: false,
        }
    }

    /// Evaluates `check` now and after every change until it yields, the app exits (a
    /// failure), or `within` passes (a failure naming `what`).
    async fn until<T>(
        &mut self,
        app: &mut App,
        within: Duration,
        what: &str,
        mut check: impl FnMut() -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + within;
        loop {
            // Watch first, then look: a file written in between is seen by the check.
            if !self.watching_discovery && self.discovery.is_dir() {
                self.watcher
                    .watch(&self.discovery, notify::RecursiveMode::NonRecursive)
                    .expect("watch the discovery dir");
                self.watching_discovery = true;
            }
            if let Some(found) = check() {
                return found;
            }
            tokio::select! {
                event = tokio::time::timeout_at(deadline, self.events.recv()) => match event {
                    Ok(Some(())) => {}
                    Ok(None) => panic!("the inotify watcher stopped"),
                    Err(_) => panic!("{what}: not within {within:?}; the app's log:\n{}", app.log()),
                },
                status = app.child.wait() => panic!(
                    "the app exited ({status:?}) while waiting for: {what}; its log:\n{}",
                    app.log()
                ),
            }
        }
    }
}

/// Waits for the app's own record for the project and checks its form: exactly
/// `{"port":…,"pid":…,"ts":…}` and a newline, naming the app's pid and a port that
/// accepts TCP. Returns the port.
async fn await_own_record(
    world: &World,
    watch: &mut DirWatch,
    app: &mut App,
    within: Duration,
) -> u16 {
    let pid = app.pid;
    let record = watch
        .until(app, within, "the app's discovery file", || {
            world.record().filter(|r| r.pid == pid)
        })
        .await;
    let text = std::fs::read_to_string(world.discovery_file()).expect("read discovery file");
    assert!(text.ends_with('\n'), "no trailing newline: {text:?}");
    let value: serde_json::Value = serde_json::from_str(&text).expect("discovery JSON");
    let keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["port", "pid", "ts"], "{text}");
    assert_eq!(value["pid"], app.pid, "{text}");
    assert!(value["ts"].as_u64().is_some_and(|ts| ts > 0), "{text}");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, record.port));
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap_or_else(|e| {
        panic!(
            "the discovered port {} does not accept TCP: {e}",
            record.port
        )
    });
    record.port
}

/// A byte pump between landstrip and the app that reports the first query line landstrip
/// sends and records every byte the app sends back.
struct Tap {
    port: u16,
    query: oneshot::Receiver<serde_json::Value>,
    replies: Arc<Mutex<Vec<u8>>>,
}

impl Tap {
    fn replies(&self) -> String {
        String::from_utf8_lossy(&self.replies.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }
}

async fn tap(upstream: u16) -> Tap {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (query_tx, query) = oneshot::channel();
    let replies = Arc::new(Mutex::new(Vec::new()));
    let record = replies.clone();
    tokio::spawn(async move {
        let (down, _) = listener.accept().await.expect("accept");
        let up = TcpStream::connect(("127.0.0.1", upstream))
            .await
            .expect("connect to the app");
        let (mut down_r, mut down_w) = down.into_split();
        let (mut up_r, mut up_w) = up.into_split();
        let to_app = async move {
            let mut query_tx = Some(query_tx);
            let mut pending = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = down_r.read(&mut buf).await {
                if up_w.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                if query_tx.is_none() {
                    continue;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let Ok(trap) = serde_json::from_slice::<serde_json::Value>(&line) else {
                        continue;
                    };
                    if trap["state"] == "query" {
                        if let Some(tx) = query_tx.take() {
                            let _ = tx.send(trap);
                        }
                        break;
                    }
                }
            }
            let _ = up_w.shutdown().await;
        };
        let to_landstrip = async move {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = up_r.read(&mut buf).await {
                // Recorded before landstrip can see it.
                record
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(&buf[..n]);
                if down_w.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
            let _ = down_w.shutdown().await;
        };
        tokio::join!(to_app, to_landstrip);
    });
    Tap {
        port,
        query,
        replies,
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

/// Publication, a held query nobody answers, then `signal`: the held write fails with
/// EACCES (the app answered deny), the app exits 0 and its discovery file is gone.
async fn held_query_is_denied_on(signal: &str) {
    let world = World::new();
    let mut watch = world.watch();
    let mut app = world.start_app();
    let port = await_own_record(&world, &mut watch, &mut app, EVENT_TIMEOUT).await;
    assert_eq!(
        std::fs::metadata(world.discovery.path())
            .expect("discovery dir")
            .permissions()
            .mode()
            & 0o777,
        0o700
    );

    let mut tap = tap(port).await;
    let target = world.outside.join("held.txt");
    let mut child = launch_landstrip(
        Landstrip::V0_19,
        world.root.path(),
        &world.project,
        &world.home,
        tap.port,
        None,
        &[PYTHON, "-c", WRITE, path_str(&target)],
    );
    let query = tokio::time::timeout(EVENT_TIMEOUT, &mut tap.query)
        .await
        .expect("landstrip sent no query within the bound")
        .expect("the tap closed before a query");
    assert_eq!(query["kind"], "filesystem", "{query}");
    assert_eq!(query["operation"], "write", "{query}");
    assert_eq!(query["path"], path_str(&target), "{query}");
    // Nobody is there to answer: the query stays held.
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the sandboxed program finished while its write should be held"
    );
    assert_eq!(tap.replies(), "", "the app answered before anyone could");
    app.assert_running();

    let code = app.signal_and_wait(signal).await;
    let log = app.log();
    assert_eq!(
        code,
        Some(0),
        "SIG{signal}: exit status; the app's log:\n{log}"
    );
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "the held write went through");
    let reply: serde_json::Value = serde_json::from_str(tap.replies().trim())
        .unwrap_or_else(|e| panic!("the app's answer {:?}: {e}", tap.replies()));
    assert_eq!(reply["query_id"], query["query_id"], "{reply}");
    assert_eq!(reply["action"], "deny", "{reply}");
    assert!(
        !world.discovery_file().exists(),
        "SIG{signal}: the discovery file was left behind; the app's log:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_denies_the_held_query_exits_0_and_withdraws_the_discovery_file() {
    held_query_is_denied_on("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_denies_the_held_query_exits_0_and_withdraws_the_discovery_file() {
    held_query_is_denied_on("INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_discovery_file_is_replaced_at_start() {
    let world = World::new();
    let dead_pid = {
        let mut exited = Command::new("true").spawn().expect("spawn true");
        let pid = exited.id().expect("pid");
        exited.wait().await.expect("wait");
        pid
    };
    let closed_port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind")
        .port();
    let stale = DiscoveryRecord {
        port: closed_port,
        pid: dead_pid,
        ts: 1,
    };
    world.plant(stale);
    assert_eq!(world.record(), Some(stale));

    let mut watch = world.watch();
    let mut app = world.start_app();
    let port = await_own_record(&world, &mut watch, &mut app, EVENT_TIMEOUT).await;
    assert_ne!(port, closed_port);
    app.assert_running();
    assert!(
        !app.log().contains("another presenter"),
        "a dead owner was reported as a conflict:\n{}",
        app.log()
    );
    assert_eq!(app.signal_and_wait("TERM").await, Some(0));
    assert!(!world.discovery_file().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_owners_file_is_kept_until_it_exits_then_the_app_publishes() {
    let world = World::new();
    let mut owner = Command::new("sleep")
        .arg("60")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sleep");
    let owner_pid = owner.id().expect("pid");
    let owner_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let owner_port = owner_listener.local_addr().expect("addr").port();
    let theirs = world.plant(DiscoveryRecord {
        port: owner_port,
        pid: owner_pid,
        ts: 1,
    });

    let mut watch = world.watch();
    let mut app = world.start_app();
    // Logged once the app has looked at the file and decided not to write it.
    app.wait_for_log(&format!(
        "another presenter (pid {owner_pid}, port {owner_port})"
    ))
    .await;
    assert_eq!(
        std::fs::read(world.discovery_file()).expect("their file"),
        theirs,
        "the app overwrote a live presenter's discovery file"
    );
    app.assert_running();

    // The owner goes away: its socket closes, then its process exits.
    drop(owner_listener);
    owner.kill().await.expect("kill sleep");
    let port = await_own_record(&world, &mut watch, &mut app, REPUBLISH_TIMEOUT).await;
    assert_ne!(port, owner_port);
    app.assert_running();

    assert_eq!(app.signal_and_wait("TERM").await, Some(0));
    assert!(!world.discovery_file().exists());
}
