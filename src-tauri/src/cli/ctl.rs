//! The `ctl` client: sends a command line's request to the running instance and prints
//! its reply; also hands a second start's `--project` directories to the running instance.
//! It runs before (and instead of) Tauri: no display, no GTK, so it works over SSH.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use landstrip_tray_core::journal::UndoResult;
use landstrip_tray_core::opencode_cli;
use landstrip_tray_core::serving::service::UiRequest;
use landstrip_tray_core::surfaces::bridge::{self, BridgeEnd};
use landstrip_tray_core::surfaces::control::{Client, ControlError, Reply, Request, Response};

use super::render::{json_of, project_state, render};
use super::{absolute, Cli, Ctl};

/// How long a reply may take (answering may write a policy file; nothing takes longer).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// If an instance already runs, hands it this start's `--project` directories (for its
/// current run only, as `--project` always is) and returns the exit code; None when this
/// process should start the app itself.
pub fn hand_off(socket: &Path, cli: &Cli) -> Option<ExitCode> {
    let runtime = match client_runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("landstrip-tray: {e}");
            return Some(ExitCode::FAILURE);
        }
    };
    runtime.block_on(async {
        let mut client = match Client::connect(socket).await {
            Ok(client) => client,
            Err(ControlError::NotRunning(_)) => return None,
            Err(e) => {
                // The app's own bind will say the same and run without the socket.
                eprintln!("landstrip-tray: cannot check for a running instance: {e}");
                return None;
            }
        };
        let pid = match ask(&mut client, &Request::Status).await {
            Ok(Reply::Status(status)) => status.pid.to_string(),
            Ok(_) => "?".to_owned(),
            Err(e) => {
                eprintln!("landstrip-tray: an instance is running but {e}");
                return Some(ExitCode::FAILURE);
            }
        };
        if cli.projects.is_empty() {
            // A launcher or desktop entry started us again: show the user the running app
            // (docs/ARCHITECTURE.md, the control socket).
            let show = Request::OpenSettings {
                show: UiRequest::Settings {
                    view: None,
                    project: None,
                },
            };
            return Some(match ask(&mut client, &show).await {
                Ok(_) => {
                    eprintln!(
                        "landstrip-tray is already running (pid {pid}); showed its settings window"
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("landstrip-tray is already running (pid {pid}); {e}");
                    ExitCode::SUCCESS
                }
            });
        }
        let mut code = ExitCode::SUCCESS;
        for dir in &cli.projects {
            let request = Request::AddProject {
                dir: absolute(dir),
                persist: false,
            };
            match ask(&mut client, &request).await {
                Ok(Reply::Project(info)) => eprintln!(
                    "landstrip-tray is already running (pid {pid}); handed it --project {}: {}",
                    dir.display(),
                    project_state(&info)
                ),
                Ok(_) => {}
                Err(e) => {
                    eprintln!(
                        "landstrip-tray is already running (pid {pid}); --project {}: {e}",
                        dir.display()
                    );
                    code = ExitCode::FAILURE;
                }
            }
        }
        Some(code)
    })
}

/// `landstrip-tray settings`: asks the running app to show its settings window; exit 1
/// with the reason when it is not running or has no window.
pub fn open_settings(socket: &Path, view: Option<String>, project: Option<PathBuf>) -> ExitCode {
    let request = Request::OpenSettings {
        show: UiRequest::Settings {
            view,
            project: project.as_deref().map(absolute),
        },
    };
    let result = client_runtime()
        .map_err(|e| e.to_string())
        .and_then(|runtime| {
            runtime.block_on(async {
                let mut client = Client::connect(socket).await.map_err(|e| e.to_string())?;
                ask(&mut client, &request).await
            })
        });
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("landstrip-tray settings: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a `ctl` command line against the running instance; returns the exit code.
pub fn run_ctl(ctl: Ctl, socket: &Path) -> ExitCode {
    let Ctl { request, json } = ctl;
    let wait = matches!(request, Request::Pending { wait: true });
    let runtime = match client_runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("landstrip-tray ctl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reply = runtime.block_on(async {
        let mut client = Client::connect(socket).await.map_err(|e| e.to_string())?;
        if wait {
            // Waiting for a request is what was asked: no bound but the caller's.
            ask_untimed(&mut client, &request).await
        } else {
            ask(&mut client, &request).await
        }
    });
    match reply {
        Ok(reply) => {
            if json {
                println!("{}", json_of(&reply));
            } else {
                print!("{}", render(&reply));
                if matches!(request, Request::AddProject { .. }) {
                    // The next step for a new project: connecting opencode (its version
                    // asked, bounded, so the matching set-up leads).
                    let installed = runtime.block_on(opencode_cli::detect_from_env());
                    print!("{}", installed.connect_hint());
                }
            }
            // An undo that left any path as it was says so in its status.
            match &reply {
                Reply::JournalUndone(outcomes)
                    if outcomes.iter().any(|o| o.outcome == UndoResult::Refused) =>
                {
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            }
        }
        Err(message) => {
            eprintln!("landstrip-tray ctl: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `ctl bridge`: serves a desktop's SSH link on stdin and stdout until stdin ends; exit 1
/// when it cannot serve (its first line said why).
pub fn run_bridge(socket: &Path) -> ExitCode {
    let runtime = match client_runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("landstrip-tray ctl bridge: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Standard input and output as files of tokio's (their reads and writes on its
    // blocking pool), from copies of the descriptors.
    use std::os::fd::AsFd;
    let files = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|input| Ok((input, std::io::stdout().as_fd().try_clone_to_owned()?)));
    let (input, output) = match files {
        Ok((input, output)) => (
            tokio::fs::File::from_std(std::fs::File::from(input)),
            tokio::fs::File::from_std(std::fs::File::from(output)),
        ),
        Err(e) => {
            eprintln!("landstrip-tray ctl bridge: {e}");
            return ExitCode::FAILURE;
        }
    };
    let home = match landstrip_tray_core::paths::AppPaths::from_env() {
        Ok(paths) => paths.home,
        Err(e) => {
            eprintln!("landstrip-tray ctl bridge: {e}");
            return ExitCode::FAILURE;
        }
    };
    let end = runtime.block_on(bridge::run(
        socket,
        &home,
        tokio::io::BufReader::new(input),
        output,
    ));
    // The stdin reader may sit in a blocking read: leave it behind.
    runtime.shutdown_background();
    match end {
        BridgeEnd::Done => ExitCode::SUCCESS,
        BridgeEnd::Failed => ExitCode::FAILURE,
    }
}

fn client_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Sends a request and waits (bounded) for its reply; an error reply is an error.
async fn ask(client: &mut Client, request: &Request) -> Result<Reply, String> {
    match tokio::time::timeout(REPLY_TIMEOUT, ask_untimed(client, request)).await {
        Ok(reply) => reply,
        Err(_) => Err(format!(
            "the running instance did not answer within {}s",
            REPLY_TIMEOUT.as_secs()
        )),
    }
}

async fn ask_untimed(client: &mut Client, request: &Request) -> Result<Reply, String> {
    match client.request(request).await {
        Ok(Response::Ok(reply)) => Ok(reply),
        Ok(Response::Error { message }) => Err(message),
        Err(e) => Err(e.to_string()),
    }
}
