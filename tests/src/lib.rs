//! Shared helpers for the end-to-end suites: a private environment (home, project,
//! runtime and data directories) with the core's service running in it, and launching the
//! real landstrip binary the way opencode-landstrip launches it.

pub mod bench;
pub mod chromium;
pub mod desktop;
pub mod memory;
pub mod notification_server;
pub mod opencode;
pub mod phone;
pub mod phone_page;
pub mod plugin;
pub mod portal;
pub mod real_app;
pub mod settings_window;
pub mod sshd;
pub mod tap;
pub mod tray_host;
pub mod webdriver;
pub mod x11;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::decision::broker::{Broker, BrokerEvent, PendingPrompt};
use landstrip_tray_core::policy;
use landstrip_tray_core::serving::discovery::{DiscoveryDir, ReadOutcome};
use landstrip_tray_core::serving::service::Service;
use tokio::process::{Child, Command};
use tokio::sync::broadcast;

/// How long any single awaited event may take before a test fails (a bound, not a sleep).
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A landstrip release and the trap flag it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landstrip {
    /// 0.19.2: `landstrip run --trap 3`.
    V0_19,
    /// 0.18.27: `landstrip run --trap-fd 3`.
    V0_18,
}

impl Landstrip {
    /// The release's version string.
    pub fn version(self) -> &'static str {
        match self {
            Landstrip::V0_19 => "0.19.2",
            Landstrip::V0_18 => "0.18.27",
        }
    }

    fn trap_flag(self) -> &'static str {
        match self {
            Landstrip::V0_19 => "--trap",
            Landstrip::V0_18 => "--trap-fd",
        }
    }

    /// The binary, as `scripts/setup.sh --test` fetched it from the npm registry.
    pub fn binary(self) -> PathBuf {
        let bin = tools_dir()
            .join("landstrip")
            .join(self.version())
            .join("landstrip");
        assert!(
            bin.is_file(),
            "{} is missing: run scripts/setup.sh --test (it fetches landstrip {} from the npm registry)",
            bin.display(),
            self.version()
        );
        bin
    }
}

/// This process's threads named `name` (as /proc shows them: 15 bytes at most).
pub fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// A port on 127.0.0.1 that nothing listens on while the returned socket lives: it is
/// bound and not listening, so a connection to it is refused, and neither another process
/// nor the kernel's next `bind(:0)` can take it meanwhile (a port bound and released
/// could be).
pub fn closed_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind((std::net::Ipv4Addr::LOCALHOST, 0).into())
        .expect("bind");
    let port = socket.local_addr().expect("addr").port();
    (socket, port)
}

