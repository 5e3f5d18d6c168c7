//! The welcome window's commands: which directories to offer, the doctor check and the
//! opencode version are the core's (`first_run`, `landstrip`, `opencode_cli`); adding a
//! project is the operations table's `add_project`, as in the settings window and `ctl`.
//! capabilities/welcome.json grants
//! these to the `welcome` window only.

use std::path::PathBuf;

use landstrip_tray_core::landstrip::{self, Doctor};
use landstrip_tray_core::lexical::AbsolutePath;
use landstrip_tray_core::opencode_cli::{self, Connect, Installed};
use landstrip_tray_core::serving::service::Service;
use landstrip_tray_core::surfaces::control::{Reply, Request};
use landstrip_tray_core::surfaces::first_run::{self, Offered};
use landstrip_tray_core::surfaces::ops::PluginWarning;
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime, State};

use super::super::welcome::{Welcome, LABEL};
use super::IpcError;

/// What the page shows first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeView {
    /// The directories offered, the current one first.
    offered: Vec<Offered>,
    /// The user's home, so the page can write `~/…`.
    home: String,
    /// Policy files holding fields the user's opencode-landstrip rejects (`ops::plugin_warnings`).
    plugin_warnings: Vec<PluginWarning>,
}

/// The directories to offer.
#[tauri::command]
pub async fn welcome_offered(
    welcome: State<'_, Welcome>,
    service: State<'_, Service>,
) -> Result<WelcomeView, IpcError> {
    let sources = welcome.sources.clone();
    let served_now: Vec<PathBuf> = service.list().into_iter().map(|p| p.dir).collect();
    let settings = service.settings_file().cloned();
    let home = service.home().display().to_string();
    let offered = super::super::blocking::on_blocking_pool(move || {
        // "Already served" means at every start: a `--project` directory served for this
        // run only is offered checked, so "Done" keeps it.
        let saved = settings
            .and_then(|s| s.load().ok())
            .map(|s| s.projects)
            .unwrap_or_default();
        let given: Vec<PathBuf> = sources
            .given
            .iter()
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .collect();
        let served: Vec<PathBuf> = served_now
            .into_iter()
            .filter(|d| saved.contains(d) || !given.contains(d))
            .collect();
        Ok::<_, std::convert::Infallible>(first_run::offered(&sources, &served))
    })
    .await?;
    let plugin_warnings = operation!(service, Request::PluginWarnings,
        Reply::PluginWarnings(w) => w)?;
    Ok(WelcomeView {
        offered,
        home,
        plugin_warnings,
    })
}

/// `landstrip doctor` with the landstrip the launcher would use.
#[tauri::command]
pub async fn welcome_doctor() -> Result<Doctor, IpcError> {
    Ok(landstrip::doctor_from_env().await)
}

/// How to connect the plugin: the opencode found on `PATH` and both set-ups, the
/// matching one first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectView {
    installed: Installed,
    connect: [Connect; 2],
}

/// Asks the opencode on `PATH` its version (bounded by
/// [`opencode_cli::VERSION_TIMEOUT`], on the async runtime, not the UI thread).
#[tauri::command]
pub async fn welcome_connect() -> Result<ConnectView, IpcError> {
    let installed = opencode_cli::detect_from_env().await;
    let connect = installed.connect();
    Ok(ConnectView { installed, connect })
}

/// One directory's outcome.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The directory as asked.
    dir: String,
    /// Why it could not be served, if it could not.
    error: Option<String>,
}

/// Serves each directory from now on and at every start (`ctl add-project`'s operation).
#[tauri::command]
pub async fn welcome_add(
    service: State<'_, Service>,
    dirs: Vec<String>,
) -> Result<Vec<Added>, IpcError> {
    let mut out = Vec::new();
    for dir in dirs {
        let error = match AbsolutePath::new(&dir) {
            Ok(path) => {
                let request = Request::AddProject {
                    dir: path.into_path_buf(),
                    persist: true,
                };
                let added: Result<(), IpcError> =
                    async { operation!(service, request, Reply::Project(_) => ()) }.await;
                added.err().map(|e| e.to_string())
            }
            Err(_) => Some(format!("{dir}: not a full path")),
        };
        out.push(Added { dir, error });
    }
    Ok(out)
}

/// "Done": closes the window (which writes the settings file, see [`remember`]).
#[tauri::command]
pub async fn welcome_done<R: Runtime>(app: AppHandle<R>) -> Result<(), IpcError> {
    match app.get_webview_window(LABEL) {
        Some(window) => window.close().map_err(|e| IpcError::Refused(e.to_string())),
        None => Ok(()),
    }
}
