//! Notifications from the real app binary, each test on a session bus of its own with
//! Debian's dbusmock notification daemon (`python3 -m dbusmock --template
//! notification_daemon`) and the real landstrip 0.19.2: what a prompt's notification says,
//! that its "allow" button lets the held write through, that it is withdrawn when the prompt
//! is settled elsewhere (the run ended, a timeout), that automatic answers make none, that a
//! server without actions gets no buttons, and that terminal denials are summarised quietly,
//! once per run, unless the settings turn that off.
//!
//! Every test awaits the mock's `MethodCalled` signals (or the program's exit) rather than
//! sleeping, and reads the calls back with `org.freedesktop.DBus.Mock.GetMethodCalls`.

use std::fs::DirBuilder;
use std::num::NonZeroUsize;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use futures_lite::StreamExt;
use landstrip_tray_core::discovery::{DiscoveryDir, ReadOutcome};
use landstrip_tray_tests::{finish, launch_landstrip, Landstrip, EVENT_TIMEOUT, PYTHON, WRITE};
use notify::Watcher;
use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use zbus::message::Type;
use zbus::{Connection, MatchRule, MessageStream, OwnedVariant, Variant};

const SERVER: &str = "org.freedesktop.Notifications";
const SERVER_PATH: &str = "/org/freedesktop/Notifications";
const MOCK_IFACE: &str = "org.freedesktop.DBus.Mock";
const BUS: &str = "org.freedesktop.DBus";

/// What Debian's notification daemons typically offer.
const WITH_ACTIONS: &str = "body actions sound";

const WRITE_TITLE: &str = "Sandbox write blocked";
const NO_TRAY_TITLE: &str = "landstrip-tray is running without a tray icon";

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
             `xvfb-run -a dbus-run-session -- cargo test -p landstrip-tray-tests --test notifications`",
        )
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

/// A D-Bus value as JSON, variants unwrapped, to compare with `json!`.
fn to_json(value: &Variant<'_>) -> Json {
    match value {
        Variant::U8(n) => json!(n),
        Variant::Bool(b) => json!(b),
        Variant::I16(n) => json!(n),
        Variant::U16(n) => json!(n),
        Variant::I32(n) => json!(n),
        Variant::U32(n) => json!(n),
        Variant::I64(n) => json!(n),
        Variant::U64(n) => json!(n),
        Variant::F64(n) => json!(n),
        Variant::Str(s) => json!(s.as_str()),
        Variant::Variant(inner) => to_json(inner),
        Variant::Array(items) => Json::Array(items.inner().iter().map(to_json).collect()),
        Variant::Dict(dict) => Json::Object(
            dict.iter()
                .map(|(k, v)| match to_json(k) {
                    Json::String(k) => (k, to_json(v)),
                    other => (other.to_string(), to_json(v)),
                })
                .collect(),
        ),
        other => json!(other.to_string()),
    }
}

/// One `Notify` call as the mock logged it.
#[derive(Debug, Clone)]
struct Notify {
    app_name: String,
    replaces_id: u32,
    summary: String,
    body: String,
    actions: Vec<String>,
    hints: serde_json::Map<String, Json>,
}

impl Notify {
    fn parse(args: &[Json]) -> Self {
        assert_eq!(args.len(), 8, "Notify takes 8 arguments: {args:?}");
        let string = |v: &Json| v.as_str().expect("a string").to_owned();
        Self {
            app_name: string(&args[0]),
            replaces_id: args[1].as_u64().expect("replaces_id") as u32,
            summary: string(&args[3]),
            body: string(&args[4]),
            actions: args[5]
                .as_array()
                .expect("actions")
                .iter()
                .map(string)
                .collect(),
            hints: args[6].as_object().expect("hints").clone(),
        }
    }
}

/// A session bus of the test's own, with no service activation: nothing can start a
/// notification daemon behind the mock's back, and tests can own the name in parallel.
struct PrivateBus {
    _daemon: Child,
    address: String,
}

