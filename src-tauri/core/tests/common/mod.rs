//! Pieces the core's integration tests share: a served core with its control server, a
//! landstrip-like run on a query listener (real TCP) and the query trap it sends.

// Each test file compiles this module on its own and uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::app_settings::SettingsFile;
use landstrip_tray_core::decision::broker::{Broker, BrokerEvent, PendingPrompt};
use landstrip_tray_core::policy::project::Project;
use landstrip_tray_core::serving::discovery::{DiscoveryDir, ReadOutcome};
use landstrip_tray_core::serving::listener::Listener;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{Client, ControlServer, Reply, Request, Response};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// Runs `work` within `bound`, failing the test with `what` otherwise.
pub async fn bounded<T>(
    bound: Duration,
    what: &str,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(bound, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {bound:?}"))
}

/// One run's connection to a project's query listener, speaking landstrip's side.
pub struct Run {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    bound: Duration,
}

impl Run {
    /// Connects to the listener on `port`; every wait on this run is bounded by `bound`.
    pub async fn connect(port: u16, bound: Duration) -> Self {
        let stream = bounded(
            bound,
            "the query listener",
            TcpStream::connect(("127.0.0.1", port)),
        )
        .await
        .expect("connect to the query listener");
        let (read, writer) = stream.into_split();
        Self {
            reader: BufReader::new(read),
            writer,
            bound,
        }
    }

    /// Sends one trap line.
    pub async fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("send a trap");
    }

    /// The next answer the listener writes back.
    pub async fn answer(&mut self) -> Value {
        let mut line = String::new();
        let n = bounded(
            self.bound,
            "an answer on the run",
            self.reader.read_line(&mut line),
        )
        .await
        .expect("read an answer");
        assert!(n > 0, "the listener closed the run without an answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer {line:?}: {e}"))
    }

    /// Everything the listener still writes until it closes the run.
    pub async fn rest(&mut self) -> String {
        let mut rest = String::new();
        bounded(
            self.bound,
            "the listener closing the run",
            tokio::io::AsyncReadExt::read_to_string(&mut self.reader, &mut rest),
        )
        .await
        .expect("read to the end of the run");
        rest
    }
}

/// A landstrip 0.19 write query for `path`.
pub fn write_query(id: &str, path: &Path) -> String {
    serde_json::json!({
        "kind": "filesystem", "code": "FILESYSTEM_DENIED", "state": "query", "query_id": id,
        "operation": "write", "path": path, "requested_path": path, "syscall": "openat",
        "errno": "EACCES", "flags": ["O_WRONLY", "O_CREAT"], "reason": "allow_miss",
        "process": {"pid": 2434, "exe": "/usr/bin/dash", "cwd": "/"}, "mechanism": "seccomp"
    })
    .to_string()
}

/// One project's query listener alone, on real TCP, for the listener's own tests: a
/// temporary home and project, the broker given, and a bounded stop.
pub struct Listening {
    _root: tempfile::TempDir,
    /// The project directory (canonical).
    pub dir: PathBuf,
    /// The listener's port on 127.0.0.1.
    pub port: u16,
    stop: tokio::sync::watch::Sender<bool>,
    server: JoinHandle<()>,
}

impl Listening {
    /// Serves a new project with `broker`.
    pub async fn start(broker: Broker) -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical");
        let (home, dir) = (base.join("home"), base.join("project"));
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let project = Arc::new(Project::new(dir.clone(), home));
        let listener = Listener::bind().await.expect("bind");
        let port = listener.port();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let server = tokio::spawn(listener.serve(project, broker, stop_rx));
        Self {
            _root: root,
            dir,
            port,
            stop,
            server,
        }
    }

    /// A write query inside the project, which the bundled defaults allow without
    /// asking, as one line.
    pub fn allowed_write(&self, id: &str) -> String {
        serde_json::json!({
            "kind": "filesystem", "state": "query", "query_id": id,
            "operation": "write", "path": self.dir.join("out.txt"), "mechanism": "seccomp",
        })
        .to_string()
            + "\n"
    }

    /// Stops the listener and waits for it, failing after `bound`.
    pub async fn stop(self, bound: Duration) {
        let _ = self.stop.send(true);
        tokio::time::timeout(bound, self.server)
            .await
            .expect("the listener did not stop")
            .expect("listener task");
    }
}

/// Sends one query line on `stream` and reads its answer line.
pub async fn ask(stream: &mut TcpStream, query: &str) -> String {
    stream.write_all(query.as_bytes()).await.expect("send");
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .await
        .expect("read the answer");
    line
}

