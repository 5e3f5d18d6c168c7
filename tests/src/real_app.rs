//! The one runner for the real app binary (`landstrip-tray`, built by
//! `cargo build -p landstrip-tray`), shared by every suite: a private world (home, project,
//! config, data, cache, state and runtime directories), the app started in it under the
//! test's X display with its stderr captured, bounded waits for what it publishes and logs,
//! `ctl` and second starts without any display, and a bounded stop. The process is killed
//! if a test ends early, so nothing is left running.
//!
//! The binary is checked against the sources it is built from before anything runs it: a
//! stale build fails the test instead of testing old code.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use landstrip_tray_core::serving::discovery::{DiscoveryDir, DiscoveryRecord, ReadOutcome};
use notify::Watcher;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::{
    landstrip_command, launch_landstrip_with_policy, write_landstrip_policy_from, Finished,
    Landstrip, EVENT_TIMEOUT, PYTHON, WRITE,
};

/// How long the app may take to exit once signalled.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// The sources the app binary is built from, relative to the workspace: a file here newer
/// than the binary means the binary is stale.
const APP_SOURCES: &[&str] = &[
    "src-tauri/src",
    "src-tauri/core/src",
    "src-tauri/build.rs",
    "src-tauri/Cargo.toml",
    "src-tauri/core/Cargo.toml",
    "src-tauri/tauri.conf.json",
    "src-tauri/capabilities",
    "ui",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `<target dir>/debug/landstrip-tray`, the target dir being `$CARGO_TARGET_DIR` or the
/// workspace's `target`; `$LANDSTRIP_TRAY_BIN` names another build (the benchmarks use
/// the release one). Fails the test if the binary is missing or older than any of its
/// sources (see [`APP_SOURCES`]).
pub fn app_binary() -> PathBuf {
    static CHECKED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CHECKED
        .get_or_init(find_fresh_binary)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Failing rather than building: the check is quick and deterministic, a build from
/// inside parallel tests would contend for cargo's lock, and scripts/test.sh builds first.
fn find_fresh_binary() -> Result<PathBuf, String> {
    let bin = match std::env::var_os("LANDSTRIP_TRAY_BIN").filter(|b| !b.is_empty()) {
        Some(bin) => PathBuf::from(bin),
        None => {
            let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
                Some(dir) => workspace().join(dir), // an absolute dir replaces the prefix
                None => workspace().join("target"),
            };
            target.join("debug").join("landstrip-tray")
        }
    };
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .map_err(|e| {
            format!(
                "{}: {e}: run `cargo build -p landstrip-tray` first (these tests run the real app)",
                bin.display()
            )
        })?;
    let (newest, file) = newest_source()?;
    if newest > built {
        return Err(format!(
            "{} is older than {}: run `cargo build -p landstrip-tray` (these tests must not run a stale app)",
            bin.display(),
            file.display()
        ));
    }
    std::fs::canonicalize(&bin).map_err(|e| format!("{}: {e}", bin.display()))
}

/// The newest modification time among the app's sources, and that file.
fn newest_source() -> Result<(SystemTime, PathBuf), String> {
    let mut newest = (SystemTime::UNIX_EPOCH, PathBuf::new());
    let mut stack: Vec<PathBuf> = APP_SOURCES.iter().map(|s| workspace().join(s)).collect();
    while let Some(path) = stack.pop() {
        let meta =
            std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            let entries =
                std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            for entry in entries {
                stack.push(
                    entry
                        .map_err(|e| format!("{}: {e}", path.display()))?
                        .path(),
                );
            }
        } else if let Ok(modified) = meta.modified() {
            if modified > newest.0 {
                newest = (modified, path);
            }
        }
    }
    Ok(newest)
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
    /// The app binary this world runs; None: the workspace's fresh build ([`app_binary`]).
    binary: Option<PathBuf>,
}

impl Default for AppWorld {
    fn default() -> Self {
        Self::new()
    }
}

impl AppWorld {
    /// Creates the directories, the project at `base/project`.
    pub fn new() -> Self {
        Self::with_project("project")
    }