impl PrivateBus {
    async fn start(dir: &Path) -> Self {
        let config = dir.join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                dir.display()
            ),
        )
        .expect("write the bus config");
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn dbus-daemon (Debian package dbus)");
        let stdout = daemon.stdout.take().expect("stdout");
        let mut address = String::new();
        tokio::time::timeout(
            EVENT_TIMEOUT,
            BufReader::new(stdout).read_line(&mut address),
        )
        .await
        .expect("dbus-daemon printed no address in time")
        .expect("read the bus address");
        assert!(address.starts_with("unix:"), "bus address {address:?}");
        Self {
            _daemon: daemon,
            address: address.trim().to_owned(),
        }
    }

    async fn connect(&self) -> Connection {
        zbus::connection::Builder::address(self.address.as_str())
            .build()
            .await
            .expect("connect to the private bus")
    }
}

/// One test's world: directories, a private bus with the dbusmock notification daemon on
/// it, and a stream of the calls the mock receives.
struct Desk {
    root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    outside: PathBuf,
    runtime: PathBuf,
    discovery: DiscoveryDir,
    bus: PrivateBus,
    conn: Connection,
    mock: Child,
    /// The mock's `MethodCalled` signals: (method, arguments).
    calls: MessageStream,
}

impl Desk {
    /// Sets up the directories and the bus, and starts the mock with `capabilities`.
    async fn new(capabilities: &str) -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical tempdir");
        let runtime = base.join("runtime");
        for dir in [
            "home", "project", "outside", "config", "data", "cache", "state", "bus",
        ] {
            std::fs::create_dir(base.join(dir)).expect("mkdir");
        }
        DirBuilder::new()
            .mode(0o700)
            .create(&runtime)
            .expect("mkdir runtime");
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700))
            .expect("chmod runtime");
        let discovery = DiscoveryDir::new(runtime.clone());
        // Made here (as the app would make it) so the test can watch it from the start.
        DirBuilder::new()
            .mode(0o700)
            .create(discovery.path())
            .expect("mkdir discovery");

        let bus = PrivateBus::start(&base.join("bus")).await;
        let conn = bus.connect().await;
        let calls = MessageStream::for_match_rule(
            MatchRule::builder()
                .msg_type(Type::Signal)
                .interface(MOCK_IFACE)
                .member("MethodCalled")
                .path(SERVER_PATH)
                .build()
                .expect("match rule"),
            &conn,
            NonZeroUsize::new(4096),
        )
        .await
        .expect("subscribe to the mock's calls");
        let mock = start_mock(&bus, &conn, capabilities).await;
        Self {
            home: base.join("home"),
            project: base.join("project"),
            outside: base.join("outside"),
            runtime,
            discovery,
            root,
            bus,
            conn,
            mock,
            calls,
        }
    }

    fn base(&self) -> PathBuf {
        self.runtime.parent().expect("base").to_path_buf()
    }

    /// Writes the app's settings file.
    fn write_settings(&self, settings: Json) {
        let dir = self.base().join("config/landstrip-tray");
        std::fs::create_dir_all(&dir).expect("mkdir config");
        std::fs::write(dir.join("settings.json"), settings.to_string()).expect("write settings");
    }

    /// Writes the project's `.opencode/sandbox.json`.
    fn write_project_policy(&self, policy: Json) {
        let dir = self.project.join(".opencode");
        std::fs::create_dir_all(&dir).expect("mkdir .opencode");
        std::fs::write(dir.join("sandbox.json"), policy.to_string()).expect("write sandbox.json");
    }

    /// Starts the real app on this desk's bus, serving the project; returns once its
    /// discovery file names a port.
    async fn start_app(&self) -> App {
        let base = self.base();
        let (changes_tx, mut changes) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = changes_tx.send(());
        })
        .expect("inotify watcher");
        watcher
            .watch(self.discovery.path(), notify::RecursiveMode::NonRecursive)
            .expect("watch the discovery dir");
        let mut child = Command::new(app_binary())
            .arg("--project")
            .arg(&self.project)
            .env("DISPLAY", display())
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus.address)
            // No accessibility bus on a private bus; GTK need not look for one.
            .env("NO_AT_BRIDGE", "1")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", base.join("config"))
            .env("XDG_DATA_HOME", base.join("data"))
            .env("XDG_CACHE_HOME", base.join("cache"))
            .env("XDG_STATE_HOME", base.join("state"))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("RUST_LOG", "info,landstrip_tray=debug")
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
        let mut app = App {
            child,
            pid,
            log,
            lines,
            port: 0,
        };
        let deadline = Instant::now() + EVENT_TIMEOUT;
        app.port = loop {
            if let ReadOutcome::Record(record) = self.discovery.read(&self.project) {
                if record.pid == pid {
                    break record.port;
                }
            }
            tokio::select! {
                event = tokio::time::timeout_at(deadline, changes.recv()) => match event {
                    Ok(Some(())) => {}
                    Ok(None) => panic!("the inotify watcher stopped"),
                    Err(_) => panic!("no discovery file within {EVENT_TIMEOUT:?}; the app's log:\n{}", app.log()),
                },
                status = app.child.wait() => panic!("the app exited ({status:?}) at start; its log:\n{}", app.log()),
            }
        };
        app
    }

    /// Starts `program` under the real landstrip 0.19.2, its fd 3 connected to `port`.
    fn launch(&self, port: u16, program: &[&str]) -> Child {
        launch_landstrip(
            Landstrip::V0_19,
            self.root.path(),
            &self.project,
            &self.home,
            port,
            None,
            program,
        )
    }

    /// The next call of `method` the mock receives for which `matches` holds (earlier
    /// calls are passed over); its arguments.
    async fn next_call(
        &mut self,
        app: &App,
        method: &str,
        matches: impl Fn(&[Json]) -> bool,
    ) -> Vec<Json> {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            let msg = match tokio::time::timeout_at(deadline, self.calls.next()).await {
                Ok(Some(Ok(msg))) => msg,
                Ok(Some(Err(e))) => panic!("the mock's call stream: {e}"),
                Ok(None) => panic!("the mock's call stream ended"),
                Err(_) => panic!(
                    "no matching {method} call within {EVENT_TIMEOUT:?}; the app's log:\n{}",
                    app.log()
                ),
            };
            let (name, args): (String, Vec<OwnedVariant>) =
                msg.body().deserialize().expect("MethodCalled(sav)");
            let args: Vec<Json> = args.iter().map(|v| to_json(v)).collect();
            if name == method && matches(&args) {
                return args;
            }
        }
    }

    /// The next `Notify` whose summary is `summary`.
    async fn next_notify(&mut self, app: &App, summary: &str) -> Notify {
        let args = self
            .next_call(app, "Notify", |args| args.get(3) == Some(&json!(summary)))
            .await;
        Notify::parse(&args)
    }

    /// Every call of `method` so far, from the mock's own log.
    async fn method_calls(&self, method: &str) -> Vec<Vec<Json>> {
        let reply = self
            .conn
            .call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(MOCK_IFACE),
                "GetMethodCalls",
                &(method,),
            )
            .await
            .expect("GetMethodCalls");
        let calls: Vec<(u64, Vec<OwnedVariant>)> = reply.body().deserialize().expect("a(tav)");
        calls
            .iter()
            .map(|(_, args)| args.iter().map(|v| to_json(v)).collect())
            .collect()
    }

    /// Every `Notify` so far with the id the mock gave it: it numbers new notifications 1,
    /// 2, … in the order it received them, and a replacement keeps its id.
    async fn notifications(&self) -> Vec<(u32, Notify)> {
        let mut next = 1;
        self.method_calls("Notify")
            .await
            .iter()
            .map(|args| {
                let notify = Notify::parse(args);
                let id = if notify.replaces_id != 0 {
                    notify.replaces_id
                } else {
                    next += 1;
                    next - 1
                };
                (id, notify)
            })
            .collect()
    }

    /// The ids `CloseNotification` was called with so far.
    async fn closed_ids(&self) -> Vec<u64> {
        self.method_calls("CloseNotification")
            .await
            .iter()
            .map(|args| args[0].as_u64().expect("an id"))
            .collect()
    }

    /// Sends `ActionInvoked(id, action)` from the test's own connection (not the server)
    /// straight to every connection the app has on the bus; returns how many.
    async fn forge_action(&self, app: &App, id: u32, action: &str) -> usize {
        let dbus = zbus::fdo::DBusProxy::new(&self.conn)
            .await
            .expect("DBus proxy");
        let mut sent = 0;
        for name in dbus.list_names().await.expect("ListNames") {
            if !name.starts_with(':') {
                continue;
            }
            let pid = dbus
                .get_connection_unix_process_id(name.clone().into())
                .await;
            if pid.ok() != Some(app.pid) {
                continue;
            }
            self.conn
                .emit_signal(
                    Some(name.as_str()),
                    SERVER_PATH,
                    SERVER,
                    "ActionInvoked",
                    &(id, action),
                )
                .await
                .expect("emit a forged signal");
            sent += 1;
        }
        sent
    }

    /// Kills the notification daemon and waits until the bus has noticed (its name is free).
    async fn stop_mock(&mut self) {
        let mut owners = owner_changes(&self.conn).await;
        self.mock.kill().await.expect("kill dbusmock");
        let dbus = zbus::fdo::DBusProxy::new(&self.conn)
            .await
            .expect("DBus proxy");
        let name = zbus::names::BusName::try_from(SERVER).expect("bus name");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while dbus
            .name_has_owner(name.clone())
            .await
            .expect("NameHasOwner")
        {
            let changed = tokio::time::timeout_at(deadline, owners.next()).await;
            assert!(
                changed.is_ok(),
                "{SERVER} still owned after its daemon died"
            );
        }
    }

    /// Starts another notification daemon (after [`Desk::stop_mock`]).
    async fn restart_mock(&mut self, capabilities: &str) {
        self.mock = start_mock(&self.bus, &self.conn, capabilities).await;
    }

    /// Clicks a notification's button, as the server does: `ActionInvoked(id, action)`.
    async fn invoke(&self, id: u32, action: &str) {
        self.conn
            .call_method(
                Some(SERVER),
                SERVER_PATH,
                Some(MOCK_IFACE),
                "EmitSignal",
                &(
                    SERVER,
                    "ActionInvoked",
                    "us",
                    vec![Variant::from(id), Variant::from(action)],
                ),
            )
            .await
            .expect("EmitSignal ActionInvoked");
    }
}

