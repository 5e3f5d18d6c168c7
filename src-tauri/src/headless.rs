//! `landstrip-tray --headless`: the projects, the control socket and every rule, with no
//! GTK, no WebKit and no window — for SSH sessions, remote machines and containers where
//! agents run. Requests that need a person wait for `ctl pending --wait` / `ctl answer`,
//! or the prompt timeout. Nothing here touches Tauri.

use std::error::Error;

use landstrip_tray_core::paths::AppPaths;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::ControlServer;

use crate::boot::{self, quit_signals};
use crate::cli::Cli;

/// Serves until SIGTERM, SIGINT or SIGHUP, then denies what is held, removes the discovery
/// files and the control socket, and returns.
pub fn run(cli: Cli, paths: AppPaths) -> Result<(), Box<dyn Error>> {
    // Two workers, as Tauri's runtime has: the control socket, the policy and discovery
    // watches and the timeouts are all the async work there is.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("headless")
        .enable_all()
        .build()?;
    runtime.block_on(serve(cli, paths))
}

async fn serve(cli: Cli, paths: AppPaths) -> Result<(), Box<dyn Error>> {
    // Before anything is published: a signal during start-up still quits cleanly.
    let mut signals = quit_signals().ok_or("cannot catch SIGTERM, SIGINT and SIGHUP")?;
    let core = boot::open_core(&paths);
    let timeout = core.saved.prompt_timeout_secs;
    let service = Service::start(
        core.broker,
        paths.home.clone(),
        paths.discovery.clone(),
        Some(core.settings),
    );
    for dir in core.saved.projects.iter().chain(cli.projects.iter()) {
        if let Err(e) = service.add_project(dir, false).await {
            tracing::error!("cannot serve {}: {e}", dir.display());
        }
    }
    let socket = match ControlServer::bind(&paths.control_socket) {
        Ok(server) => {
            let file = server.socket_file();
            tokio::spawn(server.serve(service.clone()));
            tracing::info!("control socket at {}", paths.control_socket.display());
            Some(file)
        }
        Err(e) => {
            // Without the socket nobody could answer a request: every one would wait for
            // the timeout or the run's end. Quit rather than serve like that.
            service.shutdown().await;
            return Err(format!("headless mode needs its control socket: {e}").into());
        }
    };
    // The phone page, if it was left on.
    service.web().set_dir(paths.web_dir());
    landstrip_tray_core::surfaces::web::start_saved(&service).await;
    let waits = match timeout {
        Some(secs) => format!(", or are denied once after {secs} s (the prompt timeout)"),
        None => {
            " (no prompt timeout is set: they wait until answered or their run ends)".to_owned()
        }
    };
    tracing::info!(
        "headless: no windows, tray or notifications; requests that need a person wait for \
         `landstrip-tray ctl pending --wait` and `landstrip-tray ctl answer ID …`{waits}"
    );
    signals.recv().await;
    service.shutdown().await;
    if let Some(socket) = socket {
        socket.remove();
    }
    Ok(())
}