/// Where the ignored `screenshots*` tests write their images (created): the directory in
/// `$LANDSTRIP_TRAY_SCREENSHOTS`, else the repository's docs/.
pub fn screenshot_dir() -> PathBuf {
    let out = std::env::var_os("LANDSTRIP_TRAY_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    std::fs::create_dir_all(&out).expect("mkdir screenshots");
    out
}

/// Waits (bounded by [`EVENT_TIMEOUT`]) until `check` holds, re-evaluated every 50 ms: for
/// what has no event to await (a file another process writes, a process's exit).
pub async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded by [`EVENT_TIMEOUT`]) until `check` gives Some, re-asked every 100 ms,
/// and returns it: for state another process holds that has no event to await here (a
/// compositor's window list).
pub async fn until_some<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {EVENT_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A PNG file's width and height (panics if it is not a PNG).
pub fn png_size(file: &Path) -> (u32, u32) {
    let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(
        bytes.len() > 24 && bytes.starts_with(b"\x89PNG\r\n\x1a\n") && &bytes[12..16] == b"IHDR",
        "{} is not a PNG",
        file.display()
    );
    let be =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (be(16), be(20))
}

/// The themes screenshots are taken in: each one's name and the app's environment for it.
///
/// The pictures are taken with WebKit's compositing on (the app turns it off unless told
/// otherwise): in non-composited mode WebKitWebDriver's screenshot command never answers
/// for the prompt window and for the settings window's first view (WebKitGTK 2.50 here;
/// seen, not understood). The pages look the same either way (compared by eye on the
/// activity view, which could be taken both ways), and on screen the app draws them
/// without compositing (tests/benches/desktop.rs reads its pixels from the X server).
pub fn screenshot_themes() -> [(&'static str, Vec<(&'static str, &'static str)>); 2] {
    const COMPOSITING: (&str, &str) = ("WEBKIT_DISABLE_COMPOSITING_MODE", "0");
    [
        ("light", vec![COMPOSITING]),
        ("dark", vec![("GTK_THEME", "Adwaita:dark"), COMPOSITING]),
    ]
}

/// Where `scripts/setup.sh --test` puts what the tests fetch: `$LANDSTRIP_TRAY_TOOLS`, else
/// the repository's `.tools`.
pub fn tools_dir() -> PathBuf {
    std::env::var_os("LANDSTRIP_TRAY_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools"))
}

/// A private world for one test: its own home, project, discovery and data directories,
/// and the core service serving the project.
pub struct TestEnv {
    /// Holds every directory below; removed at the end.
    pub root: tempfile::TempDir,
    /// The fake home (policy `~` and the global sandbox.json live here).
    pub home: PathBuf,
    /// The served project (canonical).
    pub project: PathBuf,
    /// A directory outside the project and home, for writes that need approval.
    pub outside: PathBuf,
    /// The discovery directory.
    pub discovery: DiscoveryDir,
    /// The running service.
    pub service: Service,
    /// Prompt events, subscribed before anything was served.
    pub events: broadcast::Receiver<BrokerEvent>,
}

impl TestEnv {
    /// Sets up the directories and starts serving the project.
    pub async fn start() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(root.path()).expect("canonical tempdir");
        let home = base.join("home");
        let project = base.join("project");
        let outside = base.join("outside");
        for dir in [&home, &project, &outside] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let discovery = DiscoveryDir::new(base.join("runtime/opencode-landstrip"));
        let broker = Broker::new(Arc::new(
            ActivityLog::open(&base.join("data/activity.jsonl"), 1 << 20).expect("log"),
        ));
        let events = broker.subscribe();
        let service = Service::start(broker, home.clone(), discovery.clone(), None);
        service
            .add_project(&project, false)
            .await
            .expect("serve the project");
        Self {
            root,
            home,
            project,
            outside,
            discovery,
            service,
            events,
        }
    }

    /// The broker.
    pub fn broker(&self) -> &Broker {
        self.service.broker()
    }

    /// The port a launcher finds in the discovery file, as opencode-landstrip reads it.
    pub fn discovered_port(&self) -> u16 {
        match self.discovery.read(&self.project) {
            ReadOutcome::Record(record) => record.port,
            other => panic!(
                "no discovery record for {}: {other:?}",
                self.project.display()
            ),
        }
    }

    /// Writes the project's `.opencode/sandbox.json`.
    pub fn write_project_policy(&self, json: &str) {
        let dir = self.project.join(".opencode");
        std::fs::create_dir_all(&dir).expect("mkdir .opencode");
        std::fs::write(dir.join("sandbox.json"), json).expect("write sandbox.json");
    }

    /// Builds the landstrip policy file from the merged sandbox.json files, the way the
    /// plugin does before each run.
    pub fn landstrip_policy(&self) -> PathBuf {
        write_landstrip_policy(&self.home, &self.project, self.root.path())
    }

    /// Starts `program` under the real landstrip with fd 3 connected to the port named by
    /// the discovery file, as opencode-landstrip's bash wrapper does.
    pub fn launch(&self, landstrip: Landstrip, session: Option<&str>, program: &[&str]) -> Child {
        self.launch_via(landstrip, self.discovered_port(), session, program)
    }

    /// Like [`TestEnv::launch`] but connecting fd 3 to `port` (a proxy, say).
    pub fn launch_via(
        &self,
        landstrip: Landstrip,
        port: u16,
        session: Option<&str>,
        program: &[&str],
    ) -> Child {
        launch_landstrip(
            landstrip,
            self.root.path(),
            &self.project,
            &self.home,
            port,
            session,
            program,
        )
    }

    /// The next prompt added, failing the test after [`EVENT_TIMEOUT`].
    pub async fn next_prompt(&mut self) -> PendingPrompt {
        loop {
            match tokio::time::timeout(EVENT_TIMEOUT, self.events.recv()).await {
                Ok(Ok(BrokerEvent::Added(prompt))) => return prompt,
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => panic!("broker events: {e}"),
                Err(_) => panic!("no prompt within {EVENT_TIMEOUT:?}"),
            }
        }
    }

    /// The next event, failing the test after [`EVENT_TIMEOUT`].
    pub async fn next_event(&mut self) -> BrokerEvent {
        match tokio::time::timeout(EVENT_TIMEOUT, self.events.recv()).await {
            Ok(Ok(event)) => event,
            Ok(Err(e)) => panic!("broker events: {e}"),
            Err(_) => panic!("no broker event within {EVENT_TIMEOUT:?}"),
        }
    }
}

/// Builds the landstrip policy file for `project` from the merged sandbox.json files (the
/// global one under `home`), the way the plugin does before each run; writes it in `scratch`.
pub fn write_landstrip_policy(home: &Path, project: &Path, scratch: &Path) -> PathBuf {
    write_landstrip_policy_from(
        policy::PolicyPaths::new(home, project),
        home,
        project,
        scratch,
    )
}

/// Like [`write_landstrip_policy`], the sandbox.json files at `paths` (a real app's world,
/// whose `XDG_CONFIG_HOME` puts the global file elsewhere than this process would).
pub fn write_landstrip_policy_from(
    paths: policy::PolicyPaths,
    home: &Path,
    project: &Path,
    scratch: &Path,
) -> PathBuf {
    let loaded = policy::load_paths(paths).expect("policy loads");
    let json = policy::landstrip_policy_json(&loaded.config, project, home);
    let path = scratch.join(format!("policy-{}.json", unique()));
    std::fs::write(&path, serde_json::to_vec_pretty(&json).expect("json")).expect("write policy");
    path
}