/// Changes of the notification server's owner from now on.
async fn owner_changes(conn: &Connection) -> MessageStream {
    MessageStream::for_match_rule(
        MatchRule::builder()
            .msg_type(Type::Signal)
            .sender(BUS)
            .interface(BUS)
            .member("NameOwnerChanged")
            .add_arg(SERVER)
            .build()
            .expect("match rule"),
        conn,
        None,
    )
    .await
    .expect("subscribe to NameOwnerChanged")
}

/// Starts the dbusmock notification daemon and waits until it owns its name.
async fn start_mock(bus: &PrivateBus, conn: &Connection, capabilities: &str) -> Child {
    // Watched before the mock starts, so its arrival cannot slip by.
    let mut owners = owner_changes(conn).await;
    let mut mock = Command::new("/usr/bin/python3")
        .args([
            "-m",
            "dbusmock",
            "--session",
            "--template",
            "notification_daemon",
            "-p",
        ])
        .arg(json!({ "capabilities": capabilities }).to_string())
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn dbusmock (Debian package python3-dbusmock)");
    let dbus = zbus::fdo::DBusProxy::new(conn).await.expect("DBus proxy");
    let name = zbus::names::BusName::try_from(SERVER).expect("bus name");
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while !dbus
        .name_has_owner(name.clone())
        .await
        .expect("NameHasOwner")
    {
        tokio::select! {
            changed = tokio::time::timeout_at(deadline, owners.next()) => {
                assert!(changed.is_ok(), "dbusmock did not own {SERVER} within {EVENT_TIMEOUT:?}");
            }
            status = mock.wait() => panic!("dbusmock exited at start: {status:?}"),
        }
    }
    mock
}