    /// Creates the directories, the project at `base/<project>` (`home/src/app` puts it in
    /// the home).
    pub fn with_project(project: &str) -> Self {
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
        let world = Self {
            home: base.join("home"),
            project: base.join(project),
            outside: base.join("outside"),
            discovery: DiscoveryDir::new(runtime.clone()),
            runtime,
            base,
            root,
            binary: None,
        };
        // A user who has run the app before: no welcome window (see [`AppWorld::first_run`]).
        world.write_settings(&serde_json::json!({}));
        world
    }

    /// Like [`AppWorld::new`], with no settings file: the app's first run, which opens
    /// the welcome window.
    pub fn first_run() -> Self {
        let world = Self::new();
        std::fs::remove_file(world.settings_file()).expect("remove the settings file");
        world
    }

    /// The app's log directory (`$XDG_STATE_HOME/landstrip-tray/logs`).
    pub fn log_dir(&self) -> PathBuf {
        self.base.join("state/landstrip-tray/logs")
    }

    /// Runs `binary` (an installed package's `/usr/bin/landstrip-tray`) instead of the
    /// workspace's build; it is not checked against the sources.
    pub fn use_binary(&mut self, binary: impl Into<PathBuf>) {
        self.binary = Some(binary.into());
    }

    /// The app binary this world runs.
    pub fn binary(&self) -> PathBuf {
        self.binary.clone().unwrap_or_else(app_binary)
    }

    /// Where the app's control socket goes.
    pub fn control_socket(&self) -> PathBuf {
        self.runtime.join("landstrip-tray/control.sock")
    }

    /// The app's settings file.
    pub fn settings_file(&self) -> PathBuf {
        self.base.join("config/landstrip-tray/settings.json")
    }

    /// Writes the app's settings file.
    pub fn write_settings(&self, settings: &serde_json::Value) {
        let file = self.settings_file();
        std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir config");
        std::fs::write(file, settings.to_string()).expect("write settings");
    }

    /// The app's activity log (`$XDG_DATA_HOME/landstrip-tray/activity.jsonl`).
    pub fn activity_file(&self) -> PathBuf {
        self.base.join("data/landstrip-tray/activity.jsonl")
    }

    /// The global sandbox.json as the app reads it: `$XDG_CONFIG_HOME/opencode/` (this
    /// world's `config` directory; see [`AppWorld::apply_env`]).
    pub fn global_policy(&self) -> PathBuf {
        self.base.join("config/opencode/sandbox.json")
    }

    /// Builds the landstrip policy file from this world's sandbox.json files, as the app
    /// reads them.
    pub fn landstrip_policy(&self) -> PathBuf {
        write_landstrip_policy_from(
            landstrip_tray_core::policy::PolicyPaths::with_global(
                self.global_policy(),
                &self.project,
            ),
            &self.home,
            &self.project,
            self.root.path(),
        )
    }

    /// The project's sandbox.json.
    pub fn project_policy(&self) -> PathBuf {
        self.project.join(".opencode/sandbox.json")
    }

    /// Writes the project's `.opencode/sandbox.json`.
    pub fn write_project_policy(&self, policy: &serde_json::Value) {
        let file = self.project_policy();
        std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir .opencode");
        std::fs::write(file, policy.to_string()).expect("write sandbox.json");
    }

    /// The discovery file for `project`.
    pub fn discovery_file(&self, project: &Path) -> PathBuf {
        self.discovery.file_for(project)
    }

    /// The discovery record for `project`, if there is a valid one.
    pub fn record(&self, project: &Path) -> Option<DiscoveryRecord> {
        match self.discovery.read(project) {
            ReadOutcome::Record(record) => Some(record),
            ReadOutcome::Missing | ReadOutcome::Malformed => None,
        }
    }

    /// Plants a discovery file for `project`, as another presenter would have written it;
    /// returns its bytes.
    pub fn plant(&self, project: &Path, record: DiscoveryRecord) -> Vec<u8> {
        DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(self.discovery.path())
            .expect("mkdir discovery");
        let bytes = record.to_json().into_bytes();
        std::fs::write(self.discovery_file(project), &bytes).expect("plant discovery file");
        bytes
    }

