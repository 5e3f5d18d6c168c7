//! `landstrip-tray run`: runs a program under the real landstrip with its trap socket
//! connected to the presenter serving the project, as opencode-landstrip's bash wrapper
//! does, but with the descriptor connected here (no `/dev/tcp` shell trick). No Tauri: it
//! talks to the running app over the control socket. See docs/ARCHITECTURE.md, "Layout".
//!
//! It never runs the program unsandboxed and never twice: every check happens before the
//! single spawn, and nothing after it retries.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use landstrip_tray_core::paths::{control_socket_from_env, AppPaths};
use landstrip_tray_core::policy;
use landstrip_tray_core::serving::discovery::{record_is_live, DiscoveryDir, ReadOutcome};
use landstrip_tray_core::serving::service::ProjectStatus;
use landstrip_tray_core::surfaces::control::{Client, ControlError, Reply, Request, Response};
use landstrip_tray_core::{CaughtSignals, ReceivedSignal, SignalReceiver};

use super::Launch;
use crate::boot::own_state;

/// The launcher could not start the program (like `env`'s 125).
const FAILED: u8 = 125;
/// No landstrip binary (the shell's "command not found").
const NO_LANDSTRIP: u8 = 127;
/// How long the app may take to answer a control request or accept the trap connection.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the program was not started; each says what to do.
#[derive(Debug, thiserror::Error)]
enum LaunchError {
    /// The core's sentence: why, and how to install it.
    #[error("{0}")]
    NoLandstrip(String),
    #[error("{0}")]
    Failed(String),
    #[error("interrupted (signal {0}) before the program started; nothing was run")]
    Interrupted(i32),
}

impl LaunchError {
    fn code(&self) -> u8 {
        match self {
            Self::NoLandstrip(_) => NO_LANDSTRIP,
            Self::Failed(_) => FAILED,
            Self::Interrupted(signal) => u8::try_from(128 + signal).unwrap_or(FAILED),
        }
    }
}

fn failed(message: impl Into<String>) -> LaunchError {
    LaunchError::Failed(message.into())
}

/// The spelling of landstrip's trap-descriptor flag, which changed in 0.19.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrapFlag {
    /// 0.19: `--trap FD`.
    Trap,
    /// 0.18: `--trap-fd FD`.
    TrapFd,
}

impl TrapFlag {
    fn as_str(self) -> &'static str {
        match self {
            Self::Trap => "--trap",
            Self::TrapFd => "--trap-fd",
        }
    }

    /// Reads the flag off `landstrip run --help`.
    fn from_help(help: &str) -> Option<Self> {
        let has = |flag: &str| {
            help.split(|c: char| c.is_whitespace() || c == ',' || c == '=')
                .any(|word| word == flag)
        };
        if has("--trap-fd") {
            Some(Self::TrapFd)
        } else if has("--trap") {
            Some(Self::Trap)
        } else {
            None
        }
    }
}

/// Runs `launch`; returns the program's exit status, or the launcher's own failure code.
pub fn launch(launch: Launch) -> ExitCode {
    // Caught first: from here on no signal can end the launcher before the program (see
    // run_forwarding_signals).
    let signals = match CaughtSignals::catch(&FORWARDED) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("landstrip-tray run: cannot take over signals: {e}");
            return ExitCode::from(FAILED);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("landstrip-tray run: {e}");
            return ExitCode::from(FAILED);
        }
    };
    let result = runtime.block_on(async {
        let signals = signals
            .receiver()
            .map_err(|e| failed(format!("cannot listen for signals: {e}")))?;
        run(launch, signals).await
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("landstrip-tray run: {e}");
            ExitCode::from(e.code())
        }
    }
}

/// Everything checked and connected before the single spawn.
struct Prepared {
    landstrip: PathBuf,
    trap: Option<(TrapFlag, TcpStream)>,
    policy_file: PolicyFile,
}

async fn run(launch: Launch, mut signals: SignalReceiver) -> Result<u8, LaunchError> {
    // Ctrl-C while waiting for the app ends the run before anything was started.
    let prepared = tokio::select! {
        prepared = prepare(&launch) => prepared?,
        signal = signals.recv() => {
            let signal = signal.map_err(|e| failed(format!("reading signals: {e}")))?;
            return Err(LaunchError::Interrupted(signal.signal));
        }
    };
    let mut command = tokio::process::Command::new(&prepared.landstrip);
    command.arg("run");
    if let Some((flag, stream)) = &prepared.trap {
        landstrip_tray_core::inheritable(stream.as_fd())
            .map_err(|e| failed(format!("cannot pass the trap socket to landstrip: {e}")))?;
        use std::os::fd::AsRawFd;
        command
            .arg(flag.as_str())
            .arg(stream.as_raw_fd().to_string());
    }
    command.arg("-p").arg(prepared.policy_file.path());
    for extra in &launch.policies {
        command.arg("-p").arg(extra);
    }
    command.arg("--").args(&launch.program);
    // stdin, stdout and stderr are inherited, and the process group too: the program
    // talks to this terminal as if started directly (reads, raw mode, Ctrl-Z, fg).
    let status = run_forwarding_signals(command, &mut signals).await;
    drop(prepared);
    status.map(exit_code)
}