/// The running app: its process (killed if the test ends early), its stderr so far, and
/// the port its discovery file names.
struct App {
    child: Child,
    pid: u32,
    log: Arc<Mutex<String>>,
    lines: watch::Receiver<usize>,
    port: u16,
}

impl App {
    fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until the app's stderr contains `needle`.
    async fn wait_for_log(&mut self, needle: &str) {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while !self.log().contains(needle) {
            match tokio::time::timeout_at(deadline, self.lines.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => panic!(
                    "the app closed stderr without logging {needle:?}:\n{}",
                    self.log()
                ),
                Err(_) => panic!("the app did not log {needle:?}; its log:\n{}", self.log()),
            }
        }
    }

    /// SIGTERM, and waits for the exit: everything the app was going to send is sent.
    async fn quit(&mut self) {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status()
            .await
            .expect("run kill");
        assert!(sent.success());
        let status = tokio::time::timeout(EVENT_TIMEOUT, self.child.wait())
            .await
            .expect("the app did not exit in time")
            .expect("wait");
        assert_eq!(status.code(), Some(0), "the app's log:\n{}", self.log());
    }
}

/// A byte pump between landstrip and the app that notes when the first query passes and
/// can be cut, so the run's connection closes while its query is held.
struct Proxy {
    port: u16,
    first_query: oneshot::Receiver<Instant>,
    cut: oneshot::Sender<()>,
}