    /// Watches the runtime directory and, once it exists, the discovery directory.
    pub fn watch(&self) -> DirWatch {
        DirWatch::new(&self.runtime, self.discovery.path())
    }

    /// Gives `cmd` this world's environment (home, XDG directories, log filter), run in
    /// `base`: for the app itself and for tauri-driver, which hands it on to the app.
    pub fn apply_env(&self, cmd: &mut Command) {
        cmd.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.base.join("config"))
            .env("XDG_DATA_HOME", self.base.join("data"))
            .env("XDG_CACHE_HOME", self.base.join("cache"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env(
                "RUST_LOG",
                std::env::var("LANDSTRIP_TRAY_APP_LOG")
                    .unwrap_or_else(|_| "info,landstrip_tray=debug".to_owned()),
            )
            .env("NO_COLOR", "1")
            .current_dir(&self.base)
            .stdin(Stdio::null())
            .kill_on_drop(true);
    }

    /// The app binary with this world's environment, without any display.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(self.binary());
        self.apply_env(&mut cmd);
        cmd.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
        cmd
    }

    /// Starts the app under the test's X display, serving `projects`.
    pub fn start(&self, projects: &[&Path]) -> RunningApp {
        self.start_with(projects, &[])
    }

    /// Like [`AppWorld::start`], with extra environment (a private session bus, a test
    /// knob).
    pub fn start_with(&self, projects: &[&Path], env: &[(&str, &str)]) -> RunningApp {
        let mut cmd = self.command();
        for project in projects {
            cmd.arg("--project").arg(project);
        }
        for (key, value) in env {
            cmd.env(key, value);
        }
        cmd.env("DISPLAY", display());
        Self::spawn(cmd)
    }

    /// Starts the app on a Wayland desktop, serving `projects`: `env` is the desktop's
    /// ([`crate::desktop::Desktop::app_env`]), and no X display is given.
    pub fn start_on(&self, projects: &[&Path], env: &[(&str, String)]) -> RunningApp {
        let mut cmd = self.command();
        for project in projects {
            cmd.arg("--project").arg(project);
        }
        for (key, value) in env {
            cmd.env(key, value);
        }
        Self::spawn(cmd)
    }

    /// Starts the app with `args`, no display and no session bus, as over SSH
    /// (`--headless` among them, or it refuses to start).
    pub fn start_without_display(&self, args: &[&std::ffi::OsStr]) -> RunningApp {
        let mut cmd = self.command();
        cmd.args(args).env_remove("DBUS_SESSION_BUS_ADDRESS");
        Self::spawn(cmd)
    }

    /// Starts the app with `--headless` serving the world's project, with no display and
    /// no session bus (README, "Without a display").
    pub fn start_headless(&self) -> RunningApp {
        self.start_without_display(&[
            std::ffi::OsStr::new("--headless"),
            std::ffi::OsStr::new("--project"),
            self.project.as_os_str(),
        ])
    }

    /// Like [`AppWorld::start_headless`], as another user (`uid`, `gid`): the "remote"
    /// machine's app of the SSH tests, whose world that user owns.
    pub fn start_headless_as(&self, uid: u32, gid: u32) -> RunningApp {
        let mut cmd = self.command();
        cmd.args(["--headless", "--project"])
            .arg(&self.project)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .uid(uid)
            .gid(gid);
        Self::spawn(cmd)
    }