async fn prepare(launch: &Launch) -> Result<Prepared, LaunchError> {
    let landstrip = find_landstrip(
        std::env::var_os("LANDSTRIP"),
        std::env::var_os("PATH").as_deref(),
    )?;
    let project = match &launch.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| failed(format!("cannot read the current directory: {e}")))?,
    };
    let project = std::fs::canonicalize(&project)
        .map_err(|e| failed(format!("project {}: {e}", project.display())))?;
    let paths = AppPaths::from_env().map_err(|e| failed(e.to_string()))?;
    let home = paths.home.clone();
    let loaded = policy::load_effective(&home, &project).map_err(|e| failed(e.to_string()))?;
    say_unenforced(&loaded.config);

    // The trap socket first: without a presenter nothing is started (fails closed).
    let trap = if launch.no_prompt {
        None
    } else {
        let flag = trap_flag(&landstrip).await?;
        let port = presenter_port(&project).await?;
        let stream = connect_trap(port, &session_name(&launch.program))?;
        Some((flag, stream))
    };

    let mut given = policy::landstrip_policy_json(&loaded.config, &project, &home);
    // The app's own state, denied even where an allow entry covers it (ARCHITECTURE.md,
    // "Decision rules", rule 1).
    own_state(&paths).deny_in(&mut given);
    let policy_file = PolicyFile::write(&given)?;
    Ok(Prepared {
        landstrip,
        trap,
        policy_file,
    })
}

/// The core's lookup (`LANDSTRIP`, then `PATH`), its error as the launcher's.
fn find_landstrip(env: Option<OsString>, path: Option<&OsStr>) -> Result<PathBuf, LaunchError> {
    landstrip_tray_core::landstrip::find_landstrip(env, path)
        .map_err(|missing| LaunchError::NoLandstrip(missing.to_string()))
}

/// Asks the installed landstrip which trap flag it speaks.
async fn trap_flag(landstrip: &Path) -> Result<TrapFlag, LaunchError> {
    let mut command = tokio::process::Command::new(landstrip);
    let output = command
        .args(["run", "--help"])
        .stdin(std::process::Stdio::null())
        .output();
    let output = tokio::time::timeout(REPLY_TIMEOUT, output)
        .await
        .map_err(|_| failed(format!("{} run --help did not finish", landstrip.display())))?
        .map_err(|e| failed(format!("cannot run {}: {e}", landstrip.display())))?;
    let help = String::from_utf8_lossy(&output.stdout);
    TrapFlag::from_help(&help).ok_or_else(|| {
        failed(format!(
            "{} run --help names neither --trap nor --trap-fd: a landstrip too old or too new \
             for this launcher (0.18 and 0.19 are known)",
            landstrip.display()
        ))
    })
}

/// The port of the presenter serving `project`: the live discovery file's, after asking
/// the running app to serve the project if nobody does.
async fn presenter_port(project: &Path) -> Result<u16, LaunchError> {
    let discovery = DiscoveryDir::from_env();
    if let ReadOutcome::Record(record) = discovery.read(project) {
        if record_is_live(&record) {
            return Ok(record.port);
        }
    }
    let not_running = || {
        failed(format!(
            "landstrip-tray is not running, so nothing would answer the sandbox's questions \
             about {}; start it (`landstrip-tray &`, or \"Landstrip Tray\" in the desktop's \
             menu) and try again, or use --no-prompt for plain denials. Nothing was run.",
            project.display()
        ))
    };
    let mut client = match Client::connect(&control_socket_from_env()).await {
        Ok(client) => client,
        Err(ControlError::NotRunning(_)) => return Err(not_running()),
        Err(e) => return Err(failed(format!("cannot reach landstrip-tray: {e}"))),
    };
    // For this run only, as `--project` is: the user did not ask to keep it.
    let request = Request::AddProject {
        dir: project.to_path_buf(),
        persist: false,
    };
    let reply = tokio::time::timeout(REPLY_TIMEOUT, client.request(&request))
        .await
        .map_err(|_| failed("landstrip-tray did not answer in time"))?;
    let info = match reply {
        Ok(Response::Ok(Reply::Project(info))) => info,
        Ok(Response::Ok(_)) => return Err(failed("landstrip-tray gave an unexpected reply")),
        Ok(Response::Error { message }) => {
            return Err(failed(format!(
                "landstrip-tray would not serve {}: {message}",
                project.display()
            )))
        }
        Err(e) => return Err(failed(format!("landstrip-tray: {e}"))),
    };
    Ok(match info.status {
        ProjectStatus::Conflict { other_port, .. } => other_port,
        _ => info.port,
    })
}

