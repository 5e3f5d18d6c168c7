//! Tauri glue only: the process entry, the tray, and the hand-off to the core.

mod cli;
mod commands;
mod control;
mod dialog;
mod notifications;
mod tray;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use landstrip_tray_core::activity::ActivityLog;
use landstrip_tray_core::broker::Broker;
use landstrip_tray_core::paths::AppPaths;
use landstrip_tray_core::service::Service;
use landstrip_tray_core::settings::SettingsFile;
use tauri::Manager;
use tokio::signal::unix::{signal, Signal, SignalKind};

pub use cli::{Cli, CliError};

/// The activity log's size bound before it rotates.
const ACTIVITY_MAX_BYTES: u64 = 8 << 20;

/// Runs the app; returns the process exit code.
pub fn run() -> ExitCode {
    // `ctl` is handled before anything else: no logging set-up, no Tauri, no display, so
    // it works over SSH. It needs no home directory either, only the runtime directory.
    let cli = match cli::parse(std::env::args().skip(1)) {
        Ok(cli::Invocation::Run(cli)) => cli,
        Ok(cli::Invocation::Ctl(ctl)) => {
            return control::run_ctl(ctl, &landstrip_tray_core::paths::control_socket_from_env())
        }
        Ok(cli::Invocation::Help) => {
            println!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(cli::Invocation::CtlHelp) => {
            println!("{}", cli::CTL_USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e @ CliError::Ctl(_)) => {
            eprintln!("landstrip-tray ctl: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("landstrip-tray: {e}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let paths = match AppPaths::from_env() {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("landstrip-tray: {e}");
            return ExitCode::FAILURE;
        }
    };
    // One instance per user: a running one takes this start's projects, and no display is
    // touched.
    if let Some(code) = control::hand_off(&paths.control_socket, &cli) {
        return code;
    }
    match start(cli, paths) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("landstrip-tray: {e}");
            ExitCode::FAILURE
        }
    }
}

fn start(cli: Cli, paths: AppPaths) -> Result<(), Box<dyn std::error::Error>> {
    let activity = match ActivityLog::open(&paths.activity_file(), ACTIVITY_MAX_BYTES) {
        Ok(log) => log,
        Err(e) => {
            tracing::warn!(
                "activity log {}: {e}; keeping it in memory only",
                paths.activity_file().display()
            );
            ActivityLog::in_memory()
        }
    };
    let broker = Broker::new(Arc::new(activity));
    let settings = SettingsFile::new(paths.settings_file());
    let saved = match settings.load() {
        Ok(saved) => saved,
        Err(e) => {
            tracing::error!("{e} (the settings file is left as it is)");
            Default::default()
        }
    };
    broker.set_prompt_timeout(saved.prompt_timeout_secs.map(Duration::from_secs));
    // Read again per run, so `summarizeDenials` applies without a restart.
    let notification_settings = settings.clone();

    let app = commands::register(tauri::Builder::default())
        .setup(move |app| {
            // Caught from before anything is published: a signal during start-up still
            // quits cleanly instead of killing us with our discovery files left behind.
            let signals = tauri::async_runtime::block_on(async { quit_signals() });
            let service = tauri::async_runtime::block_on(async {
                Service::start(
                    broker,
                    paths.home.clone(),
                    paths.discovery.clone(),
                    Some(settings),
                )
            });
            // Before any project is served: a run's first events are not missed.
            notifications::start(
                app.handle(),
                &service,
                paths.home.clone(),
                Some(notification_settings),
            );
            for dir in saved.projects.iter().chain(cli.projects.iter()) {
                let persist = false;
                if let Err(e) = tauri::async_runtime::block_on(service.add_project(dir, persist)) {
                    tracing::error!("cannot serve {}: {e}", dir.display());
                }
            }
            app.manage(service.clone());
            tray::install(app.handle(), &service)?;
            dialog::start(app.handle(), &service);
            control::serve(app.handle(), &service, &paths.control_socket);
            if let Some(signals) = signals {
                spawn_signal_handler(app.handle().clone(), service, signals);
            }
            Ok(())
        })
        .build(tauri::generate_context!())?;
    app.run(|app, event| match event {
        // A tray app lives on with no window open; only an explicit exit (code set) ends it.
        tauri::RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        tauri::RunEvent::Exit => control::remove_socket(app),
        _ => {}
    });
    Ok(())
}

/// Quits cleanly: every held query denied, discovery files removed, then exit.
pub fn quit(app: &tauri::AppHandle, service: &Service) {
    let app = app.clone();
    let service = service.clone();
    tauri::async_runtime::spawn(async move {
        service.shutdown().await;
        app.exit(0);
    });
}

/// SIGTERM and SIGINT streams; from this call on those signals no longer kill the process.
/// Must be called inside the tokio runtime.
fn quit_signals() -> Option<(Signal, Signal)> {
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => Some((term, int)),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!("cannot install signal handlers: {e}");
            None
        }
    }
}

fn spawn_signal_handler(app: tauri::AppHandle, service: Service, signals: (Signal, Signal)) {
    let (mut term, mut int) = signals;
    tauri::async_runtime::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: quitting"),
            _ = int.recv() => tracing::info!("SIGINT: quitting"),
        }
        service.shutdown().await;
        app.exit(0);
    });
}