    /// `landstrip-tray ctl ARGS…` as another user (`uid`, `gid`) to its end (bounded).
    pub async fn ctl_as(&self, uid: u32, gid: u32, args: &[&str]) -> Finished {
        let output = tokio::time::timeout(
            EVENT_TIMEOUT,
            self.command()
                .arg("ctl")
                .args(args)
                .uid(uid)
                .gid(gid)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("ctl {args:?} did not exit within {EVENT_TIMEOUT:?}"))
        .expect("run landstrip-tray ctl");
        Finished {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Like [`AppWorld::start_headless`], with extra environment (the phone page's tests
    /// preload libfaketime to move the app's wall clock).
    pub fn start_headless_with(&self, env: &[(&str, String)]) -> RunningApp {
        let mut cmd = self.command();
        cmd.arg("--headless")
            .arg("--project")
            .arg(&self.project)
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
        for (key, value) in env {
            cmd.env(key, value);
        }
        Self::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> RunningApp {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn landstrip-tray");
        let pid = child.id().expect("pid");
        let stderr = child.stderr.take().expect("stderr");
        let (log, lines) = capture(stderr);
        RunningApp {
            child,
            pid,
            log,
            lines,
            port: None,
        }
    }

    /// The port the app publishes for the world's project (its discovery record now).
    pub fn published_port(&self) -> u16 {
        self.record(&self.project)
            .unwrap_or_else(|| panic!("the app published no discovery record"))
            .port
    }

    /// Runs [`WRITE`] on `target` under the real landstrip 0.19.2, connected to the port
    /// the app publishes for the project.
    pub fn ask_write(&self, target: &Path) -> Child {
        self.write(self.published_port(), target)
    }

    /// The live session grants, through `ctl grants --json`.
    pub async fn grants(&self) -> Vec<serde_json::Value> {
        let json = self.ctl_ok(&["grants", "--json"]).await;
        let list: serde_json::Value = serde_json::from_str(&json).expect("grants --json");
        list.as_array().expect("a list").clone()
    }

    /// What only the app's own deny of `query` shows. EACCES and no file are not enough:
    /// landstrip denies whatever it holds when the app's socket closes, so a crashed app
    /// would pass. The app's one answer on the wire (seen by `tap`) is deny for the query,
    /// the activity log says the deny of `subject` came `by` whom, and the app (`app_pid`)
    /// still answers its control socket. `log` gives the app's log for the messages.
    pub async fn assert_the_app_denied(
        &self,
        tap: &crate::tap::Tap,
        query: &serde_json::Value,
        subject: &str,
        by: &str,
        app_pid: u32,
        log: impl Fn() -> String,
    ) {
        let action = tap.only_answer(query);
        assert_eq!(action, "deny", "the app's answer; its log:\n{}", log());
        let entry = self
            .activity_entry(&format!("for the denied {subject}"), |e| {
                e["subject"] == subject
            })
            .await;
        assert_eq!(entry["outcome"], "deny", "{entry}");
        assert_eq!(entry["by"], by, "not denied by {by}: {entry}");
        let status = self.ctl(&["status", "--json"]).await;
        assert_eq!(
            status.code,
            Some(0),
            "the app is gone after answering: {status:?}; its log:\n{}",
            log()
        );
        let status: serde_json::Value =
            serde_json::from_str(&status.stdout).expect("status --json");
        assert_eq!(
            status["pid"], app_pid,
            "another process answers the control socket: {status}"
        );
    }

    /// Starts a real run writing `target` through a [`crate::tap::Tap`] to `port` (a
    /// served project's) and waits until the app holds the write.
    pub async fn tapped_held_write(&self, port: u16, target: &Path) -> TappedWrite {
        let mut tap = crate::tap::Tap::start(port).await;
        let (child, _) = self.held_write(tap.port, target).await;
        let query = tap.first_query().await.trap;
        assert_eq!(tap.replies(), "", "the app answered the held write already");
        TappedWrite {
            child,
            tap,
            query,
            target: target.to_path_buf(),
        }
    }

    /// What stopping serving `project` (`ctl remove-project`, Settings → Projects) does to
    /// a write it held: the run is refused by the app's one deny on the wire (not by its
    /// connection closing, which landstrip also turns into EACCES), its one activity record
    /// says `by: quit` (the decider `Broker::deny_project` settles with), the app lives on
    /// (`app_pid` answers `ctl status`), and the project's discovery file is gone.
    pub async fn assert_stopped_serving(
        &self,
        held: TappedWrite,
        project: &Path,
        app_pid: u32,
        log: impl Fn() -> String,
    ) {
        // The run ends once landstrip has the answer; the tap records every byte the app
        // sent before passing it on, so all of them are recorded by then.
        let done = crate::finish(held.child).await;
        assert_refused(&done, &held.target);
        let subject = path_str(&held.target);
        self.assert_the_app_denied(&held.tap, &held.query, subject, "quit", app_pid, &log)
            .await;
        let records: Vec<serde_json::Value> = std::fs::read_to_string(self.activity_file())
            .expect("the activity log")
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["subject"] == subject)
            .collect();
        assert_eq!(
            records.len(),
            1,
            "one record of the held write: {records:?}"
        );
        assert!(
            !self.discovery_file(project).exists(),
            "{}: the discovery file of the project no longer served is left",
            self.discovery_file(project).display()
        );
    }

    /// Runs the app binary with `args` to its end (bounded), without a display.
    pub async fn run(&self, args: &[&str]) -> Finished {
        self.run_os(args).await
    }

    /// Like [`AppWorld::run`], with arguments that need not be UTF-8.
    pub async fn run_os<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
        &self,
        args: &[S],
    ) -> Finished {
        self.run_in(&self.base, args).await
    }

    /// Like [`AppWorld::run_os`], started in `dir` (a shell's directory: what `.` means).
    pub async fn run_in<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
        &self,
        dir: &Path,
        args: &[S],
    ) -> Finished {
        let output = tokio::time::timeout(
            EVENT_TIMEOUT,
            self.command()
                .current_dir(dir)
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

    /// `ctl ARGS…` that must succeed; its standard output.
    pub async fn ctl_ok(&self, args: &[&str]) -> String {
        let out = self.ctl(args).await;
        assert_eq!(out.code, Some(0), "ctl {args:?}: {out:?}");
        out.stdout
    }

    /// `ctl ARGS… --json` that must succeed, parsed.
    pub async fn ctl_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ctl_ok(&all).await;
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ctl {all:?}: {e}: {out:?}"))
    }

    /// Starts `program` in the project under the real landstrip 0.19.2, its fd 3
    /// connected to `port`.
    pub fn launch(&self, port: u16, session: Option<&str>, program: &[&str]) -> Child {
        self.launch_with_env(port, session, &[], program)
    }

    /// Like [`AppWorld::launch`], landstrip's own environment having `env` besides this
    /// process's (what opencode's shell tool passes on to the landstrip it starts).
    pub fn launch_with_env(
        &self,
        port: u16,
        session: Option<&str>,
        env: &[(&str, &str)],
        program: &[&str],
    ) -> Child {
        landstrip_command(
            Landstrip::V0_19,
            &self.landstrip_policy(),
            &self.project,
            &self.home,
            port,
            session,
            program,
        )
        .envs(env.iter().copied())
        .spawn()
        .expect("spawn landstrip")
    }

    /// Starts a real run writing `target` and waits (`ctl pending --wait`) until its write
    /// is held, the run still going; returns the run and the request's id.
    pub async fn held_write(&self, port: u16, target: &Path) -> (Child, String) {
        let mut child = self.write(port, target);
        let waited = self.ctl_ok(&["pending", "--wait", "--json"]).await;
        let items: serde_json::Value = serde_json::from_str(&waited)
            .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {waited:?}"));
        let item = items
            .as_array()
            .and_then(|a| a.iter().find(|i| i["path"] == path_str(target)))
            .unwrap_or_else(|| panic!("{} is not held: {items}", target.display()));
        let id = item["id"].as_u64().expect("a numeric id").to_string();
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "the run ended while its write should be held"
        );
        (child, id)
    }

    /// Runs [`WRITE`] on `target` under the real landstrip 0.19.2, fd 3 to `port`.
    pub fn write(&self, port: u16, target: &Path) -> Child {
        self.write_with_policy(&self.landstrip_policy(), port, target)
    }

    /// Like [`AppWorld::write`], with a landstrip policy built earlier (from files that
    /// have changed since, or that no longer parse).
    pub fn write_with_policy(&self, policy: &Path, port: u16, target: &Path) -> Child {
        launch_landstrip_with_policy(
            Landstrip::V0_19,
            policy,
            &self.project,
            &self.home,
            port,
            None,
            &[PYTHON, "-c", WRITE, path_str(target)],
        )
    }

    /// Runs [`WRITE_EACH`] on `targets` under the real landstrip 0.19.2 with the plugin's
    /// session hello for `session`, fd 3 to `port`: one run, the files written in order.
    pub fn write_each(&self, port: u16, session: &str, targets: &[&Path]) -> Child {
        let mut program = vec![PYTHON, "-c", WRITE_EACH];
        program.extend(targets.iter().map(|t| path_str(t)));
        self.launch(port, Some(session), &program)
    }

    /// Answers the next `count` prompts `once` through `ctl` as a person at a shell would
    /// (`ctl pending --wait --json`, then `ctl answer ID once`); returns the paths answered.
    pub async fn answer_once(&self, count: usize) -> Vec<String> {
        let mut answered = Vec::new();
        for _ in 0..count {
            let waited = self.ctl_ok(&["pending", "--wait", "--json"]).await;
            let items: serde_json::Value = serde_json::from_str(&waited)
                .unwrap_or_else(|e| panic!("ctl pending --json: {e}: {waited:?}"));
            let item = &items[0];
            let id = item["id"].as_u64().expect("a prompt id").to_string();
            self.ctl_ok(&["answer", &id, "once"]).await;
            answered.push(item["path"].as_str().unwrap_or_default().to_owned());
        }
        answered
    }

    /// The first activity log line for which `wanted` holds, once the app has written it
    /// (the log is written off the hot path, a moment after the answer). Awaited through
    /// inotify, bounded.
    pub async fn activity_entry(
        &self,
        what: &str,
        wanted: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let file = self.activity_file();
        let dir = file.parent().expect("dir");
        std::fs::create_dir_all(dir).expect("mkdir data dir");
        let (tx, mut changes) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = tx.send(());
        })
        .expect("inotify watcher");
        watcher
            .watch(dir, notify::RecursiveMode::NonRecursive)
            .expect("watch the data dir");
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            // Watch first, then look: a write in between is seen by the look.
            let log = std::fs::read_to_string(&file).unwrap_or_default();
            let found = log
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|entry| wanted(entry));
            if let Some(entry) = found {
                return entry;
            }
            match tokio::time::timeout_at(deadline, changes.recv()).await {
                Ok(Some(())) => {}
                Ok(None) => panic!("the inotify watcher stopped"),
                Err(_) => panic!("no activity entry {what} within {EVENT_TIMEOUT:?}:\n{log}"),
            }
        }
    }
}