async fn proxy(upstream: u16) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (query_tx, first_query) = oneshot::channel();
    let (cut, cut_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let (down, _) = listener.accept().await.expect("accept");
        let up = TcpStream::connect(("127.0.0.1", upstream))
            .await
            .expect("connect to the app");
        let (mut down_r, mut down_w) = down.into_split();
        let (mut up_r, mut up_w) = up.into_split();
        let to_app = async move {
            let mut query_tx = Some(query_tx);
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = down_r.read(&mut buf).await {
                // A query line is one write from landstrip; its state field is enough.
                const QUERY: &[u8] = b"\"state\":\"query\"";
                if query_tx.is_some() && buf[..n].windows(QUERY.len()).any(|w| w == QUERY) {
                    if let Some(tx) = query_tx.take() {
                        let _ = tx.send(Instant::now());
                    }
                }
                if up_w.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        };
        let to_landstrip = async move {
            let _ = tokio::io::copy(&mut up_r, &mut down_w).await;
        };
        tokio::select! {
            _ = async { tokio::join!(to_app, to_landstrip) } => {}
            _ = cut_rx => {}
        }
    });
    Proxy {
        port,
        first_query,
        cut,
    }
}

fn assert_prompt_notification(notify: &Notify, desk: &Desk, target: &str) {
    assert_eq!(notify.app_name, "landstrip-tray");
    assert_eq!(notify.summary, WRITE_TITLE);
    assert!(
        notify.body.contains(&format!("Path: {target}")),
        "body: {:?}",
        notify.body
    );
    assert!(
        notify.body.contains("Program: python3"),
        "body: {:?}",
        notify.body
    );
    assert!(notify.body.contains(" (pid "), "body: {:?}", notify.body);
    assert!(
        notify
            .body
            .contains(&format!("Project: {}", desk.project.display())),
        "body: {:?}",
        notify.body
    );
    assert_eq!(
        notify.hints.get("sound-name"),
        Some(&json!("dialog-warning"))
    );
    assert_eq!(notify.hints.get("urgency"), Some(&json!(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_notifies_once_and_its_allow_button_lets_the_write_through() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    std::fs::create_dir(desk.home.join("notes")).expect("mkdir notes");
    let mut app = desk.start_app().await;

    // No panel on this bus: said once, quietly.
    let no_tray = desk.next_notify(&app, NO_TRAY_TITLE).await;
    assert_eq!(no_tray.hints.get("urgency"), Some(&json!(0)));
    assert_eq!(no_tray.hints.get("sound-name"), None);
    assert!(no_tray.actions.is_empty());
    app.wait_for_log("without a tray icon").await;

    let proxy = proxy(app.port).await;
    let target = desk.home.join("notes/todo.txt");
    let child = desk.launch(proxy.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.next_notify(&app, WRITE_TITLE).await;
    let notified = Instant::now();
    let queried = proxy.first_query.await.expect("the query passed the proxy");
    eprintln!(
        "query -> Notify received by the mock's client: {:?}",
        notified.duration_since(queried)
    );
    assert_prompt_notification(&notify, &desk, "~/notes/todo.txt");
    assert_eq!(
        notify
            .actions
            .iter()
            .step_by(2)
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["allow", "deny", "default"],
        "actions: {:?}",
        notify.actions
    );

    let all = desk.notifications().await;
    let prompts: Vec<u32> = all
        .iter()
        .filter(|(_, n)| n.summary == WRITE_TITLE)
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(prompts.len(), 1, "one Notify for one prompt: {all:?}");
    assert_eq!(
        all.iter()
            .filter(|(_, n)| n.summary == NO_TRAY_TITLE)
            .count(),
        1,
        "{all:?}"
    );
    let id = prompts[0];

    desk.invoke(id, "allow").await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "ok",
        "{done:?}; the app's log:\n{}",
        app.log()
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("the file was written"),
        "hello"
    );

    // Answered by the notification itself: the server removes it, nobody else must.
    app.quit().await;
    assert!(
        !desk.closed_ids().await.contains(&u64::from(id)),
        "the notification that answered was closed by the app"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_deny_button_fails_the_write() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;
    let target = desk.outside.join("refused.txt");
    let child = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    desk.next_notify(&app, WRITE_TITLE).await;
    let (id, _) = desk
        .notifications()
        .await
        .into_iter()
        .find(|(_, n)| n.summary == WRITE_TITLE)
        .expect("the prompt's Notify");
    // A client that is not the server cannot answer, even when it signals the app's own
    // connections directly.
    let forged = desk.forge_action(&app, id, "allow").await;
    assert!(forged > 0, "the app has no connection on the bus");
    desk.invoke(id, "deny").await;
    let done = finish(child).await;
    assert_eq!(
        done.stdout.trim(),
        "EACCES",
        "{done:?}; the app's log:\n{}",
        app.log()
    );
    assert_eq!(done.code, Some(13));
    assert!(!target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_withdraws_its_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;
    let proxy = proxy(app.port).await;
    let target = desk.outside.join("held.txt");
    let child = desk.launch(proxy.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.next_notify(&app, WRITE_TITLE).await;
    assert_prompt_notification(&notify, &desk, path_str(&target));
    let (id, _) = desk
        .notifications()
        .await
        .into_iter()
        .find(|(_, n)| n.summary == WRITE_TITLE)
        .expect("the prompt's Notify");

    proxy.cut.send(()).expect("cut the run's connection");
    let closed = desk.next_call(&app, "CloseNotification", |_| true).await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(id)), "{closed:?}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert!(!target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answered_elsewhere_closes_its_notification() {
    // "Elsewhere" here is the control command: it answers through the same broker call
    // as the dialog, and the notification must close either way.
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;
    let target = desk.outside.join("answered.txt");
    let child = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    desk.next_notify(&app, WRITE_TITLE).await;
    let (id, _) = desk
        .notifications()
        .await
        .into_iter()
        .find(|(_, n)| n.summary == WRITE_TITLE)
        .expect("the prompt's Notify");
    let ctl = |args: &[&str]| {
        let mut cmd = std::process::Command::new(app_binary());
        cmd.arg("ctl")
            .args(args)
            .env("XDG_RUNTIME_DIR", &desk.runtime)
            .env_remove("DISPLAY");
        cmd.output().expect("run ctl")
    };
    let pending = ctl(&["pending", "--json"]);
    assert!(pending.status.success(), "{pending:?}");
    let pending: Json = serde_json::from_slice(&pending.stdout).expect("pending --json");
    let prompt = pending[0]["id"]
        .as_u64()
        .expect("a pending prompt id")
        .to_string();
    let answered = ctl(&["answer", &prompt, "once"]);
    assert!(answered.status.success(), "{answered:?}");
    let closed = desk.next_call(&app, "CloseNotification", |_| true).await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(id)), "{closed:?}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_times_out_withdraws_its_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    desk.write_settings(json!({ "promptTimeoutSecs": 1 }));
    let app = desk.start_app().await;
    let target = desk.outside.join("late.txt");
    let child = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    desk.next_notify(&app, WRITE_TITLE).await;
    let (id, _) = desk
        .notifications()
        .await
        .into_iter()
        .find(|(_, n)| n.summary == WRITE_TITLE)
        .expect("the prompt's Notify");
    let closed = desk.next_call(&app, "CloseNotification", |_| true).await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(id)), "{closed:?}");
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_automatic_answer_makes_no_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    // The sandbox off for the project: the broker allows what landstrip asks, by itself.
    desk.write_project_policy(json!({ "enabled": false }));
    let app = desk.start_app().await;
    let quiet = desk.outside.join("quiet.txt");
    let child = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&quiet)]);
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(std::fs::read_to_string(&quiet).expect("written"), "hello");

    // Then a run that does ask: its notification comes after anything the first run
    // could have caused.
    desk.write_project_policy(json!({ "enabled": true }));
    let asked = desk.outside.join("asked.txt");
    let _child = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&asked)]);
    let notify = desk.next_notify(&app, WRITE_TITLE).await;
    assert_prompt_notification(&notify, &desk, path_str(&asked));
    let prompts: Vec<Notify> = desk
        .notifications()
        .await
        .into_iter()
        .map(|(_, n)| n)
        .filter(|n| n.summary != NO_TRAY_TITLE)
        .collect();
    assert_eq!(
        prompts.len(),
        1,
        "only the run that asked notified: {prompts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_actions_gets_no_buttons_and_still_a_withdrawal() {
    let mut desk = Desk::new("body").await;
    let app = desk.start_app().await;
    let proxy = proxy(app.port).await;
    let target = desk.outside.join("plain.txt");
    let child = desk.launch(proxy.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    let notify = desk.next_notify(&app, WRITE_TITLE).await;
    assert_prompt_notification(&notify, &desk, path_str(&target));
    assert!(notify.actions.is_empty(), "actions: {:?}", notify.actions);

    proxy.cut.send(()).expect("cut the run's connection");
    desk.next_call(&app, "CloseNotification", |_| true).await;
    let done = finish(child).await;
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
}

/// A terminal `info` trap as landstrip writes it for a completed denial.
fn info_trap(path: &Path) -> String {
    json!({
        "kind": "filesystem", "code": "FILESYSTEM_DENIED", "state": "info", "query_id": "0",
        "operation": "read", "path": path_str(path), "mechanism": "landlock",
    })
    .to_string()
        + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_denials_are_summarised_quietly_once_per_run() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let app = desk.start_app().await;

    // The real landstrip failing to start a program: one quiet notification.
    let child = desk.launch(app.port, &["/nonexistent/program"]);
    let summary = desk.next_notify(&app, "Sandbox denied a request").await;
    assert_eq!(summary.replaces_id, 0);
    assert!(
        summary
            .body
            .contains("could not start /nonexistent/program"),
        "body: {:?}",
        summary.body
    );
    assert_eq!(summary.hints.get("sound-name"), None);
    assert_eq!(summary.hints.get("suppress-sound"), Some(&json!(true)));
    assert_eq!(summary.hints.get("urgency"), Some(&json!(0)));
    assert!(summary.actions.is_empty());
    finish(child).await;

    // A run reporting three denials, one at a time: one notification, updated in place.
    let mut run = TcpStream::connect(("127.0.0.1", app.port))
        .await
        .expect("connect");
    for name in ["a", "b", "c"] {
        run.write_all(info_trap(&desk.home.join(name)).as_bytes())
            .await
            .expect("send a trap");
    }
    let last = desk.next_notify(&app, "Sandbox denied 3 requests").await;
    assert!(
        last.body.contains("Latest: read ~/c"),
        "body: {:?}",
        last.body
    );
    let all = desk.notifications().await;
    let run_ids: Vec<(u32, u32)> = all
        .iter()
        .filter(|(_, n)| n.summary.starts_with("Sandbox denied") && n.body.contains("read ~/"))
        .map(|(id, n)| (*id, n.replaces_id))
        .collect();
    let first = run_ids.first().expect("the run's first summary").0;
    assert!(
        run_ids.iter().all(|&(id, _)| id == first),
        "one notification for the run: {run_ids:?}"
    );
    assert!(
        run_ids
            .iter()
            .skip(1)
            .all(|&(_, replaces)| replaces == first),
        "updates replace it: {run_ids:?}"
    );
    assert_ne!(first, 0);
    assert_eq!(
        all.iter()
            .filter(|(_, n)| n.summary == "Sandbox denied a request"
                && n.body.contains("could not start"))
            .count(),
        1,
        "{all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_off_in_the_settings_make_no_notification() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    desk.write_settings(json!({ "summarizeDenials": false }));
    let mut app = desk.start_app().await;
    let child = desk.launch(app.port, &["/nonexistent/program"]);
    finish(child).await;
    // Logged where the summary would have been sent.
    app.wait_for_log("denial summaries are off").await;
    // And prompts still notify.
    let target = desk.outside.join("still.txt");
    let _child = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&target)]);
    desk.next_notify(&app, WRITE_TITLE).await;
    let all = desk.notifications().await;
    assert!(
        all.iter()
            .all(|(_, n)| !n.summary.starts_with("Sandbox denied")),
        "{all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_carries_on_while_the_notification_server_goes_and_comes_back() {
    let mut desk = Desk::new(WITH_ACTIONS).await;
    let mut app = desk.start_app().await;
    let first = proxy(app.port).await;
    let held = desk.outside.join("first.txt");
    let first_run = desk.launch(first.port, &[PYTHON, "-c", WRITE, path_str(&held)]);
    desk.next_notify(&app, WRITE_TITLE).await;
    // Answered by the mock only after it sent Notify's reply: the app has its id.
    desk.notifications().await;

    // No server: the prompt still waits (for the dialog), the failure is logged, the app
    // stays up.
    desk.stop_mock().await;
    let lonely = desk.outside.join("lonely.txt");
    let mut lonely_run = desk.launch(app.port, &[PYTHON, "-c", WRITE, path_str(&lonely)]);
    app.wait_for_log("cannot show desktop notifications").await;
    assert!(
        lonely_run.try_wait().expect("try_wait").is_none(),
        "not held"
    );
    assert!(
        app.child.try_wait().expect("try_wait").is_none(),
        "the app exited"
    );

    // A new server, without actions: asked again what it can do.
    desk.restart_mock("body").await;
    let second = proxy(app.port).await;
    let again = desk.outside.join("again.txt");
    let second_run = desk.launch(second.port, &[PYTHON, "-c", WRITE, path_str(&again)]);
    let notify = desk.next_notify(&app, WRITE_TITLE).await;
    assert!(
        notify.actions.is_empty(),
        "old capabilities: {:?}",
        notify.actions
    );
    assert_prompt_notification(&notify, &desk, path_str(&again));
    let new_id = desk
        .notifications()
        .await
        .iter()
        .find(|(_, n)| n.summary == WRITE_TITLE)
        .expect("the new server's Notify")
        .0;

    // The first notification went with its server: withdrawing its prompt closes nothing
    // on the new one; withdrawing the new prompt closes the new notification.
    first.cut.send(()).expect("cut the first run");
    assert_eq!(finish(first_run).await.stdout.trim(), "EACCES");
    second.cut.send(()).expect("cut the second run");
    let closed = desk.next_call(&app, "CloseNotification", |_| true).await;
    assert_eq!(closed[0].as_u64(), Some(u64::from(new_id)), "{closed:?}");
    assert_eq!(finish(second_run).await.stdout.trim(), "EACCES");
    assert_eq!(desk.closed_ids().await, [u64::from(new_id)]);
    assert_eq!(
        app.log()
            .matches("cannot show desktop notifications")
            .count(),
        1,
        "logged once:\n{}",
        app.log()
    );
}