/// Starts `program` under the real landstrip in `project` with `HOME=home`, its policy
/// built from that project's and home's sandbox.json files (written in `scratch`), and fd 3
/// connected to 127.0.0.1:`port`, as opencode-landstrip's bash wrapper does. `session`
/// sends the 0.19 plugin's session hello first. The child is killed when dropped.
pub fn launch_landstrip(
    landstrip: Landstrip,
    scratch: &Path,
    project: &Path,
    home: &Path,
    port: u16,
    session: Option<&str>,
    program: &[&str],
) -> Child {
    let policy = write_landstrip_policy(home, project, scratch);
    launch_landstrip_with_policy(landstrip, &policy, project, home, port, session, program)
}

/// Like [`launch_landstrip`], with the landstrip policy file given (the real plugin's, say).
pub fn launch_landstrip_with_policy(
    landstrip: Landstrip,
    policy: &Path,
    project: &Path,
    home: &Path,
    port: u16,
    session: Option<&str>,
    program: &[&str],
) -> Child {
    landstrip_command(landstrip, policy, project, home, port, session, program)
        .spawn()
        .expect("spawn landstrip")
}

/// The command [`launch_landstrip_with_policy`] spawns, for a caller to add to (landstrip's
/// own environment, say, as opencode's shell tool passes its own on).
pub fn landstrip_command(
    landstrip: Landstrip,
    policy: &Path,
    project: &Path,
    home: &Path,
    port: u16,
    session: Option<&str>,
    program: &[&str],
) -> Command {
    let hello = session
        .map(|s| {
            let line = serde_json::json!({"kind": "opencode-landstrip-session", "sessionID": s})
                .to_string();
            format!(" && printf '%s\\n' '{line}' >&3")
        })
        .unwrap_or_default();
    let wrapper = format!("exec 3<>/dev/tcp/127.0.0.1/{port}{hello} && exec \"$@\"");
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(wrapper).arg("bash");
    cmd.arg(landstrip.binary())
        .args(["run", landstrip.trap_flag(), "3", "-p"])
        .arg(policy)
        .arg("--");
    cmd.args(program);
    cmd.current_dir(project)
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// A finished program's status and output.
#[derive(Debug)]
pub struct Finished {
    /// The exit code (None if killed by a signal).
    pub code: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Waits for a launched program, failing the test after [`EVENT_TIMEOUT`].
pub async fn finish(child: Child) -> Finished {
    let output = tokio::time::timeout(EVENT_TIMEOUT, child.wait_with_output())
        .await
        .expect("the sandboxed program did not exit in time")
        .expect("wait");
    Finished {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Writes "hello" to argv[1] with the shell (another program than Python): prints ok, or
/// EACCES and exits 13.
pub const SH_WRITE: &str =
    r#"if echo hello > "$1" 2>/dev/null; then echo ok; else echo EACCES; exit 13; fi"#;

/// A Python program that reads argv[1]; prints its content, or EACCES and exits 13.
pub const READ: &str = r#"
import sys
try:
    print(open(sys.argv[1]).read())
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
"#;

/// A Python program that writes "hello" to argv[1]; prints ok, or EACCES and exits 13.
pub const WRITE: &str = r#"
import sys
try:
    with open(sys.argv[1], "w") as f:
        f.write("hello")
    print("ok")
except PermissionError as e:
    print("EACCES" if e.errno == 13 else repr(e))
    sys.exit(13)
"#;

/// The system Python (not a version-manager shim, which would read the home directory).
pub const PYTHON: &str = "/usr/bin/python3";

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Debian's validator (`desktop-file-validate`, from desktop-file-utils) on a desktop entry:
/// it must exit 0 and say nothing, warnings included.
pub fn desktop_file_validate(file: &Path) {
    let out = std::process::Command::new("desktop-file-validate")
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("desktop-file-validate: {e}: install desktop-file-utils (scripts/setup.sh --test does)")
        });
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "desktop-file-validate {}: {:?}\nstdout:\n{}\nstderr:\n{}\n{}",
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(file).unwrap_or_default()
    );
}

/// `write PATH` or `PATH` (a read): prints "write ok", "read ok" or the step and its
/// errno's name (flushed).
pub const CANARY_STEP: &str = r#"
import errno, sys
op, path = ("write", sys.argv[2]) if sys.argv[1] == "write" else ("read", sys.argv[1])
try:
    if op == "write":
        open(path, "w").write("x")
    else:
        open(path).read()
    print(op, "ok", flush=True)
except OSError as e:
    print(op, errno.errorcode.get(e.errno, repr(e)), flush=True)
"#;

/// A run of several confined processes: a `sleep` in the background, then (once `$3`
/// exists, if given) [`CANARY_STEP`] (`$1`) reading `$2`; the sleep is ended after the read.
pub const CANARY_RUN: &str = r#"sleep 600 & s=$!
if [ -n "$3" ]; then until [ -e "$3" ]; do sleep 0.05; done; fi
python3 -c "$1" "$2"; kill $s"#;

/// The state letter of `/proc/PID/stat` (`T` stopped, `Z` a zombie…); None once the
/// process is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}