/// A real run whose write the app holds, its connection through a tap (see
/// [`AppWorld::tapped_held_write`]).
pub struct TappedWrite {
    /// The run.
    pub child: Child,
    /// Its connection to the app.
    pub tap: crate::tap::Tap,
    /// The query the tap saw.
    pub query: serde_json::Value,
    /// The file it writes.
    pub target: PathBuf,
}

/// A Python program that writes "hello" to each of argv[1:] in order and prints one line
/// per file: ok, or EACCES (the exit status is 13 if any failed).
pub const WRITE_EACH: &str = r#"
import sys
failed = False
for path in sys.argv[1:]:
    try:
        with open(path, "w") as f:
            f.write("hello")
        print("ok")
    except PermissionError as e:
        print("EACCES" if e.errno == 13 else repr(e))
        failed = True
sys.exit(13 if failed else 0)
"#;

/// The test's X display, or a failure saying how to run the suite.
pub fn display() -> std::ffi::OsString {
    std::env::var_os("DISPLAY")
        .filter(|d| !d.is_empty())
        .expect(
            "DISPLAY is not set: the app needs an X display; run these tests under \
             `xvfb-run -a dbus-run-session -- cargo test -p landstrip-tray-tests --test <suite>`",
        )
}

/// A test path as the UTF-8 string the protocol carries.
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}

