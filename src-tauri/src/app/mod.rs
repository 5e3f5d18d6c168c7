//! Tauri glue only: the app's builder and start-up, the tray, notifications, the dialog,
//! the settings window and their commands, and the control socket's server side, each handing over to the core.
//! The command line and the `ctl` client are in `crate::cli`, outside this module.

mod blocking;
mod commands;
mod control;
mod dialog;
#[cfg(target_os = "linux")]
mod glib_bus;
mod idle;
mod notifications;
mod settings;
mod theme;
mod tray;
mod welcome;

use landstrip_tray_core::paths::AppPaths;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::first_run;
use tauri::{AppHandle, Manager, Runtime};

use crate::boot::{self, quit_signals, QuitSignals};
use crate::cli::Cli;

/// Starts the app on the desktop (Wry) and runs it until it quits.
pub fn start(cli: Cli, paths: AppPaths) -> Result<(), Box<dyn std::error::Error>> {
    // WebKit's memory pressure monitor (a thread of this process, started with the first
    // webview and kept for the app's life) wakes every few seconds: an idle tray app must
    // not. The app's webviews are small and destroyed when idle. Set before any thread
    // reads the environment; a value the user set is kept.
    if std::env::var_os("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR").is_none() {
        std::env::set_var("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR", "1");
    }
    // WebKit's accelerated compositing buys nothing for a few small forms and costs time
    // at every window's start: measured with it off, a prompt's window is on screen in
    // about half the time, cold and warmed (docs/BENCHMARKS.md, "Desktop"). Also the
    // usual fix for blank WebKitGTK windows on some GPU drivers. A value the user set is
    // kept.
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
    let app = builder::<tauri::Wry>(cli, paths).build(tauri::generate_context!())?;
    app.run(on_event);
    Ok(())
}

/// The app's builder, for any runtime: its commands, and a start-up that serves the
/// projects and puts up the tray, notifications, dialog and control socket.
pub fn builder<R: Runtime>(cli: Cli, paths: AppPaths) -> tauri::Builder<R> {
    let boot::Core {
        broker,
        settings,
        saved,
    } = boot::open_core(&paths);
    // Before anything could write it: no settings file yet is the first run.
    let first_run = welcome::is_first_run(&settings);
    let welcome_sources = first_run::Sources {
        given: cli.projects.clone(),
        current_dir: std::env::current_dir().ok(),
        // The checkout this binary was built from (the app crate is its `src-tauri/`) and
        // where it runs from: `scripts/run.sh` starts it in its own checkout.
        own: first_run::OwnDirs::find(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            std::env::current_exe().ok().as_deref(),
        ),
        home: paths.home.clone(),
        activity_file: paths.activity_file(),
        discovery: paths.discovery.clone(),
        opencode_data: paths.user_data_dir.join("opencode"),
    };
    let log_dir = LogDir(paths.log_dir.clone());
    // Read again per notification, so `summarizeDenials` and `notificationSound` apply
    // without a restart; the timeout is set on the broker by `ops::change_app_setting`.
    let notification_settings = settings.clone();

    // The settings window's folder pickers; capabilities/settings.json grants that window
    // `dialog:allow-open` and nothing else of the plugin.
    let builder = tauri::Builder::<R>::new().plugin(tauri_plugin_dialog::init());
    commands::register(builder).setup(move |app| {
        // Before anything could notice the bus going away.
        #[cfg(target_os = "linux")]
        glib_bus::survive_the_bus_going_away();
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
        app.manage(welcome::Welcome::new(welcome_sources));
        app.manage(log_dir);
        // Not fatal: notifications and the dialog carry every request without it.
        tray::start(app.handle(), &service);
        theme::follow(app.handle());
        dialog::start(app.handle(), &service);
        settings::start(app.handle(), &service);
        control::serve(app.handle(), &service, &paths.control_socket);
        // The phone page, if it was left on.
        service.web().set_dir(paths.web_dir());
        tauri::async_runtime::spawn({
            let service = service.clone();
            async move { landstrip_tray_core::surfaces::web::start_saved(&service).await }
        });
        if first_run {
            welcome::open(app.handle());
        }
        if let Some(signals) = signals {
            spawn_signal_handler(app.handle().clone(), service, signals);
        }
        Ok(())
    })
}

/// The run loop's events.
fn on_event<R: Runtime>(app: &AppHandle<R>, event: tauri::RunEvent) {
    match event {
        // A tray app lives on with no window open; only an explicit exit (code set) ends it.
        tauri::RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        tauri::RunEvent::Exit => {
            control::remove_socket(app);
            crate::logs::flush();
        }
        // Any window (settings, prompt): once none is left, their memory goes back.
        tauri::RunEvent::WindowEvent {
            event: tauri::WindowEvent::Destroyed,
            ..
        } => idle::window_destroyed(app),
        _ => {}
    }
}

/// The log directory, for the tray's "Open logs".
pub struct LogDir(pub std::path::PathBuf);

/// Quits cleanly: every held query denied, discovery files removed, then exit.
pub fn quit<R: Runtime>(app: &AppHandle<R>, service: &Service) {
    let app = app.clone();
    let service = service.clone();
    tauri::async_runtime::spawn(async move {
        service.shutdown().await;
        app.exit(0);
    });
}

fn spawn_signal_handler<R: Runtime>(app: AppHandle<R>, service: Service, mut signals: QuitSignals) {
    tauri::async_runtime::spawn(async move {
        signals.recv().await;
        service.shutdown().await;
        app.exit(0);
    });
}