/// Connects the trap socket and says which run its queries come from.
fn connect_trap(port: u16, session: &str) -> Result<TcpStream, LaunchError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(|e| {
        failed(format!(
            "cannot connect to the presenter on {addr}: {e}; nothing was run"
        ))
    })?;
    let hello = serde_json::json!({"kind": "opencode-landstrip-session", "sessionID": session});
    let mut line = hello.to_string();
    line.push('\n');
    stream
        .write_all(line.as_bytes())
        .map_err(|e| failed(format!("cannot greet the presenter: {e}; nothing was run")))?;
    Ok(stream)
}

/// `run:<program>:<pid>`: what the app shows as the session these queries came from.
fn session_name(program: &[OsString]) -> String {
    let name = program
        .first()
        .map(Path::new)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = name.chars().take(64).collect();
    format!("run:{name}:{}", std::process::id())
}

/// Says which policy fields landstrip cannot enforce: the plugin enforces domains through
/// its own HTTP proxy, which a plain run does not have.
fn say_unenforced(config: &policy::SandboxConfig) {
    let net = &config.network;
    for (field, entries) in [
        ("network.allowedDomains", &net.allowed_domains),
        ("network.deniedDomains", &net.denied_domains),
    ] {
        if !entries.is_empty() {
            eprintln!(
                "landstrip-tray run: {field} ({}) is not enforced here: only the \
                 opencode-landstrip plugin's HTTP proxy enforces domains; network access \
                 follows network.allowNetwork",
                entries.join(", ")
            );
        }
    }
    if !config.enabled {
        eprintln!(
            "landstrip-tray run: the policy says \"enabled\": false (the plugin would not \
             sandbox); this launcher sandboxes anyway"
        );
    }
}

/// The signals the launcher takes over: what a terminal or a caller sends to end a run.
const FORWARDED: [i32; 4] = [
    libc_signal::SIGHUP,
    libc_signal::SIGINT,
    libc_signal::SIGQUIT,
    libc_signal::SIGTERM,
];

/// Spawns `command` once and waits for it, passing on the signals the program did not get.
///
/// landstrip (0.18.27 and 0.19.2) passes no signal on to the program it runs. Signalled
/// alone, it keeps running until the program ends, then dies of the signal itself;
/// signalled with the program (a whole process group), it dies of it at once, while the
/// program may still be handling it. The program runs in landstrip's process group, which
/// is the launcher's (inherited, so the terminal, job control and reads from it work as
/// they would without the launcher). So:
/// - a signal from the kernel (Ctrl-C, Ctrl-\, a hang-up: the terminal signals the whole
///   foreground group) reached the program already: the launcher only keeps waiting;
/// - a signal sent by a process (`kill PID` aimed at the launcher) is sent on to the
///   program (landstrip's children) and to landstrip, so the run ends as after Ctrl-C.
///
/// A `kill` aimed at the whole group (`kill -INT -PGID`) reaches the program twice: once
/// directly, once through here; nothing tells it apart from a `kill` of the launcher.
async fn run_forwarding_signals(
    mut command: tokio::process::Command,
    signals: &mut SignalReceiver,
) -> Result<ExitStatus, LaunchError> {
    // The program outlives landstrip when both were signalled: it comes to us then.
    if let Err(e) = landstrip_tray_core::become_subreaper() {
        eprintln!("landstrip-tray run: cannot wait for the program beyond landstrip: {e}");
    }
    let mut child = command
        .spawn()
        .map_err(|e| failed(format!("cannot start landstrip: {e}")))?;
    let pid = child.id();
    let mut listening = true;
    loop {
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(|e| failed(format!("waiting for landstrip: {e}")))?;
                if status.signal().is_some() {
                    wait_for_the_program(signals).await;
                }
                return Ok(status);
            }
            received = signals.recv(), if listening => match received {
                Ok(received) => {
                    if let Some(pid) = pid {
                        forward(pid, received);
                    }
                }
                // Signals stay blocked: the launcher still outlives the program.
                Err(e) => {
                    eprintln!("landstrip-tray run: cannot read signals any more: {e}");
                    listening = false;
                }
            },
        }
    }
}