/// The captured output of a process so far, and a count of its lines to await changes.
pub type CapturedLog = (Arc<Mutex<String>>, watch::Receiver<usize>);

/// Collects `stream`'s lines into a shared string, counting them on a watch channel.
pub fn capture(stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> CapturedLog {
    let log = Arc::new(Mutex::new(String::new()));
    let (lines_tx, lines) = watch::channel(0usize);
    let sink = log.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stream).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            let mut log = sink.lock().unwrap_or_else(PoisonError::into_inner);
            log.push_str(&line);
            log.push('\n');
            drop(log);
            lines_tx.send_modify(|n| *n += 1);
        }
    });
    (log, lines)
}

/// The running app: its process (killed if the test ends early) and its stderr so far.
pub struct RunningApp {
    child: Child,
    /// Its pid.
    pub pid: u32,
    log: Arc<Mutex<String>>,
    lines: watch::Receiver<usize>,
    port: Option<u16>,
}

impl RunningApp {
    /// Its stderr so far.
    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The port [`RunningApp::serving`] found.
    pub fn port(&self) -> u16 {
        self.port
            .expect("the app's port is known once RunningApp::serving returned")
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

    /// Resolves when the app exits (for `select!` against another wait).
    pub async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }

    /// Waits (bounded) until the app's stderr contains `needle`.
    pub async fn wait_for_log(&mut self, needle: &str) {
        self.wait_for_log_count(needle, 1).await;
    }

