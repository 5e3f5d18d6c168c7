//! The real app binary (`landstrip-tray`, built by `cargo build -p landstrip-tray`) in a
//! private world: its own home, config, data and runtime directories. Started with
//! `--project`s under the test's X display with its stderr captured; `ctl` and second
//! starts run against it without any display.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use landstrip_tray_core::discovery::{DiscoveryDir, DiscoveryRecord, ReadOutcome};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::{Finished, EVENT_TIMEOUT};

/// How long the app may take to exit once signalled.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// `<target dir>/debug/landstrip-tray`, the target dir being `$CARGO_TARGET_DIR` or the
/// workspace's `target`; `$LANDSTRIP_TRAY_BIN` names another build (the benchmarks use
/// the release one).
pub fn app_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("LANDSTRIP_TRAY_BIN").filter(|b| !b.is_empty()) {
        return PathBuf::from(bin);
    }
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

/// One test's private directories for the real app.
pub struct AppWorld {
    /// Holds everything below; removed at the end.
    pub root: tempfile::TempDir,
    /// The canonical root: `home`, `project`, `outside`, `config`, `data`, `runtime`…
    pub base: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// The project the app is started with.
    pub project: PathBuf,
    /// Outside home and project: writes there need approval.
    pub outside: PathBuf,
    /// `XDG_RUNTIME_DIR` (mode 0700).
    pub runtime: PathBuf,
    /// The discovery directory under `runtime`.
    pub discovery: DiscoveryDir,
}

impl Default for AppWorld {
    fn default() -> Self {
        Self::new()
    }
}

impl AppWorld {
    /// Creates the directories.
    pub fn new() -> Self {
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
            base,
            root,
        }
    }

    /// Where the app's control socket goes.
    pub fn control_socket(&self) -> PathBuf {
        self.runtime.join("landstrip-tray/control.sock")
    }

    /// The app's settings file.
    pub fn settings_file(&self) -> PathBuf {
        self.base.join("config/landstrip-tray/settings.json")
    }

    /// The discovery record for `project`, if there is a valid one.
    pub fn record(&self, project: &Path) -> Option<DiscoveryRecord> {
        match self.discovery.read(project) {
            ReadOutcome::Record(record) => Some(record),
            ReadOutcome::Missing | ReadOutcome::Malformed => None,
        }
    }

    /// The app binary with this world's environment, run in `base`, without any display.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(app_binary());
        cmd.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.base.join("config"))
            .env("XDG_DATA_HOME", self.base.join("data"))
            .env("XDG_CACHE_HOME", self.base.join("cache"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env(
                "RUST_LOG",
                std::env::var("LANDSTRIP_TRAY_APP_LOG").unwrap_or_else(|_| "info".to_owned()),
            )
            .env("NO_COLOR", "1")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .current_dir(&self.base)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Starts the app under the test's X display, serving `projects`.
    pub fn start(&self, projects: &[&Path]) -> RunningApp {
        let display = std::env::var_os("DISPLAY")
            .filter(|d| !d.is_empty())
            .expect(
                "DISPLAY is not set: the app needs an X display; run these tests under \
                 `xvfb-run -a dbus-run-session -- cargo test`",
            );
        let mut cmd = self.command();
        for project in projects {
            cmd.arg("--project").arg(project);
        }
        let mut child = cmd
            .env("DISPLAY", display)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
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
        RunningApp {
            child,
            pid,
            log,
            lines,
        }
    }

    /// Runs the app binary with `args` to its end (bounded), without a display.
    pub async fn run(&self, args: &[&str]) -> Finished {
        let output = tokio::time::timeout(
            EVENT_TIMEOUT,
            self.command()
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("landstrip-tray {args:?} did not exit within {EVENT_TIMEOUT:?}"))
        .expect("run landstrip-tray");
        Finished {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// `landstrip-tray ctl ARGS…` to its end (bounded), without a display.
    pub async fn ctl(&self, args: &[&str]) -> Finished {
        let mut all = vec!["ctl"];
        all.extend_from_slice(args);
        self.run(&all).await
    }
}

/// The running app: its process (killed if the test ends early) and its stderr so far.
pub struct RunningApp {
    child: Child,
    /// Its pid.
    pub pid: u32,
    log: Arc<Mutex<String>>,
    lines: watch::Receiver<usize>,
}

impl RunningApp {
    /// Its stderr so far.
    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Fails the test if the app has exited.
    pub fn assert_running(&mut self) {
        let status = self.child.try_wait().expect("try_wait");
        assert!(
            status.is_none(),
            "the app exited ({status:?}); its log:\n{}",
            self.log()
        );
    }

    /// Waits (bounded) until the app's stderr contains `needle`.
    pub async fn wait_for_log(&mut self, needle: &str) {
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

    /// Waits (bounded) until `needle` appears at least `count` times in the app's stderr.
    pub async fn wait_for_log_count(&mut self, needle: &str, count: usize) {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while self.log().matches(needle).count() < count {
            match tokio::time::timeout_at(deadline, self.lines.changed()).await {
                Ok(Ok(())) => {}
                _ => panic!(
                    "the app did not log {needle:?} {count} times; its log:\n{}",
                    self.log()
                ),
            }
        }
    }

    /// Waits until the control socket is up (the app logs it once it is in place).
    pub async fn wait_for_control(&mut self) {
        self.wait_for_log("control socket at").await;
    }

    /// Sends SIGTERM and waits (bounded) for the app to exit; returns its exit code.
    pub async fn terminate(&mut self) -> Option<i32> {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status()
            .await
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {} failed", self.pid);
        let status = tokio::time::timeout(EXIT_TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the app did not exit within {EXIT_TIMEOUT:?} of SIGTERM; its log:\n{}",
                    self.log()
                )
            })
            .expect("wait");
        status.code()
    }
}