/// A served core as the app runs it — a service, its broker's events and its control
/// server — in a private temporary tree: `base/{home,project,other,outside}` exist,
/// discovery files go to `base/runtime` unless [`Setup::discovery`] says otherwise.
pub struct Served {
    _root: tempfile::TempDir,
    /// The canonical temporary directory everything lives in.
    pub base: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub other: PathBuf,
    pub outside: PathBuf,
    pub discovery: DiscoveryDir,
    /// The app's settings file (written only when the setup asks for one).
    pub settings: PathBuf,
    /// The activity log file, when the setup asks for one on disk.
    pub activity: PathBuf,
    pub socket: PathBuf,
    pub service: Service,
    pub events: broadcast::Receiver<BrokerEvent>,
    server: JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// How a [`Served`] core starts.
#[derive(Default)]
pub struct Setup {
    /// Serve `base/project`.
    pub serve_project: bool,
    /// Serve `base/other` too.
    pub serve_other: bool,
    /// Give the service a settings file (`base/config/settings.json`).
    pub settings: bool,
    /// Write this into the settings file before the start (implies `settings`).
    pub settings_text: Option<String>,
    /// Keep the activity log in `base/data/activity.jsonl` rather than in memory.
    pub activity_file: bool,
    /// Publish discovery files here instead of a fresh `base/runtime`.
    pub discovery: Option<DiscoveryDir>,
}

impl Setup {
    /// Starts the service and its control server.
    pub async fn start(self) -> Served {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical");
        let [home, project, other, outside] =
            ["home", "project", "other", "outside"].map(|name| base.join(name));
        for dir in [&home, &project, &other, &outside] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let activity = base.join("data/activity.jsonl");
        let log = if self.activity_file {
            ActivityLog::open(&activity, 1 << 20).expect("open the activity log")
        } else {
            ActivityLog::in_memory()
        };
        let broker = Broker::new(Arc::new(log));
        let events = broker.subscribe();
        let discovery = self
            .discovery
            .unwrap_or_else(|| DiscoveryDir::new(base.join("runtime")));
        let settings = base.join("config/settings.json");
        if let Some(text) = &self.settings_text {
            std::fs::create_dir_all(base.join("config")).expect("mkdir config");
            std::fs::write(&settings, text).expect("write settings");
        }
        let settings_file = (self.settings || self.settings_text.is_some())
            .then(|| SettingsFile::new(settings.clone()));
        let service = Service::start(broker, home.clone(), discovery.clone(), settings_file);
        let served = [(self.serve_project, &project), (self.serve_other, &other)];
        for dir in served
            .iter()
            .filter(|(serve, _)| *serve)
            .map(|(_, dir)| dir)
        {
            service
                .add_project(dir, false)
                .await
                .expect("serve the project");
        }
        let socket = base.join("control/landstrip-tray/control.sock");
        let server = ControlServer::bind(&socket).expect("bind the control socket");
        let server = tokio::spawn(server.serve(service.clone()));
        Served {
            _root: root,
            base,
            home,
            project,
            other,
            outside,
            discovery,
            settings,
            activity,
            socket,
            service,
            events,
            server,
        }
    }
}

/// Bound on one control-socket exchange.
const CONTROL_BOUND: Duration = Duration::from_secs(20);

impl Served {
    /// A fresh connection to the control socket.
    pub async fn client(&self) -> Client {
        bounded(
            CONTROL_BOUND,
            "connecting to the control socket",
            Client::connect(&self.socket),
        )
        .await
        .expect("connect to the control socket")
    }

    /// One request on a fresh connection.
    pub async fn ask(&self, request: &Request) -> Response {
        let mut client = self.client().await;
        bounded(CONTROL_BOUND, "a control reply", client.request(request))
            .await
            .expect("a control reply")
    }

    /// One request whose reply must be ok.
    pub async fn ok(&self, request: Request) -> Reply {
        match self.ask(&request).await {
            Response::Ok(reply) => reply,
            Response::Error { message } => panic!("{request:?}: error reply {message:?}"),
        }
    }

    /// One request whose reply must be an error; its message.
    pub async fn error(&self, request: Request) -> String {
        match self.ask(&request).await {
            Response::Error { message } => message,
            Response::Ok(reply) => panic!("{request:?}: expected an error, got {reply:?}"),
        }
    }

    /// The next prompt the broker adds (other events are skipped).
    pub async fn next_prompt(&mut self) -> PendingPrompt {
        loop {
            match bounded(CONTROL_BOUND, "a prompt", self.events.recv()).await {
                Ok(BrokerEvent::Added(prompt)) => return prompt,
                Ok(_) => continue,
                Err(e) => panic!("broker events: {e}"),
            }
        }
    }

    /// The port the project's discovery file names.
    pub fn port_of(&self, dir: &Path) -> u16 {
        match self.discovery.read(dir) {
            ReadOutcome::Record(record) => record.port,
            other => panic!("no discovery record for {}: {other:?}", dir.display()),
        }
    }
}