    /// Waits (bounded) until `needle` appears at least `count` times in the app's stderr.
    pub async fn wait_for_log_count(&mut self, needle: &str, count: usize) {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while self.log().matches(needle).count() < count {
            match tokio::time::timeout_at(deadline, self.lines.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => panic!(
                    "the app closed stderr without logging {needle:?} {count} time(s); its log:\n{}",
                    self.log()
                ),
                Err(_) => panic!(
                    "the app did not log {needle:?} {count} time(s) within {EVENT_TIMEOUT:?}; its log:\n{}",
                    self.log()
                ),
            }
        }
    }

    /// Waits until the control socket is up (the app logs it once it is in place).
    pub async fn wait_for_control(&mut self) {
        self.wait_for_log("control socket at").await;
    }

    /// Waits (bounded, through inotify) until the app's own discovery record for
    /// `project` is published; returns its port (also kept for [`RunningApp::port`]).
    pub async fn serving(&mut self, world: &AppWorld, project: &Path) -> u16 {
        let mut watch = world.watch();
        self.serving_within(world, project, &mut watch, EVENT_TIMEOUT)
            .await
    }

    /// Like [`RunningApp::serving`], with a watch set up earlier and a bound of its own.
    pub async fn serving_within(
        &mut self,
        world: &AppWorld,
        project: &Path,
        watch: &mut DirWatch,
        within: Duration,
    ) -> u16 {
        let pid = self.pid;
        let record = watch
            .until(self, within, "the app's discovery file", || {
                world.record(project).filter(|r| r.pid == pid)
            })
            .await;
        self.port = Some(record.port);
        record.port
    }

    /// Sends `signal` (`TERM`, `INT`…) and waits (bounded) for the app to exit; returns
    /// its exit code.
    pub async fn signal(&mut self, signal: &str) -> Option<i32> {
        let sent = tokio::time::timeout(
            EVENT_TIMEOUT,
            Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(self.pid.to_string())
                .status(),
        )
        .await
        .unwrap_or_else(|_| panic!("kill -{signal} did not return"))
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

    /// Sends SIGTERM and waits (bounded) for the app to exit; returns its exit code.
    pub async fn terminate(&mut self) -> Option<i32> {
        self.signal("TERM").await
    }

    /// SIGTERM, a bounded wait, and exit code 0: everything the app was going to send is
    /// sent.
    pub async fn quit(&mut self) {
        let code = self.terminate().await;
        assert_eq!(code, Some(0), "exit status; the app's log:\n{}", self.log());
    }
}

/// inotify on the runtime directory and, once it exists, the discovery directory: each
/// event re-evaluates a condition, so the tests await changes instead of polling.
pub struct DirWatch {
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
    pub async fn until<T>(
        &mut self,
        app: &mut RunningApp,
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

/// A run of [`WRITE`] or [`crate::SH_WRITE`] whose write went through: "ok", exit 0, and
/// the file holds "hello".
pub fn assert_written(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "ok", "{done:?}");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(std::fs::read_to_string(target).expect("written"), "hello");
}

/// A run of [`WRITE`] or [`crate::SH_WRITE`] whose write was refused: "EACCES", exit 13,
/// and no file.
pub fn assert_refused(done: &Finished, target: &Path) {
    assert_eq!(done.stdout.trim(), "EACCES", "{done:?}");
    assert_eq!(done.code, Some(13), "{done:?}");
    assert!(!target.exists(), "the refused write went through");
}
