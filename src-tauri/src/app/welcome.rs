//! The welcome window (label `welcome`), shown at the first start (no settings file yet)
//! and from the tray's "Welcome…": what the app does, project directories to serve, the
//! result of `landstrip doctor`, and how to connect the opencode plugin (its commands are in
//! `commands/welcome.rs`). Closing the window, by "Done" or the window manager, writes the
//! settings file, so it does not come back by itself.

use landstrip_tray_core::app_settings::SettingsFile;
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::first_run::Sources;
use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

/// The window's label.
pub const LABEL: &str = "welcome";

/// Where the offer is made from, kept in the app's state.
pub struct Welcome {
    pub(super) sources: Sources,
}

impl Welcome {
    /// The sources of the directories offered.
    pub fn new(sources: Sources) -> Self {
        Self { sources }
    }
}

/// Whether this start is the first: no settings file (not even a broken one or a link).
pub fn is_first_run(settings: &SettingsFile) -> bool {
    std::fs::symlink_metadata(settings.path()).is_err()
}

/// Whether the welcome window is open.
pub fn is_open<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(LABEL).is_some()
}

/// Brings the welcome window up, creating it if it is not open.
pub fn open<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    // Windows are made on the main thread.
    let queued = app.clone().run_on_main_thread(move || {
        if let Some(window) = app.get_webview_window(LABEL) {
            let _ = window.unminimize();
            let _ = window.show();
            let _ = window.set_focus();
            return;
        }
        let built = WebviewWindowBuilder::new(&app, LABEL, WebviewUrl::App("welcome.html".into()))
            .title("Welcome to landstrip-tray")
            .inner_size(720.0, 760.0)
            .min_inner_size(520.0, 480.0)
            .center()
            .build();
        match built {
            Ok(window) => {
                let app = app.clone();
                window.on_window_event(move |event| {
                    if let tauri::WindowEvent::Destroyed = event {
                        remember(&app);
                    }
                });
            }
            Err(e) => tracing::error!("cannot open the welcome window: {e}"),
        }
    });
    if let Err(e) = queued {
        tracing::error!("cannot open the welcome window: {e}");
    }
}

/// Writes the settings file if there is none yet, so the window is not shown again.
fn remember<R: Runtime>(app: &AppHandle<R>) {
    let Some(settings) = app
        .try_state::<Service>()
        .and_then(|s| s.settings_file().cloned())
    else {
        return;
    };
    tauri::async_runtime::spawn_blocking(move || {
        if is_first_run(&settings) {
            match settings.update(|_| {}) {
                Ok(_) => tracing::info!(
                    "welcome closed: {} written, it is not shown at start again",
                    settings.path().display()
                ),
                Err(e) => tracing::warn!("welcome closed: {e}"),
            }
        }
    });
}