/// After landstrip died of a signal: waits for the program (its orphans, now ours, still in
/// our process group; a daemon it started has a session of its own and is not waited
/// for), passing on what some process sends meanwhile, so the terminal is not handed back
/// while the program is still finishing.
async fn wait_for_the_program(signals: &mut SignalReceiver) {
    let own = std::process::id();
    let Ok(group) = landstrip_tray_core::process_group(0) else {
        return;
    };
    loop {
        let orphans: Vec<u32> = children_of(own)
            .into_iter()
            .filter(|&pid| landstrip_tray_core::process_group(pid).ok() == Some(group))
            .collect();
        let Some(&orphan) = orphans.first() else {
            return;
        };
        loop {
            tokio::select! {
                _ = landstrip_tray_core::wait_for_exit(orphan) => break,
                received = signals.recv() => {
                    if let Ok(ReceivedSignal { signal, sender: Some(sender) }) = received {
                        if !orphans.contains(&sender) {
                            let _ = landstrip_tray_core::send_signal(orphan, signal);
                        }
                    }
                }
            }
        }
        if !matches!(landstrip_tray_core::reap(orphan), Ok(true)) {
            // Not ours to reap after all (or gone): stop rather than spin.
            return;
        }
    }
}

/// Sends `received` on to landstrip (`pid`) and its children, unless the kernel sent it
/// to the whole group or it came from the run's own processes.
fn forward(landstrip: u32, received: ReceivedSignal) {
    let Some(sender) = received.sender else {
        return;
    };
    let children = children_of(landstrip);
    if sender == landstrip || children.contains(&sender) {
        return;
    }
    // Either may have just exited: the wait reports that.
    for pid in children.into_iter().chain([landstrip]) {
        let _ = landstrip_tray_core::send_signal(pid, received.signal);
    }
}

/// The direct children of `pid`, from `/proc/PID/task/*/children` (each thread's own).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut children: Vec<u32> = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|child| child.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    children.sort_unstable();
    children.dedup();
    children
}

/// The signal numbers taken over (Linux's; std has no names for them).
mod libc_signal {
    pub const SIGHUP: i32 = 1;
    pub const SIGINT: i32 = 2;
    pub const SIGQUIT: i32 = 3;
    pub const SIGTERM: i32 = 15;
}

/// The program's status as ours: its code, or 128+N when signal N killed it.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(FAILED),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(FAILED),
        (None, None) => FAILED,
    }
}

/// The landstrip policy, in a private file (0600, a name nobody can guess) removed when
/// the run ends.
struct PolicyFile(tempfile::NamedTempFile);

impl PolicyFile {
    fn write(json: &serde_json::Value) -> Result<Self, LaunchError> {
        let dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|v| !v.is_empty())
            .map_or_else(std::env::temp_dir, PathBuf::from);
        let bytes = serde_json::to_vec_pretty(json).map_err(|e| failed(e.to_string()))?;
        let mut file = tempfile::Builder::new()
            .prefix("landstrip-tray-run-")
            .suffix(".json")
            .tempfile_in(&dir)
            .map_err(|e| {
                failed(format!(
                    "cannot create the policy file in {}: {e}",
                    dir.display()
                ))
            })?;
        file.write_all(&bytes).map_err(|e| {
            failed(format!(
                "cannot write the policy file {}: {e}",
                file.path().display()
            ))
        })?;
        Ok(Self(file))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trap_flag_is_read_off_the_help() {
        let v19 = "      --trap <FD>               Write traps to an already-open file descriptor\n      --inherit <FD[,FD...]>";
        let v18 = "      --trap-fd <FD>            Write traps to an already-open file descriptor";
        assert_eq!(TrapFlag::from_help(v19), Some(TrapFlag::Trap));
        assert_eq!(TrapFlag::from_help(v18), Some(TrapFlag::TrapFd));
        assert_eq!(TrapFlag::from_help("  --debug  Enable debug logs"), None);
    }

    #[test]
    fn landstrip_is_found_from_the_variable_then_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("landstrip");
        std::fs::write(&bin, "#!/bin/sh\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = std::env::join_paths(["/nonexistent".as_ref(), dir.path()]).expect("join");
        assert_eq!(find_landstrip(None, Some(&path)).expect("on PATH"), bin);
        assert_eq!(
            find_landstrip(Some(bin.clone().into()), None).expect("from LANDSTRIP"),
            bin
        );
        let missing =
            find_landstrip(None, Some(OsStr::new("/nonexistent"))).expect_err("not on PATH");
        assert_eq!(missing.code(), NO_LANDSTRIP);
        assert!(missing
            .to_string()
            .contains("npm install -g @landstrip/landstrip-linux-x64"));
        let bad = find_landstrip(Some("/nonexistent/landstrip".into()), Some(&path))
            .expect_err("LANDSTRIP wins over PATH");
        assert!(bad.to_string().contains("LANDSTRIP="), "{bad}");
    }

    #[test]
    fn exit_codes_pass_through() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(2)), 130);
    }
}
